"""Task runners: where the batched units run (a thread pool, the run's worker processes, or a Dask cluster).

- ``local``: Prefect's thread pool runs each batch in this process.
- ``processes``: Prefect's thread pool hands each batch to worker processes forked from this one
  (:mod:`eqagen.flows.pool`), which start on the first batches while the Prefect server is starting.
- ``dask`` (the ``dask`` extra): the flow stays in this process and sends its batch tasks to a Dask
  cluster through prefect-dask's ``DaskTaskRunner`` -- an existing one (``--address tcp://HOST:PORT``)
  or a local one of ``runner.workers`` processes started for the run.

- One Prefect task per batch: episodes, programs and the batch's checkpoint in one go on one worker,
  returning only a small summary. Each Prefect task on Dask costs about 85 ms of orchestration
  (task-run creation and state changes through the API, plus Dask's own scheduling), so a task must
  carry seconds of work: a batch of tens of episodes does (20-50 episodes take 5-20 s here), and no
  episode ever travels between workers or back to the flow.
- Every worker talks to the one Prefect API server the run started: prefect-dask ships the flow's
  settings context (``PREFECT_API_URL`` included) with every task, and :class:`SharedPrefectApi` puts
  the URL into each worker's environment too, so no worker starts a server of its own. The server
  listens where the workers reach it (:func:`eqagen.flows.server.api_host`: 127.0.0.1 for a cluster on
  this machine, else the address on the route to the scheduler, or ``--api-host``).
- Every Prefect runner (threads, processes, Dask) uses these whole-batch tasks with at most
  ``WINDOW_PER_WORKER`` per worker in flight (:func:`run_batches_whole`).
- Workers write the checkpoints themselves, so they must see the output directory at the same path
  (a shared file system for a multi-machine cluster; always true for a local one). For an existing
  cluster this is checked before any batch runs (:func:`check_shared_directory`).

The output does not depend on the runner: every unit is deterministic in its inputs, batches are
checkpointed under their own names and the finish reads them in plan order.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefect import task
from prefect.cache_policies import NO_CACHE
from prefect.context import FlowRunContext
from prefect.futures import as_completed

from eqagen.config import RunnerConfig
from eqagen.core import ConfigError, DataFileError
from eqagen.flows import pipeline, stages
from eqagen.flows.pool import active_pool
from eqagen.flows.server import api_host, scheduler_host  # noqa: F401  (where the API listens)

WINDOW_PER_WORKER = 2  # tasks in flight per worker: one running, one queued so no worker waits


@task(name="sample-batch", cache_policy=NO_CACHE, persist_result=False, retries=0)
def batch_task(ctx: pipeline.RunContext, batch: stages.Batch) -> dict[str, Any]:
    """Episodes, programs and the checkpoint of one batch; only the small summary goes back. With the
    ``processes`` runner the batch runs in the run's worker processes (:mod:`eqagen.flows.pool`)."""
    pool = active_pool()  # None on a Dask worker and with the thread runner
    return pool.run(ctx, batch) if pool else pipeline.run_batch(ctx, batch)


def dask_task_runner(runner: RunnerConfig) -> Any:
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


def share_api_with_workers(client: Any) -> int:
    """Register :class:`SharedPrefectApi` on the cluster of ``client``; returns the number of workers."""
    from distributed.diagnostics.plugin import WorkerPlugin

    env = {k: os.environ[k] for k in SHARED_SETTINGS if k in os.environ}
    plugin = type("SharedPrefectApiPlugin", (SharedPrefectApi, WorkerPlugin), {})(env)
    client.register_plugin(plugin, name=SharedPrefectApi.name)
    return len(client.scheduler_info().get("workers", {}))


# --- the checkpoint directory must be one directory for the run and every worker --------------------

CONNECT_TIMEOUT_S = 30
SHARED_DIRECTORY_FIX = (
    "put --out on a file system that every Dask worker mounts at the same path as this machine (NFS, Lustre, "
    "a cluster home directory), or start the workers on this machine"
)


def token_file(directory: Path, token: str) -> Path:
    return Path(directory) / f".shared-check-{token}"


def worker_view(directory: str, token: str) -> str | None:
    """Run on a worker: None when it sees the run's token file in ``directory`` (so the same directory, not
    merely the same path on another disk) and can write there; else what it sees instead."""
    where = Path(directory)
    if not where.is_dir():
        return "has no such directory"
    try:
        seen = token_file(where, token).read_text()
    except OSError as err:
        return f"sees the path but not the run's files in it ({err.strerror}): another file system there"
    if seen != token:
        return "sees another file under the run's token name"
    probe = where / f".shared-check-{token}-{socket.gethostname()}-{os.getpid()}"
    try:
        probe.write_text(token)
        probe.unlink()
    except OSError as err:
        return f"cannot write there ({err.strerror})"
    return None


def check_shared_directory(directory: Path, run_on_workers: Callable[..., dict[str, str | None]]) -> int:
    """Fail before any batch runs unless every worker sees and can write ``directory``, where the batches'
    checkpoints go. ``run_on_workers(fn, *args)`` runs ``fn`` on every worker (``distributed.Client.run``)
    and returns its results by worker. Returns the number of workers checked."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    token = uuid.uuid4().hex
    marker = token_file(directory, token)
    marker.write_text(token)
    try:
        views = run_on_workers(worker_view, str(directory), token)
    finally:
        marker.unlink(missing_ok=True)
    problems = [f"worker {worker} {problem}" for worker, problem in sorted(views.items()) if problem]
    if problems:
        problem = "the run's checkpoint directory is not shared with every Dask worker: " + "; ".join(problems)
        raise DataFileError(directory, None, problem, SHARED_DIRECTORY_FIX)
    return len(views)


def check_cluster_shares(address: str, directory: Path) -> int:
    """Before the run starts: connect to the scheduler at ``address`` and check that every worker shares
    ``directory`` (:func:`check_shared_directory`); returns the number of workers."""
    from distributed import Client

    try:
        client = Client(address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError) as err:
        raise ConfigError(
            "runner.address", f"cannot connect to the Dask scheduler at {address} ({err})",
            "the address of a running scheduler, e.g. tcp://10.0.0.5:8786",
        ) from None  # fmt: skip
    with client:
        return check_shared_directory(directory, client.run)


def share_api_with_flow_workers() -> int:
    """Point every worker of the current flow's Dask cluster at the run's API; returns the number of workers."""
    return share_api_with_workers(FlowRunContext.get().task_runner.client)  # type: ignore[union-attr]


def run_batches_whole(
    ctx: pipeline.RunContext,
    todo: list[stages.Batch],
    summary: pipeline.RunSummary,
    on_batch: Callable,
    runner: RunnerConfig,
) -> None:
    """One task per batch, summaries as they finish, at most ``WINDOW_PER_WORKER`` tasks per worker in flight.

    Whole-batch tasks: nothing large crosses a process or the network (the task returns a small summary).
    The window: submitting every batch at once makes a thread or process pool run every batch's first
    stage before any batch's second (it is first in, first out), so no checkpoint is written until all
    episodes exist and all of them sit in memory; and the flow's own memory (task runs, futures, their
    states) grows with the dataset instead of the number of workers."""
    n_workers = share_api_with_flow_workers() if runner.kind == "dask" else runner.workers
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
