"""The run's timeline: which unit of work ran when and where, and what it says about scaling.

Every unit the run hands to its workers (a batch, one batch's share of an ask round, a shard) is timed on
the worker that runs it, its input's decoding included (:func:`timed`, through :class:`TimedExecutor`),
and the run's own process adds the sections it spends alone (:meth:`Timeline.section`). From these spans
alone:

- :func:`critical_path`: the run's wall time cut by stage. An instant belongs to the stage with the most
  units running then, else to the run's own innermost section, else to ``waiting`` (imports, the
  Prefect server, orchestration: nothing ran).
- :func:`serial_seconds`: the time during which fewer than all workers were busy.
- :func:`predict_seconds`: the time the same work would take on ``n`` workers. Units run in *phases*:
  maximal stretches with units running (pauses of dispatch aside), also cut at the run's *barriers*
  (:meth:`Timeline.barrier`: from there on, units need those before them: the batches before the asks,
  each ask round before the next, the shards before the audit), since a unit that merely overlaps the
  run's own work there (an episodes shard written while the asks are planned) must not let the next
  step's units start early in the prediction. Each phase's units are list-scheduled on ``n`` workers in
  the order they started, and every stretch with no unit running is kept as it was measured. A side unit
  that outlasts the run's own work beside it is counted whole, as if the next step waited for it: the
  prediction errs long there, never short. It assumes a unit takes as long on any
  of ``n`` cores as it did here; it neither adds contention for memory bandwidth nor removes any.

Times are wall-clock seconds since the epoch (``time.time``): comparable across the processes of one
machine and across machines whose clocks are synchronised (a cluster runs NTP).
"""

from __future__ import annotations

import bisect
import contextlib
import heapq
import itertools
import os
import pickle
import socket
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, Future
from dataclasses import dataclass
from typing import Any

MAIN = "main"  # the worker name of the run's own process
WAITING = "waiting"  # the critical path's name for time in which nothing ran
DISPATCH_S = 0.05  # a pause between units shorter than this is the pool's dispatch, not a barrier
BARRIER = "barrier"  # a zero-length span of the run's process: the units after it need those before it


@dataclass(frozen=True)
class Span:
    stage: str
    start: float
    end: float
    worker: str  # MAIN, or host:pid of the worker process

    @property
    def seconds(self) -> float:
        return self.end - self.start


def worker_name() -> str:
    return f"{socket.gethostname()}:{os.getpid()}"


def timed(fn: Callable[..., Any], packed: bytes) -> tuple[Any, Span]:
    """``fn`` called with its arguments unpickled from ``packed``, and the span it took, named after ``fn``
    (runs on the worker). Decoding a unit's input (tens of milliseconds for an ask round's programs) is the
    worker's work on that unit, so it is inside the span."""
    start = time.time()
    result = fn(*pickle.loads(packed))
    return result, Span(fn.__name__, start, time.time(), worker_name())


@dataclass
class Section:
    """A section's seconds, set when its block ends (:meth:`Timeline.section`), and what it did in counts
    (``detail``, set by the block: "11,052 asks -> 7,201 answered")."""

    seconds: float = 0.0
    detail: str = ""


# (stage, None, "") at its start, (stage, seconds, detail) at its end
SectionListener = Callable[[str, float | None, str], None]


class Timeline:
    """The spans of one run, added from any thread."""

    def __init__(self, started: float | None = None, on_section: SectionListener | None = None):
        """``on_section``: told of each section as it starts (``stage, None``) and ends (``stage, seconds``),
        so that a progress display can say what runs."""
        self.started = time.time() if started is None else started
        self.spans: list[Span] = []
        self._lock = threading.Lock()
        self.on_section = on_section

    def add(self, span: Span) -> None:
        with self._lock:
            self.spans.append(span)

    @contextlib.contextmanager
    def section(self, stage: str) -> Iterator[Section]:
        """Time the block as the run's own process's work; the :class:`Section` it gives holds its seconds
        once the block is done."""
        section, start = Section(), time.time()
        if self.on_section:
            self.on_section(stage, None, "")
        try:
            yield section
        finally:
            end = time.time()
            section.seconds = end - start
            self.add(Span(stage, start, end, MAIN))
            if self.on_section:
                self.on_section(stage, section.seconds, section.detail)

    def tell(self, stage: str, seconds: float | None, detail: str) -> None:
        """Tell the listener of a part of a section as it starts (``seconds`` None) or once done (the ask
        rounds; balance, compose and split inside the selection): its span is the enclosing section's."""
        if self.on_section:
            self.on_section(stage, seconds, detail)

    def barrier(self) -> None:
        """Mark that the units submitted from now on need the units the run waited for before (the run's
        steps: see :func:`phases`)."""
        now = time.time()
        self.add(Span(BARRIER, now, now, MAIN))

    def relative(self) -> list[Span]:
        """The spans with times in seconds since the run started, in start order."""
        with self._lock:
            spans = list(self.spans)
        t0 = self.started
        return sorted((Span(s.stage, s.start - t0, s.end - t0, s.worker) for s in spans), key=lambda s: s.start)

    def to_dict(self, workers: int) -> dict[str, Any]:
        return {
            "workers": workers,
            "spans": [[s.stage, round(s.start, 4), round(s.end, 4), s.worker] for s in self.relative()],
        }


def spans_from_dict(data: dict[str, Any]) -> list[Span]:
    return [Span(stage, start, end, worker) for stage, start, end, worker in data["spans"]]


class TimedExecutor(Executor):
    """An executor whose units are timed where they run and added to ``timeline`` when they finish; the
    futures it returns hold the units' own results. A unit's arguments are pickled here and unpickled inside
    its span (:func:`timed`). It owns nothing: shutting it down leaves ``inner`` running."""

    def __init__(self, inner: Executor, timeline: Timeline):
        self.inner, self.timeline = inner, timeline

    def submit(self, fn: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Future:
        if kwargs:
            raise TypeError("TimedExecutor.submit takes positional arguments only")
        outer: Future = Future()
        outer.set_running_or_notify_cancel()  # the unit is the inner executor's to cancel

        def settle(inner: Future) -> None:
            if inner.cancelled():
                outer.set_exception(RuntimeError(f"{fn.__name__} was cancelled"))
            elif (error := inner.exception()) is not None:
                outer.set_exception(error)
            else:
                result, span = inner.result()
                self.timeline.add(span)
                outer.set_result(result)

        self.inner.submit(timed, fn, pickle.dumps(args, pickle.HIGHEST_PROTOCOL)).add_done_callback(settle)
        return outer

    def tell(self, stage: str, seconds: float | None, detail: str) -> None:
        """Tell the listener of a part of a section as it starts (``seconds`` None) or once done (the ask
        rounds; balance, compose and split inside the selection): its span is the enclosing section's."""
        if self.on_section:
            self.on_section(stage, seconds, detail)

    def barrier(self) -> None:
        """The run's next step starts here (:meth:`Timeline.barrier`)."""
        self.timeline.barrier()

    def shutdown(self, wait: bool = True, *, cancel_futures: bool = False) -> None:
        return None


# --- what the spans say ------------------------------------------------------------------------------


def _segments(spans: list[Span], wall: float) -> Iterator[tuple[float, float, list[Span]]]:
    """The wall time ``[0, wall]`` cut at every span's start and end: each piece with the spans running in it."""
    cuts = sorted({0.0, wall, *(t for s in spans for t in (s.start, s.end) if 0.0 < t < wall)})
    ordered = sorted(spans, key=lambda s: s.start)
    running: list[Span] = []
    index = 0
    for lo, hi in itertools.pairwise(cuts):
        while index < len(ordered) and ordered[index].start <= lo:
            running.append(ordered[index])
            index += 1
        running = [s for s in running if s.end > lo]
        yield lo, hi, running


def units(spans: list[Span]) -> list[Span]:
    return [s for s in spans if s.worker != MAIN]


def critical_path(spans: list[Span], wall: float, fewer_units_than: int | None = None) -> dict[str, float]:
    """``wall`` cut by stage (see the module's text); the values add up to ``wall``. With
    ``fewer_units_than``, only the instants with fewer units running than that are counted."""
    path: Counter[str] = Counter()
    for lo, hi, running in _segments(spans, wall):
        work = Counter(s.stage for s in running if s.worker != MAIN)
        if fewer_units_than is not None and sum(work.values()) >= fewer_units_than:
            continue
        own = [s for s in running if s.worker == MAIN]
        if work:
            stage = min(work, key=lambda k: (-work[k], k))
        elif own:
            stage = max(own, key=lambda s: s.start).stage  # the innermost section
        else:
            stage = WAITING
        path[stage] += hi - lo
    return dict(sorted(path.items(), key=lambda kv: -kv[1]))


def serial_seconds(spans: list[Span], workers: int, wall: float) -> float:
    """Seconds of ``[0, wall]`` during which fewer than ``workers`` units ran."""
    return sum(critical_path(spans, wall, fewer_units_than=workers).values())


def phases(spans: list[Span]) -> list[list[Span]]:
    """The units in maximal stretches of time with at least one unit running, in time order, cut also at
    every barrier (:meth:`Timeline.barrier`); a pause shorter than :data:`DISPATCH_S` (a unit handed to a
    worker that has just finished the previous one) does not end a stretch."""
    barriers = sorted(s.start for s in spans if s.stage == BARRIER and s.worker == MAIN)

    def step(t: float) -> int:  # how many barriers come at or before t
        return bisect.bisect_right(barriers, t)

    grouped: list[list[Span]] = []
    reach = float("-inf")
    for span in sorted(units(spans), key=lambda s: s.start):
        if span.start > reach + DISPATCH_S or step(span.start) > step(grouped[-1][0].start):
            grouped.append([])
            reach = float("-inf")
        grouped[-1].append(span)
        reach = max(reach, span.end)
    return grouped


def makespan(durations: list[float], workers: int) -> float:
    """List scheduling: each unit, in order, on the worker free first."""
    free = [0.0] * max(1, workers)
    for seconds in durations:
        heapq.heappush(free, heapq.heappop(free) + seconds)
    return max(free)


def predict_seconds(spans: list[Span], wall: float, workers: int) -> float:
    """The run's time on ``workers`` workers: the stretches without units as measured, each phase
    list-scheduled."""
    grouped = phases(spans)
    return (wall - covered_seconds(grouped)) + sum(makespan([s.seconds for s in g], workers) for g in grouped)


def covered_seconds(grouped: list[list[Span]]) -> float:
    """The measured time the phases account for: the union of their stretches (a phase cut at a barrier may
    still be running beside the next one)."""
    total, reach = 0.0, float("-inf")
    for start, end in sorted((g[0].start, max(s.end for s in g)) for g in grouped):
        total += max(0.0, end - max(start, reach))
        reach = max(reach, end)
    return total
