"""SIGTERM and Ctrl-C as exceptions raised only where raising is safe (eqagen.flows.signals), with real signals
sent to this process."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from eqagen.flows.signals import CHECK_S, signals_as_exceptions

TERMINATED = 128 + signal.SIGTERM


def threads_named(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def test_sigterm_becomes_an_orderly_exit_and_the_handlers_come_back() -> None:
    before = {s: signal.getsignal(s) for s in (signal.SIGTERM, signal.SIGINT)}
    stopped = []
    with pytest.raises(SystemExit) as done, signals_as_exceptions():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        finally:
            stopped.append(True)
    assert done.value.code == TERMINATED and stopped == [True]
    assert {s: signal.getsignal(s) for s in before} == before
    assert threads_named("eqagen-signals") == []  # the helper thread ended with the block


def test_ctrl_c_becomes_keyboard_interrupt() -> None:
    with pytest.raises(KeyboardInterrupt), signals_as_exceptions():
        os.kill(os.getpid(), signal.SIGINT)
        time.sleep(5)


def test_sigterm_stays_an_orderly_exit_when_the_interrupted_code_turns_it_into_another_error() -> None:
    """Seen by hand: a SIGTERM that landed in a pydantic serializer became a PydanticSerializationError, and
    the command said "internal error" with exit 1 instead of "terminated" with 143."""

    def serializer_of_a_library() -> None:  # pydantic-core wraps what a Python serializer raises
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except BaseException as error:
            raise ValueError(f"Error calling function: {error!r}") from None

    with pytest.raises(SystemExit) as done, signals_as_exceptions():
        serializer_of_a_library()
    assert done.value.code == TERMINATED and isinstance(done.value.__cause__, ValueError)
    with pytest.raises(ValueError), signals_as_exceptions():  # without a signal, errors stay what they are
        raise ValueError("a bug")


def test_an_exit_that_code_swallowed_is_raised_again() -> None:
    """Seen 2 times in 40: a SIGTERM during Prefect's import landed in Python code that pydantic-core calls and
    whose exceptions it only reports ("Exception ignored in: 'SecretStr'"); the run went on to its end."""
    with pytest.raises(SystemExit) as done, signals_as_exceptions():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        except BaseException:  # what C does with an exception it reports as unraisable
            pass
        swallowed_at = time.monotonic()
        time.sleep(10)
    assert done.value.code == TERMINATED
    assert time.monotonic() - swallowed_at < CHECK_S + 1.5  # raised again at the next check, not after 10 s


def test_a_second_signal_does_not_cut_the_cleanup_short() -> None:
    cleaned = []
    with pytest.raises(SystemExit), signals_as_exceptions():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        finally:
            os.kill(os.getpid(), signal.SIGINT)  # a second Ctrl-C or SIGTERM while the workers are stopped
            time.sleep(0.3)
            cleaned.append(True)
    assert cleaned == [True]


def test_a_signal_received_as_the_body_ends_still_ends_the_block() -> None:
    with pytest.raises(SystemExit) as done, signals_as_exceptions():
        signal.getsignal(signal.SIGTERM).__self__.received = signal.SIGTERM  # as if it came during the last line
    assert done.value.code == TERMINATED


def test_a_signal_received_while_the_handlers_are_put_back_still_ends_the_block(monkeypatch) -> None:
    from eqagen.flows import signals

    close = signals.SafeSignals.close

    def close_as_a_signal_comes(self) -> None:
        close(self)
        self.received = signal.SIGTERM  # recorded by the closing handler, after the body's own check

    monkeypatch.setattr(signals.SafeSignals, "close", close_as_a_signal_comes)
    with pytest.raises(SystemExit) as done, signals_as_exceptions():
        pass
    assert done.value.code == TERMINATED


def test_a_block_inside_another_keeps_the_outer_handler_and_ends_on_its_signal() -> None:
    after_inner = []
    with pytest.raises(SystemExit), signals_as_exceptions():
        outer = signal.getsignal(signal.SIGTERM)
        with signals_as_exceptions():
            assert signal.getsignal(signal.SIGTERM) == outer
            outer.__self__.received = signal.SIGTERM  # kept until the inner body's end
        after_inner.append(True)
    assert after_inner == []


# A module whose import receives a SIGTERM halfway (in its own code, then in importlib's, where the module's
# lock is released) and then finishes; the import must end whole before the exit is raised.
SLOW_MODULE = textwrap.dedent(
    """
    import os, signal, time
    os.kill(os.getpid(), signal.SIGTERM)
    time.sleep(0.3)
    finished = True
    """
)


def test_a_signal_during_an_import_is_raised_once_the_import_is_done(tmp_path: Path, monkeypatch) -> None:
    """Found by CI: a SIGTERM raised inside importlib's module-lock callback left the global import lock held;
    the run's other threads then waited for ever on their next import, and the run hung."""
    (tmp_path / "slow_module_for_signals.py").write_text(SLOW_MODULE)
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemExit) as done, signals_as_exceptions():
        import slow_module_for_signals  # noqa: F401

        after_import = time.monotonic()
        time.sleep(5)
    assert done.value.code == TERMINATED
    assert sys.modules["slow_module_for_signals"].finished  # the import was not cut off
    assert time.monotonic() - after_import < 1.0  # sent again right after the import
    other = threading.Thread(target=lambda: __import__("xml.dom.minidom"), daemon=True)
    other.start()
    other.join(10)
    assert not other.is_alive(), "the import lock was left held"


# Prefect's import, as the run's main thread does it while its workers run, with a SIGTERM at `delay`.
DURING_PREFECTS_IMPORT = textwrap.dedent(
    """
    import os, signal, sys, threading, time
    from eqagen.flows.signals import signals_as_exceptions
    threading.Timer(float(sys.argv[1]), os.kill, (os.getpid(), signal.SIGTERM)).start()
    try:
        with signals_as_exceptions():
            from eqagen.flows.generate import record_run
            time.sleep(10)
        print("went on", flush=True)
    except SystemExit as exit:
        other = threading.Thread(target=lambda: __import__("xml.dom.minidom"), daemon=True)
        other.start()
        other.join(10)
        print("import lock held" if other.is_alive() else f"exit {exit.code}", flush=True)
        os._exit(0)
    """
)


@pytest.mark.slow
@pytest.mark.parametrize("delay", [0.05 * i for i in range(1, 25)])
def test_a_sigterm_anywhere_in_prefects_import_ends_it_with_the_import_lock_free(delay: float) -> None:
    """Without the safe points, 2 of 40 such runs went on (the exit swallowed), and 4 of 48 SIGTERMs sent to real
    runs while they imported Prefect hung them."""
    proc = subprocess.run([sys.executable, "-c", DURING_PREFECTS_IMPORT, str(delay)], capture_output=True,
                          text=True, timeout=120, check=False)  # fmt: skip
    assert proc.stdout.strip() == f"exit {TERMINATED}", proc.stdout + proc.stderr[-2000:]


def test_a_swallowed_exit_is_raised_again_in_a_process_holding_many_descriptors() -> None:
    """select.select refuses descriptors above 1023: the helper thread would die and a lost exit stay lost."""
    import resource

    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard != resource.RLIM_INFINITY and hard < 1100:
        pytest.skip(f"this process may open only {hard} files")
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, 1100), hard))
    held = [os.open(os.devnull, os.O_RDONLY) for _ in range(1030)]
    try:
        test_an_exit_that_code_swallowed_is_raised_again()
    finally:
        for fd in held:
            os.close(fd)
        resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard))
