"""TAG-EQA's retrieval API over a history: the filters return what the history says, offline and in order."""

from __future__ import annotations

import math

from eqagen.outputs.history import episode_history
from eqagen.outputs.retrieval import (
    filter_by_position,
    filter_by_semantic_similarity,
    observations,
    word_similarity,
)
from tests.outputs.model_fixtures import episodes_and_records


def household_history() -> dict:
    ep = next(e for e in episodes_and_records()[0] if e.family == "household")
    return episode_history(ep)


def test_word_similarity_splits_types_and_ignores_case():
    assert word_similarity("counter top", "gray stone CounterTop") > 0.5
    assert word_similarity("fridge", "white metal Fridge") > 0.5
    assert word_similarity("fridge", "red plastic Cup") == 0.0
    assert word_similarity("", "cup") == 0.0


def test_semantic_filter_finds_every_observation_of_a_type_and_ranks_exact_captions_first():
    history = household_history()
    every = list(observations(history))
    target = every[len(every) // 2]
    kind = next(o["type"] for o in history["objects"] if o["id"] == target.id)
    hits = filter_by_semantic_similarity(history, kind, threshold=0.3)
    same_type = {(o.t, o.id) for o in every if o.id.split("#")[0] == kind}
    assert same_type <= {(o.t, o.id) for o in hits}
    best = filter_by_semantic_similarity(history, target.caption, threshold=0.99)
    assert (target.t, target.id) in {(o.t, o.id) for o in best}
    assert all(word_similarity(target.caption, o.caption) >= 0.99 for o in best)
    assert hits == filter_by_semantic_similarity(history, kind, threshold=0.3)  # deterministic


def test_position_filter_keeps_the_steps_within_one_step_length():
    history = household_history()
    pose = history["steps"][len(history["steps"]) // 2]["pose"]
    here = (pose["x"], pose["y"], pose["z"])
    hits = filter_by_position(history, here)
    expected = [o for o in observations(history) if math.hypot(o.agent[0] - here[0], o.agent[2] - here[2]) <= 0.25]
    assert hits == expected and len(hits) > 0
    far = filter_by_position(history, (here[0] + 0.3, here[1], here[2]))
    assert all(math.hypot(o.agent[0] - here[0] - 0.3, o.agent[2] - here[2]) <= 0.25 for o in far)
