"""Each built-in filter's rule, checked on tiny hand-made episodes where the answer is known."""

from __future__ import annotations

import numpy as np

from eqagen.core import FilterSpec, Program, QuerySpec
from eqagen.predicates import context_for
from eqagen.templates.answers import evaluate
from tests.predicates.conftest import tiny_episode


def program(*filters: FilterSpec, query: QuerySpec | None = None) -> Program:
    return Program(tuple(filters), query or QuerySpec("listObjects"))


def kitchen():
    """Two countertops, a fridge; a cup and an apple on countertop 1, a mug on countertop 2, an egg in
    the fridge. Everything is seen at every step; the fridge is opened at step 2."""
    types = ["CounterTop", "CounterTop", "Fridge", "Cup", "Apple", "Mug", "Egg"]
    T = 5
    pos = np.array([[1, 0.9, 2], [-1, 0.9, 2], [2, 0.8, 0], [1.2, 1.0, 2], [0.8, 1.0, 2], [-1, 1.0, 2], [2, 0.8, 0]])
    position = np.broadcast_to(pos, (T, 7, 3)).copy()
    parent = np.broadcast_to(np.array([-1, -1, -1, 0, 0, 1, 2]), (T, 7)).copy()
    opened = np.zeros((T, 7), dtype=bool)
    opened[2:, 2] = True
    caps = [("receptacle",), ("receptacle",), ("enclosing", "openable", "receptacle"), ("fillable",), (), (), ()]
    attrs = [{"color": c} for c in ("white", "gray", "white", "green", "red", "green", "white")]
    return tiny_episode(
        types, position, np.ones((T, 7), bool), parent, {"open": opened}, [(2, "open", 2, -1)], None, attrs, caps
    )


def test_location_on_groups_per_countertop_with_anchor_coordinates():
    groups = evaluate(kitchen(), program(FilterSpec("location", "on", "CounterTop")))
    assert [g.anchor for g in groups] == [(1.0, 0.9, 2.0), (-1.0, 0.9, 2.0)]
    assert [[r.entity for r in g.result] for g in groups] == [["Cup#1", "Apple#1"], ["Mug#1"]]
    assert [g.value for g in groups] == ["Apple, Cup", "Mug"]


def test_single_instance_is_not_grouped():
    (group,) = evaluate(kitchen(), program(FilterSpec("location", "inside", "Fridge")))
    assert group.anchor is None and [r.entity for r in group.result] == ["Egg#1"]


def test_same_receptacle_as_an_object():
    groups = evaluate(kitchen(), program(FilterSpec("location", "on_same", "Apple", {"receptacle": "CounterTop"})))
    assert [[r.entity for r in g.result] for g in groups] == [["Cup#1"]]


def test_property_and_state_filters():
    ep = kitchen()
    (g,) = evaluate(ep, program(FilterSpec("property", "color", "green")))
    assert [r.entity for r in g.result] == ["Cup#1", "Mug#1"]
    # only openable things are "closed": the closed fridge, not the cup
    (g,) = evaluate(ep, program(FilterSpec("state", "open", "false")))
    assert [r.entity for r in g.result] == ["Fridge#1"]


def test_moment_windows_and_get_state_reads_the_last_seen_step():
    ep = kitchen()
    ctx = context_for(ep)
    q = QuerySpec("getState", "open", {"subject": "Fridge"})
    before = FilterSpec("moment", "before", ctx.events[0].name, {"event": 0})
    after = FilterSpec("moment", "after", ctx.events[0].name, {"event": 0})
    assert evaluate(ep, program(before, query=q))[0].value == "closed"
    assert evaluate(ep, program(after, query=q))[0].value == "open"
    right_before = FilterSpec("moment", "right_before", ctx.events[0].name, {"event": 0})
    (g,) = evaluate(ep, program(right_before, query=QuerySpec("count", "objects", {"subject": "Fridge"})))
    assert g.value == "1"


def test_count_events_counts_what_the_agent_did():
    ep = tiny_episode(
        ["Fridge", "Cabinet"],
        np.zeros((8, 2, 3)),
        np.ones((8, 2), bool),
        events=[(1, "open", 0, -1), (3, "close", 0, -1), (5, "open", 0, -1), (6, "open", 1, -1)],
        capabilities=[("openable",), ("openable",)],
    )
    ctx = context_for(ep)
    assert [e.name for e in ctx.events] == ["open Fridge #1", "close Fridge", "open Fridge #2", "open Cabinet"]
    q = QuerySpec("count", "events", {"kind": "open"})
    after = FilterSpec("moment", "after", "close Fridge", {"event": 1})
    assert evaluate(ep, program(after, query=q))[0].value == "2"
    (g,) = evaluate(ep, program(after, query=QuerySpec("count", "events", {"kind": "open", "subject": "Fridge"})))
    assert g.value == "1"


def test_situated_relations_follow_the_agents_view():
    # agent at the origin facing +x (yaw 90): +z is on its left, -z on its right, farther +x is behind
    pose = np.array([[0, 0, 0, 90, 0]] * 2)
    pos = np.array([[[2, 0, 1.0], [2, 0, -1.0], [2, 0, 0], [3.0, 0, 0]]] * 2)
    ep = tiny_episode(["Cup", "Mug", "Bowl", "Pan"], pos, np.ones((2, 4), bool), pose=pose)

    def ents(spec):
        return [r.entity for g in evaluate(ep, program(spec)) for r in g.result]

    assert ents(FilterSpec("position", "left", "you")) == ["Cup#1"]
    assert ents(FilterSpec("position", "right", "you")) == ["Mug#1"]
    assert ents(FilterSpec("position", "front", "you")) == ["Bowl#1", "Pan#1"]
    assert ents(FilterSpec("position", "left", "Bowl")) == ["Cup#1"]
    assert ents(FilterSpec("position", "behind", "Bowl")) == ["Pan#1"]
    assert ents(FilterSpec("position", "front", "Pan")) == ["Cup#1", "Mug#1", "Bowl#1"]  # all nearer, within 2 m


def test_unseen_observations_are_not_data():
    visible = np.array([[True, False], [False, False]])
    ep = tiny_episode(["Cup", "Cup"], np.zeros((2, 2, 3)), visible, attributes=[{"color": "red"}] * 2)
    (g,) = evaluate(ep, program(FilterSpec("property", "color", "red"), query=QuerySpec("count", "objects")))
    assert g.value == "1"
