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
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future
from pathlib import Path
from typing import Any, TypeVar

from eqagen.config import PipelineConfig
from eqagen.core.errors import errors_in_chain
from eqagen.flows import pipeline, runners
from eqagen.flows.pool import RunDriver
from eqagen.flows.server import LocalPrefectServer
from eqagen.flows.signals import signals_as_exceptions
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


FULL_DISK_ERRNOS = (errno.ENOSPC, errno.EDQUOT)  # no space left; the user's disk quota exceeded


def full_disk_code(error: BaseException) -> int | None:
    """ENOSPC or EDQUOT if ``error`` is an OSError saying so, by its errno or by the system's text for it
    (pyarrow's OSErrors may carry the text without the errno); else None."""
    if not isinstance(error, OSError):
        return None
    return next((c for c in FULL_DISK_ERRNOS if error.errno == c or os.strerror(c) in str(error)), None)


def full_disk_error(err: BaseException) -> OSError | None:
    """The OSError that says the disk (or the user's quota) is full, wherever it is in ``err``'s chain, or
    None. The error a run ends with is often another one raised while handling it: the run's own write fails
    with ENOSPC, then Prefect's client, recording that failure, gets a 500 from its server, whose database is
    on the same full disk."""
    return next((e for e in errors_in_chain(err) if isinstance(e, OSError) and full_disk_code(e)), None)


def failed_in_prefects_server(err: BaseException) -> bool:
    """Prefect's API answered 5xx somewhere in ``err``'s chain: its server failed, and its exception stays in
    that process (a full disk leaves it no room to log it)."""
    return any(getattr(getattr(e, "response", None), "status_code", 0) >= 500 for e in errors_in_chain(err))


PROBE_BYTES = 64 << 10  # a few of SQLite's pages with their WAL frames: the least its failed write needed


def write_refused(folder: Path) -> OSError | None:
    """The OSError the OS raises for a write of :data:`PROBE_BYTES` into ``folder`` (fsynced, then removed),
    or None if the write succeeds."""
    try:
        with tempfile.TemporaryFile(dir=folder) as probe:
            probe.write(bytes(PROBE_BYTES))
            probe.flush()
            os.fsync(probe.fileno())
    except OSError as refusal:
        return refusal
    return None


@contextlib.contextmanager
def full_disk_said(out_dir: Path, server_dir: Path | None = None) -> Iterator[None]:
    """A run that fails because the disk is full ends with that OSError naming its file, or ``out_dir`` when it
    names none (exit 2, "No space left on device"; the command line says the fix), not with the error it is
    wrapped in: Prefect's client reports its server's failed write only as a 500 (PrefectHTTPStatusError, an
    internal error). The full disk is found in the failure (:func:`full_disk_error`); when the failure is only
    Prefect's server's 500 (its own write failed first), the OS is asked the same question there: a write into
    ``server_dir`` (its database's folder) that the OS refuses with ENOSPC or EDQUOT is that error."""
    try:
        yield
    except Exception as err:
        full = full_disk_error(err)
        if full is None and server_dir is not None and failed_in_prefects_server(err):
            refusal = write_refused(server_dir)
            full = refusal if refusal is not None and full_disk_code(refusal) else None
        if full is None or (full is err and full.filename):
            raise
        code = full_disk_code(full) or errno.ENOSPC
        raise OSError(code, os.strerror(code), full.filename or str(out_dir)) from err


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
    with signals_as_exceptions(), full_disk_said(Path(out_dir), server.home), contextlib.ExitStack() as stack:
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
