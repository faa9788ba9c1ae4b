"""FILM's error categories from an episode's trace, and the annotations' majority parse."""

from __future__ import annotations

from eqagen.generators.household.alfred.failures import FailureTrace, failure_mode
from eqagen.generators.household.alfred.film import FilmParse, consensus_goal


def trace(**kw) -> FailureTrace:
    base = dict(parse_right=True, stop_reason="max_steps", phase="search", sought_enclosed=False,
                sought_unplaced=False, collisions=0, interaction_failures=0)  # fmt: skip
    return FailureTrace(**(base | kw))


def test_each_category_follows_its_trace():
    assert failure_mode(trace()) == "goal_object_not_found"
    assert failure_mode(trace(sought_enclosed=True)) == "object_in_closed_receptacle"
    assert failure_mode(trace(sought_unplaced=True)) == "other"  # a gap in the data, not FILM's
    assert failure_mode(trace(stop_reason="max_failures", collisions=7, interaction_failures=3)) == "collision"
    assert (
        failure_mode(trace(stop_reason="max_failures", collisions=3, interaction_failures=7)) == "interaction_failure"
    )
    assert failure_mode(trace(phase="approach")) == "other"  # a time-out while walking to a known object
    assert failure_mode(trace(stop_reason="plan_finished", phase="interact")) == "other"


def test_a_misread_instruction_comes_first():
    for t in (trace(), trace(stop_reason="max_failures", collisions=10), trace(sought_enclosed=True)):
        assert failure_mode(FailureTrace(**{**t.__dict__, "parse_right": False})) == "language_processing_error"


def parse(obj: str, code: int = 2, parent: str = "CounterTop") -> FilmParse:
    return FilmParse("k", code, obj, parent, "", False)


def test_consensus_needs_a_strict_majority():
    assert consensus_goal([parse("Apple"), parse("Apple"), parse("Tomato")]) == parse("Apple").goal()
    assert consensus_goal([parse("Apple"), parse("Tomato"), parse("Egg")]) is None
    assert consensus_goal([parse("Apple"), parse("Apple"), parse("Egg"), parse("Egg")]) is None  # a tie
    assert consensus_goal([parse("Apple"), None, parse("Apple")]) == parse("Apple").goal()
    assert (
        consensus_goal([parse("Apple", code=2), parse("Apple", code=3), parse("Apple", code=2)])
        == parse("Apple").goal()
    )
    assert consensus_goal([]) is None
