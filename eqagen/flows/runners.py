"""Runners: which workers run a generate run's units (see :mod:`eqagen.flows.pool` for how they are fed).

- ``processes``: processes forked from the run once its imports are done (:func:`eqagen.flows.pool.forked_pool`).
- ``dask`` (the ``dask`` extra): the workers of a Dask cluster, through ``distributed``'s executor: an
  existing cluster (``--address tcp://HOST:PORT``), or a local one of ``runner.workers`` single-threaded
  worker processes started for the run (:func:`dask_pool`).
- ``local``: threads of the run's own process (:func:`eqagen.flows.pool.thread_pool`).
- ``inline`` (no Prefect) is not a pool: :func:`eqagen.flows.pipeline.generate_inline`.

Every runner runs the same units, module-level functions of small arguments (a batch, one batch's share of
an ask round, a shard), and no unit talks to Prefect: the run's Prefect flow records them from the run's
own process (:mod:`eqagen.flows.generate`), so Dask workers need no route to the run's Prefect API, and
its server listens on 127.0.0.1 only.

Workers read the checkpoints and write checkpoints and shards themselves, so they must see the output
directory at the same path (a shared file system for a multi-machine cluster; always true for a local
one). For an existing cluster this is checked before any unit runs (:func:`check_shared_directory`).

The output does not depend on the runner: every unit is deterministic in its inputs, batches are
checkpointed under their own names and the finish reads them in plan order.
"""

from __future__ import annotations

import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from eqagen.config import RunnerConfig
from eqagen.core import ConfigError, DataFileError
from eqagen.flows.pool import WorkerPool, forked_pool, thread_pool, worker_pool
from eqagen.flows.server import scheduler_host
from eqagen.flows.timeline import Timeline

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
    """Fail before any unit runs unless every worker sees and can write ``directory``, where the batches'
    checkpoints go (the staged shards the workers write are beside it, in the same output directory).
    ``run_on_workers(fn, *args)`` runs ``fn`` on every worker (``distributed.Client.run``) and returns its
    results by worker. Returns the number of workers checked."""
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


# A local cluster for the run, as lean as the processes runner's pool (tag-eqa on 2 workers here: 15% slower
# than the processes runner with Dask's defaults, 7% with these):
# - workers forked, as the processes runner's are: warm, with the run's imports done (spawned ones take 3 s
#   to start here, and each imports eqagen again before its first unit);
# - no statistical profiler sampling every worker's stack each 10 ms (it feeds a dashboard eqagen does not start);
# - no work stealing: the driver keeps two units per worker in flight already, and the scheduler's stealing
#   bookkeeping runs in the run's own process;
# - the nannies look at their worker's memory each second, not ten times a second;
# - each worker's event loop wakes once a second to check that it is not blocked (the "tick", every 20 ms by
#   default) and samples the host's CPU, memory and network every 5 s (every 0.5 s by default: for a
#   dashboard): each wake takes the interpreter lock from the unit running on the worker's other thread.
#   A tag-eqa run's units took 123-130 s in all on Dask workers with the defaults, 113-118 s with these, and
#   108-112 s on the processes runner's (2 workers, this 2-core machine).
LOCAL_CLUSTER_SETTINGS = {
    "distributed.worker.multiprocessing-method": "fork",
    "distributed.worker.profile.enabled": False,
    "distributed.scheduler.work-stealing": False,
    "distributed.worker.memory.monitor-interval": "1s",
    "distributed.admin.tick.interval": "1s",
    "distributed.admin.system-monitor.interval": "5s",
}


# --- the pools ------------------------------------------------------------------------------------


def open_pool(
    runner: RunnerConfig, store_root: Path, timeline: Timeline
) -> contextlib.AbstractContextManager[WorkerPool]:
    """The run's workers for ``runner.kind`` (``processes``, ``dask`` or ``local``)."""
    if runner.kind == "processes":
        return forked_pool(runner.workers, timeline)
    if runner.kind == "dask":
        return dask_pool(runner, store_root, timeline)
    if runner.kind == "local":
        return thread_pool(runner.workers, timeline)
    raise ValueError(f"runner '{runner.kind}' has no workers of its own")


def dask_client(runner: RunnerConfig) -> Any:
    """A ``distributed`` client: of the cluster at ``runner.address``, or of a local cluster of ``runner.workers``
    single-threaded worker processes (the work is pure Python: threads would share one interpreter lock)."""
    try:
        import dask
        from distributed import Client, LocalCluster
    except ImportError:
        raise ConfigError("runner.kind", "'dask' needs distributed", "pip install 'eqagen[dask]'") from None
    if not runner.address:
        with dask.config.set(LOCAL_CLUSTER_SETTINGS):
            cluster = LocalCluster(
                n_workers=runner.workers, threads_per_worker=1, processes=True, dashboard_address=None,
                silence_logs=logging.ERROR,
            )  # fmt: skip
        return Client(cluster)
    scheduler_host(runner.address)  # a clear error before any connection attempt
    try:
        return Client(runner.address, timeout=CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError) as err:
        raise ConfigError(
            "runner.address", f"cannot connect to the Dask scheduler at {runner.address} ({err})",
            "the address of a running scheduler, e.g. tcp://10.0.0.5:8786",
        ) from None  # fmt: skip


@contextlib.contextmanager
def dask_pool(runner: RunnerConfig, store_root: Path, timeline: Timeline) -> Iterator[WorkerPool]:
    """The Dask cluster's workers as the run's pool; for an existing cluster, only once every worker has been
    seen to share the run's checkpoint directory."""
    client = dask_client(runner)
    cluster = None if runner.address else client.cluster  # an existing cluster is not ours to close

    def close(cancel: bool) -> None:
        if cancel:
            client.cancel(list(client.futures.values()), force=True)
        client.close()
        if cluster is not None:
            cluster.close()

    try:
        if runner.address:
            check_shared_directory(store_root, client.run)
        # the run's width: one unit per worker thread (a worker started with --nthreads 4 runs four at once)
        workers = sum(client.nthreads().values()) if runner.address else runner.workers
    except BaseException:
        close(True)
        raise
    with worker_pool(client.get_executor(pure=False), workers, timeline, True, close) as pool:
        yield pool
