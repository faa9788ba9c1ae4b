"""The run timeline (eqagen.flows.timeline): what its spans say is recomputed here by brute force on a
fine grid of instants, over many random schedules (hypothesis), and the prediction reproduces a
list-scheduled run it did not see."""

from __future__ import annotations

import heapq
from concurrent.futures import ThreadPoolExecutor

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.flows.timeline import (
    BARRIER,
    MAIN,
    WAITING,
    Span,
    TimedExecutor,
    Timeline,
    covered_seconds,
    critical_path,
    makespan,
    phases,
    predict_seconds,
    serial_seconds,
)

STEP = 0.01  # the brute force's grid: spans start and end on it


def busy_at(spans: list[Span], t: float) -> list[Span]:
    return [s for s in spans if s.start <= t < s.end]


@st.composite
def runs(draw) -> tuple[list[Span], float, int]:
    """A random run: units on workers w0..wN (never two at once on one worker) and main sections."""
    workers = draw(st.integers(1, 4))
    spans: list[Span] = []
    for w in range(workers):
        t = draw(st.integers(0, 20))
        for _ in range(draw(st.integers(0, 5))):
            length = draw(st.integers(1, 30))
            stage = draw(st.sampled_from(["run_batch", "ask_batch", "write_shard"]))
            spans.append(Span(stage, t * STEP, (t + length) * STEP, f"w{w}"))
            t += length + draw(st.integers(0, 10))
    t = 0
    for _ in range(draw(st.integers(0, 3))):
        t += draw(st.integers(0, 40))
        length = draw(st.integers(1, 20))
        spans.append(Span(draw(st.sampled_from(["select", "audit"])), t * STEP, (t + length) * STEP, MAIN))
        t += length
    end = max([s.end for s in spans] + [0.0])
    wall = end + draw(st.integers(0, 10)) * STEP
    return spans, round(wall, 6), workers


def instants(wall: float) -> list[float]:
    return [(i + 0.5) * STEP for i in range(round(wall / STEP))]


@settings(max_examples=200, deadline=None)
@given(runs())
def test_serial_seconds_count_the_instants_with_fewer_units_than_workers(run) -> None:
    spans, wall, workers = run
    brute = sum(STEP for t in instants(wall) if len(busy_at([s for s in spans if s.worker != MAIN], t)) < workers)
    assert serial_seconds(spans, workers, wall) == pytest.approx(brute, abs=1e-6)


@settings(max_examples=200, deadline=None)
@given(runs())
def test_the_critical_path_gives_each_instant_to_the_busiest_stage_and_adds_up_to_the_wall(run) -> None:
    spans, wall, _ = run
    brute: dict[str, float] = {}
    for t in instants(wall):
        here = busy_at(spans, t)
        work = [s.stage for s in here if s.worker != MAIN]
        own = [s for s in here if s.worker == MAIN]
        if work:
            stage = min(set(work), key=lambda k: (-work.count(k), k))
        elif own:
            stage = max(own, key=lambda s: s.start).stage
        else:
            stage = WAITING
        brute[stage] = brute.get(stage, 0.0) + STEP
    path = critical_path(spans, wall)
    assert sum(path.values()) == pytest.approx(wall, abs=1e-6)
    assert {k: round(v, 6) for k, v in path.items() if v > 1e-9} == {k: round(v, 6) for k, v in brute.items()}


@settings(max_examples=200, deadline=None)
@given(runs(), st.integers(1, 64))
def test_prediction_is_never_below_the_work_per_worker_nor_above_one_worker(run, n) -> None:
    spans, wall, _ = run
    work = sum(s.seconds for s in spans if s.worker != MAIN)
    idle = wall - covered_seconds(phases(spans))
    predicted = predict_seconds(spans, wall, n)
    assert predicted >= idle + work / n - 1e-9
    assert predicted <= idle + work + 1e-9
    assert predict_seconds(spans, wall, n + 1) <= predicted + 1e-9, "more workers never predict more time"


def list_scheduled(durations: list[float], workers: int, start: float) -> list[Span]:
    """What a pool of ``workers`` does with ``durations`` submitted in order: the spans it would record."""
    free = [(start, f"w{w}") for w in range(workers)]
    heapq.heapify(free)
    spans = []
    for d in durations:
        t, w = heapq.heappop(free)
        spans.append(Span("unit", t, t + d, w))
        heapq.heappush(free, (t + d, w))
    return spans


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=60), st.integers(1, 8), st.integers(1, 16))
def test_a_list_scheduled_run_on_m_workers_predicts_the_same_run_on_n(durations, m, n) -> None:
    seconds = [d / 10 for d in durations]
    gap = 1.5  # serial work between two phases, in the run's own process
    measured = list_scheduled(seconds, m, 0.0)
    end = max(s.end for s in measured)
    measured += [Span("select", end, end + gap, MAIN)]
    measured += list_scheduled(seconds, m, end + gap)
    wall = max(s.end for s in measured) + 0.25
    expected = 2 * makespan(seconds, n) + gap + 0.25
    assert predict_seconds(measured, wall, n) == pytest.approx(expected)
    assert predict_seconds(measured, wall, m) == pytest.approx(wall), "the measured worker count predicts the run"


@settings(max_examples=100, deadline=None)
@given(st.lists(st.integers(1, 50), min_size=1, max_size=40), st.integers(1, 30), st.integers(1, 8), st.integers(1, 16))
def test_a_unit_beside_the_runs_own_work_does_not_let_the_next_step_start_early(durations, side, m, n) -> None:
    """Batches, then the run plans alone for 1.5 s while one side unit (an episodes shard) runs, then the next
    step's units: barriers at the end of the batches and at the next step keep the side unit out of both
    steps. Predicted: each step list-scheduled, and the planning as long as the longer of it and the side unit
    (a side unit longer than the planning is counted whole: the prediction errs long, never short)."""
    seconds, side_s, gap = [d / 10 for d in durations], side / 10, 1.5
    measured = list_scheduled(seconds, m, 0.0)
    end = max(s.end for s in measured)
    measured += [
        Span(BARRIER, end, end, MAIN),
        Span("ask", end, end + gap, MAIN),
        Span("shard", end, end + side_s, "w0"),
    ]
    measured += [Span(BARRIER, end + gap, end + gap, MAIN)]
    measured += list_scheduled(seconds, m, end + gap)
    wall = max(s.end for s in measured) + 0.25
    expected = 2 * makespan(seconds, n) + max(gap, side_s) + 0.25
    assert predict_seconds(measured, wall, n) == pytest.approx(expected)


def unit(x: int) -> int:
    return x * x


def test_the_timed_executor_returns_results_and_records_a_span_per_unit() -> None:
    timeline = Timeline()
    with ThreadPoolExecutor(2) as threads:
        executor = TimedExecutor(threads, timeline)
        assert list(executor.map(unit, range(5))) == [0, 1, 4, 9, 16]
        failing = executor.submit(unit, "x")
        with pytest.raises(TypeError):
            failing.result()
    spans = timeline.relative()
    assert [s.stage for s in spans] == ["unit"] * 5 and all(0 <= s.start <= s.end for s in spans)
    assert all(s.worker != MAIN for s in spans)
