"""SIGTERM and Ctrl-C as exceptions in the main thread, raised only where raising is safe.

A Python signal handler that raises puts its exception wherever the main thread happens to be, and two
places broke runs:

- an import: importlib's module-lock callback raised after taking the global import lock and before its
  ``try``, so the lock stayed held; every other thread's next import then waited for ever, the exit was
  lost with it, and a run under SIGTERM hung until killed (found by CI; here 4 of 48 SIGTERMs sent while the
  run imported Prefect hung);
- Python code that C calls back and whose exceptions C only reports (pydantic's ``Exception ignored in:
  'SecretStr'``): the exit was lost and the run went on (2 times in 40, SIGTERM during Prefect's import).

So the handler (:class:`SafeSignals`), for SIGTERM (``SystemExit(143)``) and SIGINT (``KeyboardInterrupt``):

- inside an import (a frame of ``importlib._bootstrap``) keeps the signal and has it sent to the main thread
  again :data:`RETRY_S` later;
- elsewhere raises, then looks again every :data:`CHECK_S` while its block lasts: if the exception was lost it
  raises again; while it unwinds (it, or an error raised while handling it, is the exception being handled)
  it lets the cleanup run to its end, so a second Ctrl-C or SIGTERM does not cut the stopping of workers and
  server short (SIGKILL still does);
- a block whose body ends after a signal was received ends with its exception too.

The signal is sent again by a helper thread started with the block (:class:`_Resender`): a handler must not
start a thread or wait on a lock, which the main thread it interrupted may hold.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import time
from collections.abc import Iterator
from types import FrameType

from eqagen.core.errors import errors_in_chain

RETRY_S = 0.05  # a signal kept during an import is sent again this much later
CHECK_S = 1.0  # how often a raised exit is checked for being lost
HANDLED = (signal.SIGTERM, signal.SIGINT)


def exception_for(signum: int) -> BaseException:
    """What the signal raises: SystemExit(128 + 15) for SIGTERM (the shell's status for it), else
    KeyboardInterrupt (Ctrl-C)."""
    return SystemExit(128 + signum) if signum == signal.SIGTERM else KeyboardInterrupt()


def is_signal_exit(error: BaseException) -> bool:
    """``error`` is what :func:`exception_for` raises."""
    return isinstance(error, KeyboardInterrupt) or (
        isinstance(error, SystemExit) and error.code == 128 + signal.SIGTERM
    )


def importing(frame: FrameType | None) -> bool:
    """``frame`` or a caller of it is importlib's: an exception here could leave an import lock held."""
    while frame is not None:
        if frame.f_code.co_filename.startswith("<frozen importlib"):
            return True
        frame = frame.f_back
    return False


def exiting() -> bool:
    """The calling thread is handling a signal's exception: unwinding from it, or from an error raised while
    handling it (``__context__`` and ``__cause__`` lead back to it)."""
    return any(is_signal_exit(e) for e in errors_in_chain(sys.exc_info()[1]))


class _Resender:
    """A daemon thread that sends a signal to the main thread once asked to (:meth:`send_in`). Asking takes
    no lock: the handler writes a byte to a pipe that the thread waits on."""

    def __init__(self) -> None:
        self._main = threading.main_thread().ident or 0
        self._due: tuple[float, int] | None = None  # when, and which signal
        self._closed = False
        self._lock = threading.Lock()  # sending against closing: no signal once the block has ended
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self._poll = select.poll()  # not select.select: it refuses descriptors above 1023
        self._poll.register(self._read, select.POLLIN)
        self._thread = threading.Thread(target=self._run, name="eqagen-signals", daemon=True)
        self._thread.start()

    def send_in(self, delay: float, signum: int) -> None:
        if self._closed:
            return
        self._due = (time.monotonic() + delay, signum)
        with contextlib.suppress(BlockingIOError):  # a full pipe: the thread has been woken already
            os.write(self._write, b"\0")

    def _run(self) -> None:
        while True:
            due = self._due
            timeout_ms = None if due is None else max(0.0, due[0] - time.monotonic()) * 1000
            if self._poll.poll(timeout_ms):
                os.read(self._read, 4096)
                if self._closed:
                    return
                continue
            with self._lock:
                if self._closed:
                    return
                if self._due is due:  # not asked again meanwhile
                    self._due = None
                    signal.pthread_kill(self._main, due[1])  # type: ignore[index]

    def close(self) -> None:
        with self._lock:
            self._closed = True
        with contextlib.suppress(BlockingIOError):
            os.write(self._write, b"\0")
        self._thread.join()
        os.close(self._read)
        os.close(self._write)


class SafeSignals:
    """The handler of SIGTERM and SIGINT for one block (see the module's docstring). ``received``: the
    first signal that came, or 0."""

    def __init__(self) -> None:
        self.received = 0
        self.closing = False
        self._resender = _Resender()

    def handle(self, signum: int, frame: FrameType | None) -> None:
        self.received = self.received or signum
        if self.closing:  # the block is ending: it raises for the signal itself
            return
        if importing(frame):
            self._resender.send_in(RETRY_S, signum)
            return
        self._resender.send_in(CHECK_S, signum)
        if not exiting():
            raise exception_for(self.received)

    def close(self) -> None:
        self.closing = True
        self._resender.close()


@contextlib.contextmanager
def signals_as_exceptions() -> Iterator[None]:
    """Within the block, SIGTERM raises SystemExit(143) and Ctrl-C KeyboardInterrupt in the main thread, where
    safe (module docstring), so ``finally`` clauses stop workers and servers. Code the signal interrupted may
    turn the exception into an error of its own (pydantic's serializers do): once a signal was received, any
    error leaving the block is that signal's exception, caused by the error. A block inside another, or off
    the main thread, leaves the handlers as they are (the outer block's, or none) and only does that."""
    outer = getattr(signal.getsignal(signal.SIGTERM), "__self__", None)
    if isinstance(outer, SafeSignals) or threading.current_thread() is not threading.main_thread():
        yield from _said_as_signal(outer if isinstance(outer, SafeSignals) else None)
        return
    safe = SafeSignals()
    previous = {signum: signal.signal(signum, safe.handle) for signum in HANDLED}
    try:
        yield from _said_as_signal(safe)
    finally:
        safe.close()
        for signum, handler in previous.items():
            signal.signal(signum, handler)
    raise_if_received(safe)  # a signal that came while the handlers were being put back


def _said_as_signal(safe: SafeSignals | None) -> Iterator[None]:
    try:
        yield
    except Exception as error:
        if safe is not None and safe.received:
            raise exception_for(safe.received) from error
        raise
    raise_if_received(safe)


def raise_if_received(safe: SafeSignals | None) -> None:
    """A block whose body ended after a signal came (kept during an import, or lost) ends with its exception."""
    if safe is not None and safe.received:
        raise exception_for(safe.received)
