"""FILM mode on real test scenes: episodes run end to end, record the parse, and are deterministic."""

from __future__ import annotations

from pathlib import Path

import pytest

from eqagen.generators.household.alfred.catalog import SceneCatalog, build_catalog
from eqagen.generators.household.alfred.failures import FAILURE_MODES
from eqagen.generators.household.alfred.film import FILM_FILES, read_film_parses
from eqagen.generators.household.alfred.runs import film_root, film_stats


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
        m = ep.meta
        assert ep.n_steps <= 251 and m["stop_reason"] in {"success", "max_steps", "max_failures", "plan_finished"}
        assert m["parsed_goal_ok"] == (m["stop_reason"] == "success")
        assert m["success"] == (m["parsed_goal_ok"] and m["parse_with_majority"])  # FILM's judge on a test split
        assert (m["failure_mode"] is None) == m["success"] and m["failure_mode"] in (None, *FAILURE_MODES)
        errors = [e for e in ep.steps.error if e]
        assert m["collisions"] + m["interaction_failures"] <= m["n_failures"] == len(errors)
        if m["failure_mode"] in ("collision", "interaction_failure"):  # the trace: ten failed actions
            assert m["stop_reason"] == "max_failures" and len(errors) >= 10
        if m["failure_mode"] in ("goal_object_not_found", "object_in_closed_receptacle"):
            assert m["stop_reason"] == "max_steps" and m["phase_at_stop"] == "search" and m["sought_at_stop"]
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


@pytest.mark.realdata
def test_every_annotation_runs_and_failure_modes_come_from_mechanisms(tests_seen: Path, layouts: Path,
                                                                      film_dir: Path, catalog_all):  # fmt: skip
    """All annotations of a trajectory run; each failure mode listed is reached by some episode's mechanism."""
    parses = read_film_parses(film_dir / FILM_FILES["tests_seen"])
    runs = [ep for _, ep, _ in film_root(tests_seen, layouts, parses, catalog_all, limit=15, every_annotation=True)]
    assert len({(ep.meta["trajectory"], ep.meta["repeat_idx"]) for ep in runs}) == len(runs) > 45
    modes = {ep.meta["failure_mode"] for ep in runs}
    assert {"goal_object_not_found", "language_processing_error", "collision"} <= modes
    blocked = [e for ep in runs for e in ep.steps.error if "agent blocked" in e]
    assert blocked  # collisions leave AI2-THOR's blocked-move message in the steps


def test_film_takes_a_desk_lamp_for_its_floor_lamp():
    """FILM's parse asks for a FloorLamp; its perception counts a DeskLamp as one (sem_exp_thor.py)."""
    from eqagen.generators.household.alfred.film import FilmParse
    from eqagen.generators.household.alfred.film_run import agent_task, film_lamp

    assert film_lamp({"DeskLamp", "Bed"}) == "DeskLamp"
    assert film_lamp({"DeskLamp", "FloorLamp"}) == film_lamp({"FloorLamp"}) == film_lamp(set()) == "FloorLamp"
    look = FilmParse("k", 5, "Book", "", "", False)
    assert agent_task(look, {"DeskLamp"}).toggle_target == "DeskLamp"
    assert agent_task(FilmParse("k", 2, "Book", "Desk", "", False), {"DeskLamp"}).toggle_target is None


def test_a_wrong_parse_is_charged_only_once_it_comes_into_play():
    """A parse with the wrong receptacle stopped while looking for the right object did not fail for the
    parse; once it acts on the wrong receptacle, or when the object itself is wrong, it did."""
    from types import SimpleNamespace

    from eqagen.generators.household.agent import openable_types, plan_subgoals
    from eqagen.generators.household.alfred.film import FilmParse
    from eqagen.generators.household.alfred.film_run import FILM_AGENT, agent_task, stopped_before_parse_error
    from eqagen.generators.household.objects import catalog

    cat = catalog()
    right = FilmParse("k", 2, "Apple", "Fridge", "", False).goal()

    def agent(obj: str, parent: str, at: int) -> SimpleNamespace:
        plan = plan_subgoals(agent_task(FilmParse("k", 2, obj, parent, "", False), set()), openable_types(cat),
                             None, FILM_AGENT)  # fmt: skip
        return SimpleNamespace(plan=plan, subgoal_index=at, w=SimpleNamespace(cat=cat))

    assert stopped_before_parse_error(agent("Apple", "CounterTop", 0), right)  # still finding the apple
    assert not stopped_before_parse_error(agent("Apple", "CounterTop", 1), right)  # putting it on the counter
    assert not stopped_before_parse_error(agent("Tomato", "Fridge", 0), right)  # looking for the wrong object
    assert not stopped_before_parse_error(agent("Apple", "CounterTop", 0), None)  # no right task known
