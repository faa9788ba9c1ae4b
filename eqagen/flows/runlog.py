"""The run's log file, so that the terminal shows the progress bar, notes and, on failure, one line first.

Prefect logs every failed task with its traceback, its events worker complains when the API is away,
Dask's workers write their own warnings, and any of them may print at any moment, also from worker
processes. During a run all of it goes to ``OUT/.eqagen/logs/generate-<time>-<pid>.log``: the standard
error stream is redirected there at the file-descriptor level, so forked and spawned workers (which
inherit it) and handlers that hold ``sys.stderr`` write there too. The terminal keeps a stream of its
own (:attr:`RunLog.console`) for the progress bar and notes; the command's one error line is printed
after the block, and names the log when the log holds anything (:func:`log_path_of`).
"""

from __future__ import annotations

import contextlib
import os
import sys
import time
import traceback
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from eqagen.flows.checkpoints import STATE_DIR

LOG_DIR = "logs"


@dataclass
class RunLog:
    path: Path
    console: TextIO  # the user's terminal (what stderr was before the run)

    def note(self, text: str) -> None:
        """One line for the user, also kept in the log."""
        self._say(f"eqagen: note: {text}")

    def error(self, text: str) -> None:
        """The error line of a run that must end at once (not through an exception), naming the log."""
        self._say(f"eqagen: error: {text} (log: {self.path})")

    def _say(self, line: str) -> None:
        print(line, file=self.console, flush=True)
        print(line, file=sys.stderr, flush=True)  # the log


def log_path_of(err: BaseException) -> Path | None:
    """The log holding the details of an error that ended a run (set by :func:`run_log`)."""
    return getattr(err, "eqagen_log", None)


def _writes_to_fd2(stream: TextIO) -> bool:
    try:
        return stream.fileno() == 2
    except (AttributeError, OSError, ValueError):  # a capture buffer (tests), a closed stream
        return False


def _close_quietly(stream: TextIO) -> None:
    with contextlib.suppress(OSError):  # a full disk: what could not be written is lost, the run's error is not
        stream.close()


@contextlib.contextmanager
def run_log(out_dir: Path, command: str = "generate") -> Iterator[RunLog]:
    """Within the block, standard error (fd 2 and ``sys.stderr``) goes to the run's log file. An exception
    leaving the block is written there with its traceback and carries the log's path (:func:`log_path_of`);
    an empty log is removed."""
    directory = Path(out_dir) / STATE_DIR / LOG_DIR
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / f"{command}-{time.strftime('%Y%m%d-%H%M%S')}-{os.getpid()}.log"
    with contextlib.ExitStack() as stack:
        log = open(path, "a", buffering=1, encoding="utf-8", errors="backslashreplace")  # noqa: SIM115
        stack.callback(_close_quietly, log)
        user = sys.stderr
        with contextlib.suppress(Exception):
            user.flush()
        console = user
        if _writes_to_fd2(user):  # the terminal: a stream of its own, fd 2 is about to point at the log
            console = stack.enter_context(os.fdopen(os.dup(2), "w", buffering=1, encoding=user.encoding))
        saved = os.dup(2)
        os.dup2(log.fileno(), 2)
        sys.stderr = log
        try:
            yield RunLog(path, console)
        except BaseException as err:
            with contextlib.suppress(OSError):  # a full disk must not replace the error that ended the run
                log.write(f"eqagen: the run ended with {type(err).__name__}:\n")
                log.write("".join(traceback.format_exception(type(err), err, err.__traceback__)))
                log.flush()
            err.eqagen_log = path  # type: ignore[attr-defined]
            raise
        finally:
            sys.stderr = user
            os.dup2(saved, 2)
            os.close(saved)
    if path.stat().st_size == 0:
        path.unlink()
