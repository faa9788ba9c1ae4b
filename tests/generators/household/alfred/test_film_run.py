"""FILM mode on real test scenes: episodes run end to end, record the parse, and are deterministic."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqagen.generators.household.alfred.catalog import SceneCatalog, build_catalog
from eqagen.generators.household.alfred.film import FILM_FILES, read_film_parses
from eqagen.generators.household.alfred.film_run import count_loops
from eqagen.generators.household.alfred.runs import film_root, film_stats


def test_count_loops_counts_returns_to_a_pose():
    import numpy as np

    a, b = [0, 0, 0, 0, 0], [0.25, 0, 0, 0, 0]
    assert count_loops(np.array([a, b] * 5)) == 2  # both poses re-entered five times
    assert count_loops(np.array([a] * 20)) == 0  # standing still is not a loop
    assert count_loops(np.array([a, b, a, b])) == 0


@pytest.fixture(scope="module")
def catalog_all(alfred_root: Path, layouts: Path) -> SceneCatalog:
    return SceneCatalog(build_catalog(alfred_root / "json_2.1.0", layouts))


@pytest.mark.realdata
def test_film_mode_on_tests_seen_sample(tests_seen: Path, layouts: Path, film_dir: Path, catalog_all):
    parses = read_film_parses(film_dir / FILM_FILES["tests_seen"])
    runs = list(film_root(tests_seen, layouts, parses, catalog_all, seed=3, max_steps=250, limit=12))
    assert len(runs) == 12 and all(ep is not None for _, ep, _ in runs)
    for rel, ep, _ in runs:
        assert ep.meta["mode"] == "film" and ep.meta["trajectory"] == rel and ep.meta["instruction"]
        assert ep.meta["film_parse"]["task_type"] == ep.task["task_type"]
        assert ep.meta["parse_matches_task"] is None  # the test split publishes no task
        assert ep.n_steps <= 251 and ep.meta["stop_reason"] in {"success", "max_steps", "max_failures", "plan_finished"}
        assert ep.meta["success"] == (ep.meta["stop_reason"] == "success")
    stats = film_stats([ep.meta | {"n_steps": ep.n_steps} for _, ep, _ in runs])
    assert stats["episodes_run"] == 12 and stats["parse_accuracy"] is None
    assert 0.0 <= stats["failure_rate"] == pytest.approx(1 - stats["task_success_rate"])
    again = list(film_root(tests_seen, layouts, parses, catalog_all, seed=3, max_steps=250, limit=2))
    assert [ep.to_dict() for _, ep, _ in again] == [ep.to_dict() for _, ep, _ in runs[:2]]


@pytest.mark.realdata
def test_film_mode_on_valid_seen_judges_parse_and_true_goal(valid_seen: Path, layouts: Path, film_dir: Path,
                                                             catalog_all):  # fmt: skip
    parses = read_film_parses(film_dir / FILM_FILES["valid_seen"])
    runs = [ep for _, ep, _ in film_root(valid_seen, layouts, parses, catalog_all, seed=0, limit=10)]
    assert all(isinstance(ep.meta["parse_matches_task"], bool) for ep in runs)
    for ep in runs:  # with a matching parse, the agent's own success is the true task's success
        if ep.meta["parse_matches_task"] and ep.task["task_type"] != "look_at_obj_in_light":
            assert ep.meta["true_goal_ok"] == ep.meta["success"]
