"""A generate run with Prefect: the workers and the work first, Prefect beside them.

Order matters for the critical path: the run launches Prefect's server (a process of its own), forks its
workers and starts the work (:class:`~eqagen.flows.pool.RunDriver`) before it imports Prefect itself (about
a second here), then records the work as the flow's task runs (:func:`eqagen.flows.generate.record_run`)
once the server answers. This module imports no Prefect at load time for that reason.
"""

from __future__ import annotations

import contextlib
import errno
import os
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from eqagen.config import PipelineConfig
from eqagen.flows import pipeline, runners
from eqagen.flows.pool import RunDriver
from eqagen.flows.server import LocalPrefectServer, sigterm_as_exit
from eqagen.flows.timeline import SectionListener, Timeline
from eqagen.paraphrase.stage import check_paraphrase_endpoint

T = TypeVar("T")


FLOW_END_TIMEOUT_S = 10.0  # for the flow to record its end once the run stops early (it takes milliseconds)


class FlowThread:
    """Runs Prefect's flow in a thread of its own while the run's thread waits for its result.

    Prefect's flow engine, run in the main thread, installs a SIGTERM handler of its own for the flow's
    duration, and what a SIGTERM then did depended on where it landed: it ended the run (143), crashed a
    serializer (exit 1), or was swallowed while the run went on to the end (exit 0); all three were seen.
    Off the main thread Prefect installs none, so a SIGTERM or a Ctrl-C reaches the run's thread, which only
    waits: the run stops its driver and its workers, the flow's tasks fail with the driver's error, and the
    flow records its end before the server stops (:meth:`join`). A daemon thread, not a ``ThreadPoolExecutor``'s
    (which the interpreter joins at exit): a flow still talking to a stopped server must not hold up the exit."""

    def __init__(self) -> None:
        self._thread: threading.Thread | None = None

    def run(self, call: Callable[..., T], *args: Any) -> T:
        result: Future = Future()

        def target() -> None:
            try:
                result.set_result(call(*args))
            except BaseException as error:
                result.set_exception(error)

        self._thread = threading.Thread(target=target, name="eqagen-prefect-flow", daemon=True)
        self._thread.start()
        return result.result()

    def join(self, timeout: float) -> None:
        if self._thread is not None:
            self._thread.join(timeout)


MIN_FREE_BYTES = 1 << 20  # below this, a failed run is taken to have failed on a full disk


@contextlib.contextmanager
def full_disk_said(out_dir: Path) -> Iterator[None]:
    """A run that fails while ``out_dir``'s file system has less than :data:`MIN_FREE_BYTES` free ends with
    the OSError it is (exit 2, "No space left on device"). The Prefect server's SQLite write fails there
    first, and Prefect's client reports it only as a 500 (PrefectHTTPStatusError, an internal error), with
    no room left for a log that would say why."""
    try:
        yield
    except Exception as err:
        try:
            stats = os.statvfs(out_dir)
        except OSError:
            raise err from None
        if stats.f_bavail * stats.f_frsize < MIN_FREE_BYTES and not isinstance(err, OSError):
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(out_dir)) from err
        raise


def run_with_prefect(
    config: PipelineConfig,
    out_dir: Path,
    prefect_home: Path,
    on_batch: Callable | None = None,
    server: LocalPrefectServer | None = None,
    started_at: float | None = None,
    on_stage: SectionListener | None = None,
) -> pipeline.RunSummary:
    """Start the workers and the work, then Prefect: finish starting the local server (``server``, launched
    earlier by the caller, or one started here), run the flow against it, and stop everything (also on
    SIGTERM, Ctrl-C and errors). ``started_at`` is the command's start (``time.perf_counter``), from which
    wall time counts; ``on_stage``: told as each of the run's own steps starts and ends."""
    wall = started_at or time.perf_counter()
    timeline = Timeline(started=time.time() - (time.perf_counter() - wall), on_section=on_stage)
    check_paraphrase_endpoint(config.paraphrase)  # a named model's endpoint answers, before any work
    server = server or LocalPrefectServer(prefect_home)
    ctx = pipeline.make_context(config, Path(out_dir))
    summary = pipeline.RunSummary(Path(out_dir), runner=config.runner.kind)
    recorder = FlowThread()
    with sigterm_as_exit(), full_disk_said(Path(out_dir)), contextlib.ExitStack() as stack:
        stack.callback(server.stop)  # last: the workers below are stopped first
        stack.callback(recorder.join, FLOW_END_TIMEOUT_S)  # the flow records its end while the server answers
        if server.process is None:
            server.launch()
        pool = stack.enter_context(runners.open_pool(config.runner, ctx.store_root, timeline))
        driver = RunDriver(config, ctx, pool, summary, on_batch).start()  # the work starts now
        stack.callback(driver.stop)
        from eqagen.flows.generate import record_run  # Prefect: imported while the work runs

        api_url = server.start()  # waits for the server to answer (here: a SIGTERM or Ctrl-C meanwhile ends it)
        summary = recorder.run(record_run, driver, config, Path(out_dir), api_url)
    summary.wall_seconds = time.perf_counter() - wall
    summary.server_seconds = server.startup_seconds
    summary.record_timeline(timeline, pool.workers)
    return summary
