"""Task runners: where the batched units run (a thread pool, a process pool, or a Dask cluster).

Dask (``--runner dask``, the ``dask`` extra): the flow stays in this process and sends its batch tasks
to a Dask cluster through prefect-dask's ``DaskTaskRunner`` -- an existing one (``--address
tcp://HOST:PORT``) or a local one of ``runner.workers`` processes started for the run.

- One Prefect task per batch: episodes, programs and the batch's checkpoint in one go on one worker,
  returning only a small summary. Each Prefect task on Dask costs about 85 ms of orchestration
  (task-run creation and state changes through the API, plus Dask's own scheduling), so a task must
  carry seconds of work: a batch of tens of episodes does (20-50 episodes take 5-20 s here), and no
  episode ever travels between workers or back to the flow.
- Every worker talks to the one Prefect API server the run started: prefect-dask ships the flow's
  settings context (``PREFECT_API_URL`` included) with every task, and :class:`SharedPrefectApi` puts
  the URL into each worker's environment too, so no worker starts a server of its own. The server
  listens on 127.0.0.1; :func:`api_host` says which address it would need for workers on other
  machines (not yet used by the server: see docs/robustness.md).
- Every Prefect runner (threads, processes, Dask) uses these whole-batch tasks with at most
  ``WINDOW_PER_WORKER`` per worker in flight (:func:`run_batches_whole`).
- Workers write the checkpoints themselves, so they must see the output directory at the same path
  (a shared file system for a multi-machine cluster; always true for a local one and on 127.0.0.1).

The output does not depend on the runner: every unit is deterministic in its inputs, batches are
checkpointed under their own names and the finish reads them in plan order.
"""

from __future__ import annotations

import ipaddress
import os
import socket
from collections.abc import Callable
from typing import Any
from urllib.parse import urlparse

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.futures import as_completed

from eqagen.core import ConfigError
from eqagen.flows import pipeline, stages

LOOPBACK = "127.0.0.1"
WINDOW_PER_WORKER = 2  # tasks in flight per worker: one running, one queued so no worker waits


@task(name="sample-batch", cache_policy=NO_CACHE, persist_result=False, retries=0)
def batch_task(ctx: pipeline.RunContext, batch: stages.Batch) -> dict[str, Any]:
    """Episodes, programs and the checkpoint of one batch; only the small summary goes back."""
    return pipeline.run_batch(ctx, batch)


def scheduler_host(address: str) -> str:
    """The host of a Dask scheduler address such as ``tcp://10.0.0.5:8786`` (a ConfigError if malformed)."""
    parsed = urlparse(address if "://" in address else f"tcp://{address}")
    try:
        port = parsed.port
    except ValueError:
        port = None
    if parsed.scheme not in ("tcp", "tls", "ucx", "inproc") or not parsed.hostname or port is None:
        raise ConfigError("runner.address", f"'{address}' is not a Dask scheduler address", "tcp://HOST:PORT")
    return parsed.hostname


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def api_host(runner: Any) -> str:
    """Where the run's Prefect API server must listen so that every worker reaches it: the loopback
    interface for local runners and a cluster on this machine, else this machine's address on the route
    to the scheduler (found by connecting a UDP socket, which sends nothing)."""
    if runner.kind != "dask" or not runner.address:
        return LOOPBACK
    host = scheduler_host(runner.address)
    if is_loopback(host):
        return LOOPBACK
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect((host, 9))
        except OSError as err:
            raise ConfigError("runner.address", f"cannot route to the scheduler host '{host}' ({err})") from None
        return str(s.getsockname()[0])


def dask_task_runner(runner: Any) -> Any:
    """prefect-dask's runner on the cluster at ``runner.address``, or on a local cluster of ``workers``
    single-threaded processes (the work is pure Python: threads would share one interpreter lock)."""
    try:
        from prefect_dask import DaskTaskRunner
    except ImportError:
        raise ConfigError(
            "runner.kind", "'dask' needs prefect-dask and distributed", "pip install 'eqagen[dask]'"
        ) from None
    if runner.address:
        scheduler_host(runner.address)  # a clear error before any connection attempt
        return DaskTaskRunner(address=runner.address)
    return DaskTaskRunner(cluster_kwargs={"n_workers": runner.workers, "threads_per_worker": 1, "processes": True})


# Settings every worker process needs in its environment, not only in the settings context that comes with
# each task: Prefect's events worker, started lazily in a worker, spawns a hidden API server of its own
# whenever it finds no API URL (at interpreter exit, for instance).
SHARED_SETTINGS = (
    "PREFECT_API_URL",
    "PREFECT_SERVER_ALLOW_EPHEMERAL_MODE",
    "PREFECT_LOGGING_TO_API_ENABLED",
    "PREFECT_RESULTS_PERSIST_BY_DEFAULT",
)


class SharedPrefectApi:
    """A Dask worker plugin that points every worker, present and joining later, at the run's API."""

    name = "eqagen-prefect-api"

    def __init__(self, env: dict[str, str]):
        self.env = env

    def setup(self, worker: Any) -> None:
        os.environ.update(self.env)

    def teardown(self, worker: Any) -> None:
        return None


def share_api_with_workers() -> int:
    """Register :class:`SharedPrefectApi` on the cluster of the current flow's Dask task runner; returns
    the number of workers."""
    from distributed.diagnostics.plugin import WorkerPlugin

    env = {k: os.environ[k] for k in SHARED_SETTINGS if k in os.environ}
    runner = FlowRunContext.get().task_runner  # type: ignore[union-attr]
    plugin = type("SharedPrefectApiPlugin", (SharedPrefectApi, WorkerPlugin), {})(env)
    runner.client.register_plugin(plugin, name=SharedPrefectApi.name)
    return len(runner.client.scheduler_info().get("workers", {}))


def run_batches_whole(
    ctx: pipeline.RunContext,
    todo: list[stages.Batch],
    summary: pipeline.RunSummary,
    on_batch: Callable,
    runner: Any,
) -> None:
    """One task per batch, summaries as they finish, at most ``WINDOW_PER_WORKER`` tasks per worker in flight.

    Whole-batch tasks: nothing large crosses a process or the network (the task returns a small summary).
    The window: submitting every batch at once makes a thread or process pool run every batch's first
    stage before any batch's second (it is first in, first out), so no checkpoint is written until all
    episodes exist and all of them sit in memory; and the flow's own memory (task runs, futures, their
    states) grows with the dataset instead of the number of workers."""
    n_workers = share_api_with_workers() if runner.kind == "dask" else runner.workers
    window = max(2, WINDOW_PER_WORKER * n_workers)
    queue = iter(todo)
    running: set[Any] = set()
    while True:
        while len(running) < window and (batch := next(queue, None)) is not None:
            running.add(batch_task.submit(ctx, batch))
        if not running:
            return
        fut = next(as_completed(list(running)))
        running.discard(fut)
        pipeline.add_batch_seconds(summary.stage_seconds, fut.result())
        on_batch(None)
