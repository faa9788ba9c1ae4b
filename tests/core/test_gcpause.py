"""``gc_paused``: the cyclic collector is off inside, restored after, across nesting, threads and errors."""

from __future__ import annotations

import gc
import threading

import pytest

from eqagen.core import derive_rng
from eqagen.core.gcpause import gc_paused
from eqagen.predicates import QuestionConfig, sample_questions
from tests.predicates.conftest import make_episode


@pytest.fixture(autouse=True)
def collector_enabled():
    gc.enable()
    yield
    gc.enable()


def test_pause_disables_and_restores():
    with gc_paused():
        assert not gc.isenabled()
    assert gc.isenabled()


def test_nested_pauses_end_with_the_outermost():
    with gc_paused():
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
    assert gc.isenabled()


def test_a_collector_disabled_before_stays_disabled():
    gc.disable()
    with gc_paused():
        pass
    assert not gc.isenabled()


def test_an_error_inside_still_restores():
    with pytest.raises(ValueError), gc_paused():
        raise ValueError("boom")
    assert gc.isenabled()


def test_overlapping_pauses_in_threads_end_with_the_last():
    inside, release, states = threading.Barrier(3), threading.Event(), []

    def worker(hold: bool) -> None:
        with gc_paused():
            inside.wait()
            if hold:
                release.wait()
            states.append(gc.isenabled())

    holder, quick = threading.Thread(target=worker, args=(True,)), threading.Thread(target=worker, args=(False,))
    holder.start()
    quick.start()
    inside.wait()
    quick.join()
    assert not gc.isenabled()  # the holder is still inside
    release.set()
    holder.join()
    assert gc.isenabled() and states == [False, False]


def test_sample_questions_runs_paused_and_restores(monkeypatch):
    import eqagen.templates.records as records

    seen = []
    real = records.sample_programs

    def spy(*args, **kwargs):
        seen.append(gc.isenabled())
        return real(*args, **kwargs)

    monkeypatch.setattr(records, "sample_programs", spy)
    ep = make_episode(2, 40)
    out, _ = sample_questions(ep, QuestionConfig(questions_per_episode=6), derive_rng(0, "q", ep.episode_id))
    assert seen == [False] and gc.isenabled() and out


def test_an_episode_leaves_almost_no_cyclic_garbage():
    """The premise of the pause: what an episode's questions allocate is freed by reference counting."""
    ep = make_episode(4, 60)
    config = QuestionConfig(questions_per_episode=24)
    sample_questions(ep, config, derive_rng(0, "q", "warm"))  # templates compiled once
    gc.collect()
    with gc_paused():
        for i in range(5):
            sample_questions(ep, config, derive_rng(i, "q", ep.episode_id))
    assert gc.collect() < 50
