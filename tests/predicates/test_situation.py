"""The situational filter: a configuration the agent saw selects the steps it saw it at, and the query runs on
what was seen then (docs/questions.md, "Situational filters: configurations that select steps")."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.core import FilterSpec, Program, QuerySpec, derive_rng
from eqagen.predicates import QuestionConfig
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.evaluator import evaluate_raw
from eqagen.predicates.registry import Anchored, selection
from eqagen.predicates.situation import situation_values
from eqagen.predicates.validity import violations
from eqagen.templates.records import sample_questions
from tests.predicates.conftest import make_episode, tiny_episode
from tests.predicates.helpers import comparable
from tests.predicates.reference import Plain, reference_answer

LIST = QuerySpec("listObjects")


def turning_room() -> EpisodeContext:
    """A chair left of a dining table, a cup just ahead and an apple aside; the agent faces them for steps 0-2
    (the chair hidden at step 1), then turns round (yaw 180) for steps 3-5: left and right swap, the cup is
    behind. The apple and the cup are hidden at steps 3-5."""
    types = ["Chair", "DiningTable", "Cup", "Apple"]
    pos = np.tile(np.array([[-0.5, 0.0, 2.0], [0.5, 0.0, 2.0], [0.0, 0.0, 1.0], [2.5, 0.0, 2.0]]), (6, 1, 1))
    visible = np.ones((6, 4), dtype=bool)
    visible[1, 0] = False
    visible[3:, 2:] = False
    pose = np.zeros((6, 5))
    pose[3:, 3] = 180.0
    caps = [(), ("receptacle",), ("pickupable",), ("pickupable",)]
    return EpisodeContext(tiny_episode(types, pos, visible, pose=pose, capabilities=caps))


def steps_of(sel) -> list[int]:
    """The steps a situation's selection keeps (it keeps every entity at them)."""
    mask = sel.masks[0] if isinstance(sel, Anchored) else sel
    assert (mask == mask[:, :1]).all(), "a situation keeps whole steps"
    return np.flatnonzero(mask[:, 0]).tolist()


def test_selection_is_the_steps_the_configuration_was_seen():
    ctx = turning_room()
    left = FilterSpec("situation", "left", "DiningTable", {"figure": "Chair"})
    right = FilterSpec("situation", "right", "DiningTable", {"figure": "Chair"})
    cup_ahead = FilterSpec("situation", "front", "you", {"figure": "Cup"})
    assert steps_of(selection(ctx, left)) == [0, 2]  # step 1: the chair was not seen
    assert steps_of(selection(ctx, right)) == [3, 4, 5]
    assert steps_of(selection(ctx, cup_ahead)) == [0, 1, 2]
    # the query runs on what was seen at those steps: the apple, seen at 0-2 only, is there with the chair
    # left of the table, never with it on the right
    (group,) = evaluate_raw(ctx, Program((left,), LIST))
    assert group.value == "Apple, Chair, Cup, DiningTable"
    (group,) = evaluate_raw(ctx, Program((right,), LIST))
    assert group.value == "Chair, DiningTable"


def test_values_name_landmarks_against_each_other_and_anything_against_you():
    ctx = turning_room()
    left = {(s.args["figure"], s.value) for s in situation_values(ctx, "left")}
    assert ("Chair", "DiningTable") in left  # two things that stay where they are
    assert not {g for f, g in left if g in ("Cup", "Apple")}, "a thing one picks up names no place"
    assert ("Apple", "you") in {(s.args["figure"], s.value) for s in situation_values(ctx, "right")}
    assert not [s for s in situation_values(ctx, "behind") if s.value == "you"]


def test_parts_of_furniture_name_no_place():
    """ "a desk in front of the drawer" reads as the desk's own drawer: a drawer is no landmark."""
    types = ["Desk", "Drawer", "Bed"]
    pos = np.tile(np.array([[-0.5, 0.0, 2.0], [0.0, 0.0, 2.5], [0.5, 0.0, 2.0]]), (2, 1, 1))
    ctx = EpisodeContext(tiny_episode(types, pos, np.ones((2, 3), dtype=bool)))
    pairs = {(s.args["figure"], s.value) for key in ("left", "right", "front") for s in situation_values(ctx, key)}
    assert ("Desk", "Bed") in pairs and ("Bed", "Desk") in pairs
    assert not {p for p in pairs if "Drawer" in p and "you" not in p}
    assert ("Drawer", "you") in pairs


def test_moment_and_situation_both_admit_the_steps_a_position_relation_is_read_at():
    """indefinite_moment reads the opposite relation only at the steps the situation admits: the chair is left
    of the table while the cup is ahead of you, and right of it once you turned round."""
    ctx = turning_room()
    chair_left = FilterSpec("position", "left", "DiningTable")
    cup_ahead = FilterSpec("situation", "front", "you", {"figure": "Cup"})
    assert "indefinite_moment" in violations(ctx, Program((chair_left,), LIST))
    assert "indefinite_moment" not in violations(ctx, Program((chair_left, cup_ahead), LIST))


def test_figures_name_themselves_in_trivial_answers():
    """ "When a chair was right of the dining table, which objects did you see?" -- "A chair and a dining table."
    tells nothing the question did not name."""
    ctx = turning_room()
    right = FilterSpec("situation", "right", "DiningTable", {"figure": "Chair"})
    assert "trivial_answer" in violations(ctx, Program((right,), LIST))


def relation_steps(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray:
    """Bool ``[G, T]``: per instance of the ground (one row for you), the steps at which the position filter of
    the same key and ground kept some object of the figure's type (it holds only where both were seen)."""
    sel = selection(ctx, FilterSpec("position", spec.key, spec.value))
    masks = sel.masks if isinstance(sel, Anchored) else sel[None]
    return (masks & ctx.of_type(spec.args["figure"])[None, None, :]).any(axis=2)


@settings(max_examples=12, deadline=None)
@given(seed=st.integers(0, 10_000), pick=st.integers(0, 1_000))
def test_steps_are_the_position_relations_and_the_answer_is_the_query_on_them(seed, pick):
    ctx = EpisodeContext(make_episode(seed, 30))
    specs = [s for key in ("left", "right", "front", "behind") for s in situation_values(ctx, key)]
    if not specs:
        return
    spec = specs[pick % len(specs)]
    sel = selection(ctx, spec)
    masks = sel.masks if isinstance(sel, Anchored) else sel[None]
    steps = relation_steps(ctx, spec)
    assert np.array_equal(masks, np.repeat(steps[:, :, None], ctx.N, axis=2))
    assert steps.any(), "a listed value holds somewhere"
    groups = evaluate_raw(ctx, Program((spec,), LIST))
    want = [np.flatnonzero(ctx.data[row].any(axis=0)) for row in steps]
    got = {g.anchor: g.entities.tolist() for g in groups}
    anchors = sel.anchors.tolist() if isinstance(sel, Anchored) and len(sel) >= 2 else [-1]
    assert got == {a: w.tolist() for a, w in zip(anchors, want) if w.size}


def test_sampled_situation_questions_agree_with_the_reference():
    """Questions the sampler makes with a situational filter, answered by the plain reference evaluator."""
    config = QuestionConfig(questions_per_episode=24, family_mix={"situation": 0.5, "property": 0.25, "state": 0.25})
    checked = 0
    for seed in range(4):
        ep = make_episode(seed, 30)
        records, _ = sample_questions(ep, config, derive_rng(seed, "questions", ep.episode_id))
        plain = Plain(ep)
        for rec in records:
            if rec.grounded or not any(f.family == "situation" for f in rec.program.filters):
                continue
            assert comparable(rec.structured_answer) == reference_answer(ep, rec.program, plain), rec.question
            checked += 1
    assert checked >= 10
