"""The project's own error types.

Every error a user can cause names what was wrong (the file, the field) and how to fix it, so a run
that fails at 2 a.m. says what to do without a stack trace being read.
"""

from __future__ import annotations

import contextlib
import struct
import zlib
from collections.abc import Iterator


class EqagenError(Exception):
    """Base class of every error eqagen raises on purpose. ``exit_status`` is the command's exit status
    when it ends with this error: 2, bad input (a config, file or argument), unless a subclass says else."""

    exit_status = 2


class ConfigError(EqagenError):
    """A config key or value is wrong. Names the key, the bad value and what is allowed."""

    def __init__(self, key: str, problem: str, allowed: str | None = None, source: str | None = None):
        self.key, self.problem, self.allowed, self.source = key, problem, allowed, source
        where = f"{source}: " if source else ""
        hint = f" (allowed: {allowed})" if allowed else ""
        what = "option" if key.startswith("--") else "config key"  # a command-line option, e.g. --ratios
        super().__init__(f"{where}{what} '{key}': {problem}{hint}")


class DataFileError(EqagenError):
    """An input file is missing, corrupt or malformed. Names the file, the field and the fix."""

    def __init__(self, path: object, field: str | None, problem: str, fix: str | None = None):
        self.path, self.field, self.problem, self.fix = str(path), field, problem, fix
        at = f" [{field}]" if field else ""
        tail = f"; fix: {fix}" if fix else ""
        super().__init__(f"{path}{at}: {problem}{tail}")


class UnknownNameError(EqagenError, KeyError):
    """A name (task type, object type, predicate, preset, ...) that the registry does not know."""

    def __init__(self, kind: str, name: str, known: object):
        self.kind, self.name = kind, name
        choices = sorted(str(k) for k in known)  # type: ignore[union-attr]
        shown = ", ".join(choices[:40]) + (" ..." if len(choices) > 40 else "")
        super().__init__(f"unknown {kind} '{name}'; known: {shown}")

    def __str__(self) -> str:  # KeyError quotes its message otherwise
        return str(self.args[0])


class RunFailed(EqagenError):
    """The input was valid but the command could not do what was asked (exit status 1): e.g. a run whose
    questions all failed balancing. Says why and what to change."""

    exit_status = 1

    def __init__(self, problem: str, fix: str | None = None):
        self.problem, self.fix = problem, fix
        super().__init__(problem + (f"; fix: {fix}" if fix else ""))


class TaskError(EqagenError, ValueError):
    """Task parameters that cannot be carried out in the given scene."""


# What parsing a malformed file raises from inside Python, numpy, struct, zlib or an NBT library; a
# reader turns these into DataFileError naming the file and the field.
MALFORMED_ERRORS: tuple[type[BaseException], ...] = (
    KeyError, IndexError, TypeError, ValueError, AttributeError, OverflowError, RecursionError, EOFError,
    MemoryError, struct.error, zlib.error,
)  # fmt: skip


@contextlib.contextmanager
def malformed_file(path: object, field: str | None, fix: str | None = None) -> Iterator[None]:
    """Within the block, a low-level parsing error becomes ``DataFileError(path, field, ...)``.

    The project's own errors pass through unchanged, so a reader keeps its precise messages and this
    catches only what it did not foresee (a wrong type, a missing key, a truncated buffer). A KeyError
    adds the missing key to the field.
    """
    try:
        yield
    except EqagenError:
        raise
    except MALFORMED_ERRORS as err:
        where = field
        if isinstance(err, KeyError) and err.args:
            where = f"{field}.{err.args[0]}" if field else str(err.args[0])
        detail = "nested too deeply" if isinstance(err, RecursionError) else str(err)[:200]
        raise DataFileError(path, where, f"malformed ({type(err).__name__}: {detail})", fix) from err


def errors_in_chain(err: BaseException | None) -> Iterator[BaseException]:
    """``err`` (nothing if None), then its causes and contexts and its exception groups' members, each once,
    nearest first."""
    todo: list[BaseException | None] = [err]
    seen: list[BaseException] = []
    while todo:
        current = todo.pop(0)
        if current is None or any(current is s for s in seen):
            continue
        seen.append(current)
        yield current
        todo += [current.__cause__, current.__context__, *getattr(current, "exceptions", ())]
