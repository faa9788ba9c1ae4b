"""The household/alfred backend through the registry, and questions on ALFRED episodes through the engine."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqagen.core import ConfigError, Episode
from eqagen.generators import get_backend


@pytest.fixture
def env(realdata: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("EQAGEN_REALDATA", str(realdata))
    return realdata


@pytest.mark.realdata
def test_film_plan_covers_the_split_then_next_annotations(env: Path):
    backend = get_backend("household", "alfred")
    specs = backend.plan(490, 0, {"max_steps": 60})
    assert len(specs) == 490 and len({s.params["trajectory"] for s in specs}) == 483
    assert [s.params["repeat_idx"] for s in specs[483:]] == [1] * 7
    every = backend.plan(1533, 0, {})  # FILM's evaluation: every annotation of tests_seen, each once
    assert len({(s.params["trajectory"], s.params["repeat_idx"]) for s in every}) == 1533
    assert max(s.params["repeat_idx"] for s in every) == 5
    assert all(s.scene_id.startswith("FloorPlan") for s in specs)
    ep = backend.run(specs[0])
    assert ep.backend == "alfred" and ep.scene_id == specs[0].scene_id and ep.n_steps <= 61
    assert backend.run(specs[0]).to_dict() == ep.to_dict()


@pytest.mark.realdata
def test_expert_plan_stops_at_the_trajectories(env: Path):
    backend = get_backend("household", "alfred")
    specs = backend.plan(1000, 0, {"mode": "expert", "split": "valid_seen"})
    assert len(specs) == 251
    ep = backend.run(specs[0])
    assert ep.meta["mode"] == "expert" and ep.meta["goal_ok"]


def test_bad_params_name_the_key():
    with pytest.raises(ConfigError, match=r"household\.mode"):
        get_backend("household", "alfred").plan(1, 0, {"mode": "teleport"})


@pytest.mark.realdata
def test_questions_on_alfred_episodes_pass_the_engine_checks(env: Path):
    """The same checks as on embedded episodes: every validity rule holds, answers recomputable from the record."""
    import numpy as np

    from eqagen.core import derive_rng
    from eqagen.predicates import QuestionConfig, context_for
    from eqagen.predicates.evaluator import evaluate_raw
    from eqagen.predicates.sampler import sample_programs
    from eqagen.predicates.validity import violations
    from eqagen.templates.answers import evaluate

    backend = get_backend("household", "alfred")
    specs = backend.plan(2, 0, {"mode": "expert", "split": "valid_seen"}) + backend.plan(2, 0, {"max_steps": 120})
    n_programs = 0
    for spec in specs:
        ep = backend.run(spec)
        ctx = context_for(ep)
        accepted, _ = sample_programs(ctx, QuestionConfig(), derive_rng(0, "questions", ep.episode_id))
        back = Episode.from_dict(ep.to_dict())
        for acc in accepted:
            program = acc.program
            assert evaluate_raw(ctx, program)
            assert violations(ctx, program) == [], program.signature()
            assert [g.to_dict() for g in evaluate(back, program)] == [g.to_dict() for g in evaluate(ep, program)]
            n_programs += 1
        assert np.isfinite(ep.steps.pose).all()
    assert n_programs > 0
