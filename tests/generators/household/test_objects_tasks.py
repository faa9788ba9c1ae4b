"""The object catalog (AI2-THOR / ALFRED facts), ALFRED task validation, sampling and goal checks."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from eqagen.core import DataFileError, TaskError, UnknownNameError, derive_rng
from eqagen.generators.household.backend import HouseholdParams, episode_of, home_for, simulate
from eqagen.generators.household.homes import make_home
from eqagen.generators.household.objects import CAPABILITIES, build_catalog, catalog, markdown_table
from eqagen.generators.household.tasks import TASK_TYPES, AlfredTask, sample_task, validate_task


def test_catalog_facts_from_ai2thor_and_alfred():
    cat = catalog()
    # ALFRED's VAL_RECEPTACLE_OBJECTS
    assert cat.can_hold("CoffeeMachine", "Mug") and cat.holds["CoffeeMachine"] == frozenset({"Mug"})
    assert cat.can_hold("Fridge", "Apple") and not cat.can_hold("Fridge", "Knife")
    assert cat.can_hold("Toaster", "BreadSliced") and not cat.can_hold("Toaster", "Bread")
    assert cat.holds["DiningTable"] == cat.holds["CoffeeTable"] == cat.holds["CounterTop"]
    # AI2-THOR object types and ALFRED's action sets
    assert cat.get("Fridge").can("openable") and cat.get("Fridge").can("cold_source")
    assert cat.get("Microwave").can("heat_source") and cat.get("Microwave").can("toggleable")
    assert cat.get("Apple").can("sliceable") and cat.get("Apple").can("heatable")
    assert not cat.get("Fork").can("heatable") and cat.get("Fork").can("cleanable")
    assert cat.slices["Apple"][0] == "AppleSliced" and cat.slices["Egg"][0] == "EggCracked"
    assert cat.get("Knife").utility == "cutting food"
    for t in cat.types:
        assert set(t.capabilities) <= set(CAPABILITIES) and t.source and t.colors and t.materials
    # a few types (Cart, Glassbottle) appear only in real ALFRED scenes: no procedural room uses them
    assert sum(1 for t in cat.types if t.rooms) >= 95
    # the compatibility matrix agrees with the lookup
    i, j = cat.index["Fridge"], cat.index["Apple"]
    assert cat.compatible[i, j] and cat.compatible.sum() == sum(len(v) for v in cat.holds.values())
    assert "| Fridge |" in markdown_table(cat)


def test_unknown_object_type_and_bad_data_file(tmp_path):
    with pytest.raises(UnknownNameError, match="unknown object type 'Spaceship'"):
        catalog().get("Spaceship")
    rules = tmp_path / "rules.json"
    rules.write_text('{"groups": {}, "receptacles": {"Fridge": ["Unicorn"]}, "action_objects": {}, "slices": {}}')
    with pytest.raises(DataFileError, match="Unicorn"):
        build_catalog(rules_file=rules)


def test_task_validation_names_what_is_wrong():
    with pytest.raises(UnknownNameError, match="ALFRED task type 'pick_and_juggle'"):
        validate_task(AlfredTask("pick_and_juggle", "Apple", "Fridge"))
    with pytest.raises(UnknownNameError, match="'Applle'"):
        validate_task(AlfredTask("pick_and_place_simple", "Applle", "Fridge"))
    with pytest.raises(UnknownNameError, match="parent_target"):
        validate_task(AlfredTask("pick_and_place_simple", "Apple", "Fridgee"))
    impossible = [
        (AlfredTask("pick_and_place_simple", "Knife", "Fridge"), "Fridge cannot hold Knife"),
        (AlfredTask("pick_heat_then_place_in_recep", "Fork", "CounterTop"), "Fork is not heatable"),
        (AlfredTask("pick_and_place_simple", "CounterTop", "Fridge"), "cannot be picked up"),
        (AlfredTask("pick_and_place_simple", "Fork", "DiningTable", object_sliced=True), "not sliceable"),
        (AlfredTask("look_at_obj_in_light", "Book", toggle_target="Television"), "not one of"),
        (AlfredTask("pick_and_place_with_movable_recep", "Apple", "Fridge", "Fork"), "not a movable receptacle"),
        (AlfredTask("pick_and_place_simple", "Apple"), "needs ['parent_target']"),
    ]
    for task, message in impossible:
        with pytest.raises(TaskError, match=message.replace("[", r"\[").replace("]", r"\]")):
            validate_task(task)
    with pytest.raises(TaskError, match="not ALFRED task parameters"):
        AlfredTask.from_dict({"task_type": "pick_and_place_simple", "object_target": "Apple", "colour": "red"})


def test_task_needs_its_objects_in_the_scene():
    scene = make_home("bathroom", 3, 0)
    with pytest.raises(TaskError, match=r"no \['Apple', 'Fridge'\] in the scene"):
        validate_task(AlfredTask("pick_and_place_simple", "Apple", "Fridge"), scene)


def test_sampled_tasks_are_valid_for_their_room_kind():
    seen = set()
    for k in range(200):
        if len(seen) == len(TASK_TYPES):
            break
        scene = make_home(("kitchen", "living_room", "bedroom", "bathroom")[k % 4], 5, k)
        task = sample_task(scene, derive_rng(5, "test-task", k))
        validate_task(task, scene)
        seen.add(task.task_type)
        if task.task_type in ("pick_heat_then_place_in_recep", "pick_cool_then_place_in_recep"):
            assert scene.room_kind == "kitchen"
    assert len(seen) == len(TASK_TYPES)


def _moved_into(ep, types_child, types_parent, t) -> np.ndarray:
    parent = ep.timeline.field("parent")[t]
    exists = ep.timeline.field("exists")[t]
    typ = np.array(ep.entities.type)
    ok = np.isin(typ, types_child) & exists & (parent >= 0)
    return np.flatnonzero(ok & np.isin(typ[np.maximum(parent, 0)], types_parent))


def test_goal_checker_agrees_with_the_recorded_final_state():
    """Success recomputed from the episode record alone, per task type."""
    checked = 0
    for i in range(80):
        world, agent = simulate(home_for(f"kitchen-21-{i % 20}"), 500 + i, i, HouseholdParams())
        ep = episode_of(world, agent, 500 + i, i)
        task = agent.task
        moved = task.moved_type()
        t = ep.n_steps - 1
        if task.task_type == "look_at_obj_in_light":
            continue
        if task.task_type == "pick_and_place_with_movable_recep":
            m = _moved_into(ep, [task.mrecep_target], [task.parent_target], t)
            inside = _moved_into(ep, [moved], [task.mrecep_target], t)
            parent = ep.timeline.field("parent")[t]
            ok = any(parent[j] in set(m.tolist()) for j in inside)
        else:
            inside = _moved_into(ep, [moved], [task.parent_target], t)
            kind = {"pick_clean_then_place_in_recep": "clean", "pick_heat_then_place_in_recep": "heat",
                    "pick_cool_then_place_in_recep": "cool"}.get(task.task_type)  # fmt: skip
            if kind:
                done = {e.entity for e in ep.events if e.kind == kind}
                inside = [j for j in inside if j in done]
            ok = len(inside) >= (2 if task.task_type == "pick_two_obj_and_place" else 1)
        assert ok == ep.meta["success"], (ep.episode_id, ep.task, ep.meta)
        checked += 1
    assert checked > 50


def test_docs_carry_the_current_object_table():
    doc = Path(__file__).resolve().parents[3] / "docs" / "household.md"
    assert markdown_table() in doc.read_text(), (
        "regenerate the table in docs/household.md from objects.markdown_table()"
    )
