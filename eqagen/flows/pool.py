"""The ``processes`` runner's worker processes: forked from the run once its imports are done, and fed
batches from that moment on, while Prefect's server is still starting.

Prefect's own ``ProcessPoolTaskRunner`` spawns its workers when the flow submits its first task, that is
after the server answers, and each spawned worker imports Prefect and eqagen again (about 3.5 s of CPU
each here) before its first batch; a Prefect task run inside a worker process also keeps an API client
and an events worker of its own there. Here instead:

- the workers are forked from the run's process after it has imported everything a batch needs, so they
  start warm (no import at all) and share those pages with it;
- they start on the first batches at once, in plan order, while the server boots (5-6 s of one core
  here), one batch per worker, each finished one starting the next, until the flow takes over
  (:meth:`BatchPool.hand_over`);
- the flow's Prefect tasks (one per batch, in a thread pool in the run's process) hand their batch to
  the pool and wait for its small summary; a task whose batch already started early waits for that run
  instead of starting another. So every batch is still one Prefect task run, and the Prefect traffic stays
  in the run's process.

Forking is safe here: the pool is made before the flow starts Prefect's threads, its processes are all
forked at once by the creating thread, and each worker replaces its standard streams (a progress bar's
thread may have held their locks at that instant). A worker dies with the run (``PR_SET_PDEATHSIG``),
ignores Ctrl-C from the moment it is forked (the run stops the pool), and takes SIGTERM's default action.
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import signal
import sys
import threading
from collections import deque
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from typing import Any

from eqagen.flows import pipeline, stages
from eqagen.flows.server import _die_with_parent

_ACTIVE: list[BatchPool] = []  # the pool of the run in progress in this process (at most one)


def active_pool() -> BatchPool | None:
    return _ACTIVE[-1] if _ACTIVE else None


def _init_worker(parent_pid: int) -> None:
    # Ctrl-C is the run's to handle (it stops the pool). The worker was forked with SIGINT blocked, so one
    # that arrived before this point is pending: ignoring it first, then unblocking, discards it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the run's handler would turn it into a failed job
    sys.stdout = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stderr = os.fdopen(os.dup(2), "w", buffering=1)


class BatchPool:
    """``workers`` processes forked now; :meth:`start_early` feeds them batches until :meth:`hand_over`,
    :meth:`run` runs (or waits for) one batch."""

    def __init__(self, workers: int):
        self.workers = workers
        self.resumed: set[str] = set()  # batches checkpointed before this run started
        self._started: dict[str, tuple[pipeline.RunContext, stages.Batch, Future]] = {}
        self._pending: deque[stages.Batch] = deque()
        self._ctx: pipeline.RunContext | None = None
        self._lock = threading.Lock()
        for stream in (sys.stdout, sys.stderr):  # else a child could write the parent's buffered text again
            with contextlib.suppress(Exception):
                stream.flush()
        # SIGINT blocked while forking: a worker must not die of a Ctrl-C that arrives before its initializer
        # ignores it (blocked here, a signal for the run waits until the mask is restored)
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
        try:
            self.executor = ProcessPoolExecutor(
                workers,
                mp_context=multiprocessing.get_context("fork"),
                initializer=_init_worker,
                initargs=(os.getpid(),),
            )
            self.executor.submit(os.getpid)  # the first submission forks every worker, here in this thread
        finally:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)

    @property
    def early_batches(self) -> list[str]:
        with self._lock:
            return list(self._started)

    def start_early(self, ctx: pipeline.RunContext, batches: list[stages.Batch]) -> None:
        """Note which batches an earlier run finished, then start the first others, one per worker."""
        self._ctx = ctx
        self.resumed = ctx.store.done([b.name for b in batches])
        with self._lock:
            self._pending = deque(b for b in batches if b.name not in self.resumed)
        for _ in range(self.workers):
            self._start_next()

    def _start_next(self) -> None:
        with self._lock:
            if not self._pending or self._ctx is None:
                return
            batch = self._pending.popleft()
            future = self.executor.submit(pipeline.run_batch, self._ctx, batch)
            self._started[batch.name] = (self._ctx, batch, future)
        future.add_done_callback(self._early_batch_done)

    def _early_batch_done(self, future: Future) -> None:
        if not future.cancelled() and future.exception() is None:
            self._start_next()

    def hand_over(self) -> None:
        """The flow takes over: no further batch starts early (those started run to their end)."""
        with self._lock:
            self._pending.clear()

    def run(self, ctx: pipeline.RunContext, batch: stages.Batch) -> dict[str, Any]:
        """The summary of ``batch``: from its early run if it had one, else from a run started now."""
        with self._lock:
            early = self._started.get(batch.name)
            if early is None or early[:2] != (ctx, batch):
                early = None
                self._pending.clear()
        future = early[2] if early else self.executor.submit(pipeline.run_batch, ctx, batch)
        return future.result()

    def submit(self, fn: Any, /, *args: Any) -> Future:
        """Run ``fn(*args)`` on a worker: other CPU-bound work of the run (e.g. the dataset-level stages,
        when the workers are idle) can use these warm processes instead of spawning new ones."""
        return self.executor.submit(fn, *args)

    def close(self, cancel: bool) -> None:
        """Stop the workers: at once (``cancel``: an error, SIGTERM, Ctrl-C), else once idle."""
        self.hand_over()
        if cancel:  # the executor has no public way to stop a running job
            for process in list(getattr(self.executor, "_processes", {}).values()):
                with contextlib.suppress(Exception):
                    process.terminate()
        self.executor.shutdown(wait=True, cancel_futures=True)


@contextlib.contextmanager
def batch_pool(workers: int) -> Iterator[BatchPool]:
    """The pool for the block's duration, found by :func:`active_pool` in this process."""
    pool = BatchPool(workers)
    _ACTIVE.append(pool)
    failed = True
    try:
        yield pool
        failed = False
    finally:
        _ACTIVE.remove(pool)
        pool.close(cancel=failed)
