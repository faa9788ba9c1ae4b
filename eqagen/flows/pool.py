"""The run's workers, and the driver that keeps them busy from the first moment of a run.

A run's work does not wait for Prefect: :class:`RunDriver` starts every batch, in plan order, as soon as
the workers exist (while Prefect's server is still starting: 4-5 s of one core here), and the finish as
soon as the last batch is checkpointed. The Prefect flow (:mod:`eqagen.flows.generate`) records the same
units as task runs, each waiting for the driver's result of its unit, so a failure still fails its task
and the flow, and Prefect's bookkeeping runs beside the work instead of before it.

The workers (:class:`WorkerPool`), by runner:

- ``processes``: :class:`ForkedPool`, processes forked from the run once its imports are done, so they
  start warm (no import at all) and share those pages with it. Forking is safe here: the pool is made
  before the run starts any thread of its own (Prefect's, the driver's; the signal helper of
  :mod:`eqagen.flows.signals` waits in ``select`` holding nothing), its processes are all forked at once
  by the creating thread, and each worker replaces its standard streams (a progress bar's thread may
  have held their locks at that instant). A worker dies with the run (``PR_SET_PDEATHSIG``), ignores
  Ctrl-C from the moment it is forked (the run stops the pool), and takes SIGTERM's default action. What
  it inherits is frozen out of its garbage collector (``gc.freeze``), as Python advises for forked workers.
- ``dask``: a Dask cluster's workers behind ``distributed``'s executor (:mod:`eqagen.flows.runners`).
- ``local``: threads of the run's own process (one interpreter lock: for debugging, not for speed); the
  finish then runs in the run's process.

Every pool's executor is wrapped in a :class:`~eqagen.flows.timeline.TimedExecutor`: each unit is timed
where it runs, and the run's timeline tells its critical path and its serial time.
"""

from __future__ import annotations

import contextlib
import gc
import multiprocessing
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, ProcessPoolExecutor, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Any

from eqagen.config import PipelineConfig
from eqagen.flows import ask, pipeline, stages
from eqagen.flows.server import _die_with_parent
from eqagen.flows.timeline import TimedExecutor, Timeline

WINDOW_PER_WORKER = 2  # units in flight per worker: one running, one queued so no worker waits


def _init_worker(parent_pid: int) -> None:
    # Ctrl-C is the run's to handle (it stops the pool). The worker was forked with SIGINT blocked, so one
    # that arrived before this point is pending: ignoring it first, then unblocking, discards it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT})
    _die_with_parent(parent_pid)
    signal.signal(signal.SIGTERM, signal.SIG_DFL)  # the run's handler would turn it into a failed job
    sys.stdout = os.fdopen(os.dup(1), "w", buffering=1)
    sys.stderr = os.fdopen(os.dup(2), "w", buffering=1)
    # What the worker inherits (the run's imports: some 100,000 objects) lives as long as it does: out of the
    # cyclic collector's walks (Python's advice for forked workers), so a collection walks only what the units
    # made, and the inherited pages stay shared. Measured (gc callbacks, 100 tag-eqa episodes' programs):
    # collections took 3.0% of the unit's CPU, 1.7% with the freeze.
    gc.freeze()


class ForkedPool:
    """``workers`` processes forked now, in this thread, with the run's imports already done; an Executor."""

    def __init__(self, workers: int):
        self.workers = workers
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

    def close(self, cancel: bool) -> None:
        """Stop the workers: at once (``cancel``: an error, SIGTERM, Ctrl-C), else once idle."""
        if cancel:  # the executor has no public way to stop a running job
            self._kill_workers()
        self.executor.shutdown(wait=True, cancel_futures=True)

    def _kill_workers(self) -> None:
        """Terminate the workers and wait for them; then close this process's end of their result pipe.

        A worker killed halfway through sending a large result leaves the executor's manager thread reading
        bytes that never come: every writer's end must be closed before that read ends (EOF, so the pool is
        broken and shuts down). The workers' ends close with them; this process holds the last one."""
        processes = list(getattr(self.executor, "_processes", {}).values())
        for process in processes:
            with contextlib.suppress(Exception):
                process.terminate()
        for process in processes:
            process.join(timeout=10)
            if process.is_alive():
                process.kill()
                process.join()
        result_queue = getattr(self.executor, "_result_queue", None)
        if result_queue is not None:
            result_queue._writer.close()


@dataclass
class WorkerPool:
    """A run's workers: ``executor`` (timed) runs their units, ``workers`` of them at once; ``finish_on_workers``
    is false where they share the run's interpreter (threads), so the finish runs in the run's process."""

    executor: Executor
    workers: int
    timeline: Timeline
    finish_on_workers: bool
    close: Callable[[bool], None]  # close(cancel): stop the workers, at once when cancel

    @property
    def finish_executor(self) -> Executor | None:
        return self.executor if self.finish_on_workers else None


@contextlib.contextmanager
def worker_pool(executor: Executor, workers: int, timeline: Timeline, finish_on_workers: bool,
                close: Callable[[bool], None]) -> Iterator[WorkerPool]:  # fmt: skip
    """The pool for the block's duration: closed at once if the block fails, else once its units are done."""
    pool = WorkerPool(TimedExecutor(executor, timeline), workers, timeline, finish_on_workers, close)
    failed = True
    try:
        yield pool
        failed = False
    finally:
        pool.close(failed)


@contextlib.contextmanager
def forked_pool(workers: int, timeline: Timeline) -> Iterator[WorkerPool]:
    forked = ForkedPool(workers)
    with worker_pool(forked.executor, workers, timeline, True, forked.close) as pool:
        yield pool


@contextlib.contextmanager
def thread_pool(workers: int, timeline: Timeline) -> Iterator[WorkerPool]:
    threads = ThreadPoolExecutor(workers, thread_name_prefix="eqagen-batch")

    def close(cancel: bool) -> None:
        threads.shutdown(wait=True, cancel_futures=cancel)

    with worker_pool(threads, workers, timeline, False, close) as pool:
        yield pool


class RunDriver:
    """One run's work, from the moment :meth:`start` is called: the batches not checkpointed yet, in plan
    order, at most ``WINDOW_PER_WORKER`` per worker in flight (so checkpoints follow the workers and memory
    follows the window, not the dataset), then the finish. :meth:`batch` and :attr:`finished` are the
    futures the flow's tasks wait on."""

    def __init__(
        self,
        config: PipelineConfig,
        ctx: pipeline.RunContext,
        pool: WorkerPool,
        summary: pipeline.RunSummary,
        on_batch: Callable[[Any], None] | None = None,
    ):
        self.config, self.ctx, self.pool, self.summary = config, ctx, pool, summary
        self.on_batch = on_batch or (lambda batch: None)
        with pool.timeline.section("plan") as plan:
            self.batches = stages.plan_batches(config.generation, config.seed)
        summary.stage_seconds["plan"] = plan.seconds
        self.names = [b.name for b in self.batches]
        self.resumed = ctx.store.done(self.names)
        self.todo = [b for b in self.batches if b.name not in self.resumed]
        summary.batches_total, summary.batches_resumed = len(self.batches), len(self.resumed)
        self._futures: dict[str, Future] = {b.name: Future() for b in self.todo}
        self.plan_inputs = ask.PlanInputs()  # folded in batch by batch while later batches run
        self.finished: Future = Future()
        self._stopped = threading.Event()
        self._thread = threading.Thread(target=self._run, name="eqagen-driver", daemon=True)

    def start(self) -> RunDriver:
        self._thread.start()
        return self

    def batch(self, name: str) -> Future:
        return self._futures[name]

    def stop(self) -> None:
        """Start nothing more (the run is ending early: an error, SIGTERM, Ctrl-C)."""
        self._stopped.set()

    def _run(self) -> None:
        try:
            self._run_batches()
            self.pool.timeline.barrier()  # the finish needs every batch
            executor = self.pool.finish_executor
            summary = pipeline.finish(
                self.config, self.ctx, self.names, self.summary, executor, self.pool.timeline, self.plan_inputs
            )
            self.finished.set_result(summary)
        except BaseException as error:
            self.stop()
            for future in [*self._futures.values(), self.finished]:
                if not future.done():
                    future.set_exception(error)

    def _run_batches(self) -> None:
        """Submit from this thread only (a Dask client's callbacks run on its event loop, where submitting
        again is not allowed), refilling the window as batches finish."""
        window = max(2, WINDOW_PER_WORKER * self.pool.workers)
        queue = iter(self.todo)
        running: dict[Future, stages.Batch] = {}

        def refill() -> None:
            while len(running) < window and not self._stopped.is_set() and (batch := next(queue, None)):
                running[self.pool.executor.submit(pipeline.run_batch, self.ctx, batch)] = batch

        refill()
        while running:
            done, _ = wait(list(running), return_when=FIRST_COMPLETED)
            for future in done:
                batch = running.pop(future)
                result = future.result()  # a failed batch fails the run, its error first
                pipeline.add_batch_seconds(self.summary.stage_seconds, result)
                self._futures[batch.name].set_result(result)
                self.on_batch(batch)
            refill()
            self._fold_plan_inputs()
        if self._stopped.is_set():
            raise RuntimeError("the run was stopped")

    def _fold_plan_inputs(self) -> None:
        """Fold the ask plan's inputs of every batch checkpointed so far that follows, in plan order, those
        already folded in (the run's process is otherwise idle while the workers run batches)."""
        inputs = self.plan_inputs
        while inputs.batches < len(self.names) and self._is_checkpointed(self.names[inputs.batches]):
            (tables,) = ask.read_batches_plan_tables([self.ctx.store.path(self.names[inputs.batches])])
            inputs.add(*tables)

    def _is_checkpointed(self, name: str) -> bool:
        future = self._futures.get(name)
        return future.done() if future is not None else name in self.resumed
