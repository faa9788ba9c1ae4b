"""Units of work on the run's workers, or in this process where there are none.

A unit is one module-level function with small arguments (paths, small tables, config models) and a small
result, so that any :class:`concurrent.futures.Executor` can run it: a fork-based process pool, or a Dask
cluster's ``client.get_executor()`` whose workers share the output directory at the same path. Without an
executor (``None``: the inline runner, the commands, the tests) the same function runs here at once: no
hidden pool of any kind.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import Executor, Future
from typing import Any, TypeVar

T = TypeVar("T")


def submit(executor: Executor | None, fn: Callable[..., T], *args: Any) -> Future[T]:
    """``fn(*args)`` on ``executor``; without one, run now (its error raised now) and given as a done future."""
    if executor is not None:
        return executor.submit(fn, *args)
    done: Future[T] = Future()
    done.set_result(fn(*args))
    return done


def map_units(executor: Executor | None, fn: Callable[..., T], *iterables: Iterable[Any]) -> Iterator[T]:
    """``fn`` over the arguments, results in order: all submitted at once to ``executor``, or one after
    another here."""
    return executor.map(fn, *iterables) if executor is not None else map(fn, *iterables)


def barrier(executor: Executor | None) -> None:
    """Mark, in the run's timeline where the executor keeps one (:class:`eqagen.flows.timeline.TimedExecutor`),
    that the units submitted from here on need the units the run waited for before: the next step of the
    run, as the timeline's predictions see it. Anything else has no timeline: nothing to mark."""
    mark = getattr(executor, "barrier", None)
    if mark is not None:
        mark()
