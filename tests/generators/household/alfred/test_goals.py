"""ALFRED's goal conditions on hand-built AI2-THOR metadata: each task type satisfied and each condition missing."""

from __future__ import annotations

import pytest

from eqagen.core import UnknownNameError
from eqagen.generators.household.alfred.goals import (
    AlfredGoal,
    AlfredStateTracker,
    goal_conditions_met,
    goal_satisfied,
)


def obj(oid: str, *, pick=False, recep=False, toggle=False, on=False, visible=True, contents=None, parents=None):
    return {
        "objectId": oid, "objectType": oid.split("|")[0], "position": {"x": 0.0, "y": 0.0, "z": 0.0},
        "pickupable": pick, "receptacle": recep, "toggleable": toggle, "isToggled": on, "visible": visible,
        "receptacleObjectIds": contents if recep else None, "parentReceptacles": parents,
    }  # fmt: skip


APPLE, TABLE, PLATE = "Apple|+01.00|+00.90|+00.00", "DiningTable|+01.00|+00.00|+00.00", "Plate|+00.50|+00.90|+00.00"


def md(*objects, held=None):
    return {"objects": list(objects), "inventoryObjects": [{"objectId": held}] if held else []}


def test_place_simple_needs_the_object_in_the_parent():
    g = AlfredGoal("pick_and_place_simple", "Apple", "DiningTable")
    yes = md(obj(APPLE, pick=True), obj(TABLE, recep=True, contents=[APPLE]))
    no = md(obj(APPLE, pick=True), obj(TABLE, recep=True, contents=[]))
    assert goal_conditions_met(g, yes, AlfredStateTracker()) == (1, 1)
    assert goal_conditions_met(g, no, AlfredStateTracker()) == (0, 1)


def test_sliced_target_counts_the_slicing_condition():
    g = AlfredGoal("pick_and_place_simple", "Apple", "DiningTable", sliced=True)
    sl = APPLE + "|AppleSliced_0"
    assert goal_satisfied(g, md(obj(sl, pick=True), obj(TABLE, recep=True, contents=[sl])), AlfredStateTracker())
    # a whole apple in place does not satisfy a sliced-apple goal (ALFRED looks for "AppleSliced")
    assert not goal_satisfied(g, md(obj(APPLE, pick=True), obj(TABLE, recep=True, contents=[APPLE])),
                              AlfredStateTracker())  # fmt: skip


def test_two_objects_must_share_one_receptacle():
    g = AlfredGoal("pick_two_obj_and_place", "Apple", "DiningTable")
    a2 = "Apple|+02.00|+00.90|+00.00"
    t2 = "DiningTable|+03.00|+00.00|+00.00"
    split = md(obj(APPLE, pick=True), obj(a2, pick=True), obj(TABLE, recep=True, contents=[APPLE]),
               obj(t2, recep=True, contents=[a2]))  # fmt: skip
    together = md(obj(APPLE, pick=True), obj(a2, pick=True), obj(TABLE, recep=True, contents=[APPLE, a2]))
    assert goal_conditions_met(g, split, AlfredStateTracker()) == (1, 2)
    assert goal_satisfied(g, together, AlfredStateTracker())


@pytest.mark.parametrize(
    ("task", "which", "action", "appliance"),
    [("pick_heat_then_place_in_recep", "heated", "ToggleObjectOn", "Microwave|+00.00|+01.00|+00.00"),
     ("pick_cool_then_place_in_recep", "cooled", "CloseObject", "Fridge|+00.00|+00.00|+01.00")],
)  # fmt: skip
def test_state_change_tracked_from_the_appliance_and_required(task, which, action, appliance):
    g = AlfredGoal(task, "Apple", "DiningTable")
    tracker = AlfredStateTracker()
    inside = md(obj(APPLE, pick=True), obj(appliance, recep=True, toggle=True, contents=[APPLE]))
    tracker.update({"action": "OpenObject", "objectId": appliance}, True, inside)
    assert getattr(tracker, which) == set()
    tracker.update({"action": action, "objectId": appliance}, False, inside)  # failed actions change nothing
    assert getattr(tracker, which) == set()
    placed = md(obj(APPLE, pick=True), obj(TABLE, recep=True, contents=[APPLE]))
    assert goal_conditions_met(g, placed, tracker) == (1, 3)
    tracker.update({"action": action, "objectId": appliance}, True, inside)
    assert getattr(tracker, which) == {APPLE}
    assert goal_satisfied(g, placed, tracker)


def test_faucet_cleans_what_is_in_the_nearest_basin():
    near = {**obj("Sink|+00.00|+00.90|+00.00|SinkBasin", recep=True, contents=[APPLE]), "objectType": "SinkBasin"}
    far = {**obj("Sink|+05.00|+00.90|+00.00|SinkBasin", recep=True, contents=["Mug|1|1|1"]), "objectType": "SinkBasin"}
    far["position"] = {"x": 5.0, "y": 0.9, "z": 0.0}
    faucet = obj("Faucet|+00.00|+01.00|+00.10", toggle=True)
    tracker = AlfredStateTracker()
    tracker.update({"action": "ToggleObjectOn", "objectId": faucet["objectId"]}, True, md(near, far, faucet))
    assert tracker.cleaned == {APPLE}


def test_look_in_light_needs_object_held_and_a_visible_lamp_on():
    g = AlfredGoal("look_at_obj_in_light", "Apple", toggle_target="DeskLamp")
    lamp = "DeskLamp|+01.00|+00.80|+01.00"
    assert goal_satisfied(
        g, md(obj(APPLE, pick=True), obj(lamp, toggle=True, on=True), held=APPLE), AlfredStateTracker()
    )
    assert not goal_satisfied(g, md(obj(APPLE, pick=True), obj(lamp, toggle=True, on=True)), AlfredStateTracker())
    off = md(obj(APPLE, pick=True), obj(lamp, toggle=True, on=False), held=APPLE)
    hidden = md(obj(APPLE, pick=True), obj(lamp, toggle=True, on=True, visible=False), held=APPLE)
    assert goal_conditions_met(g, off, AlfredStateTracker()) == (1, 2)
    assert goal_conditions_met(g, hidden, AlfredStateTracker()) == (1, 2)


def test_movable_receptacle_stack_must_be_in_the_parent():
    g = AlfredGoal("pick_and_place_with_movable_recep", "Apple", "DiningTable", mrecep_target="Plate")
    plate_on = obj(PLATE, pick=True, recep=True, contents=[APPLE], parents=[TABLE])
    ok = md(obj(APPLE, pick=True, parents=[PLATE, TABLE]), plate_on, obj(TABLE, recep=True, contents=[PLATE]))
    assert goal_conditions_met(g, ok, AlfredStateTracker()) == (3, 3)
    plate_off = obj(PLATE, pick=True, recep=True, contents=[APPLE], parents=None)
    loose = md(obj(APPLE, pick=True), plate_off, obj(TABLE, recep=True, contents=[]))
    assert goal_conditions_met(g, loose, AlfredStateTracker()) == (1, 3)


def test_name_matching_is_alfreds_substring_match():
    # ALFRED matches by substring of the objectId: a ButterKnife counts for a "Knife" target.
    g = AlfredGoal("pick_and_place_simple", "Knife", "DiningTable")
    bk = "ButterKnife|+01.00|+00.90|+00.00"
    assert goal_satisfied(g, md(obj(bk, pick=True), obj(TABLE, recep=True, contents=[bk])), AlfredStateTracker())


def test_unknown_task_type_and_pddl_forms():
    with pytest.raises(UnknownNameError):
        AlfredGoal("pick_three", "Apple")
    a = AlfredGoal.from_pddl(
        "pick_and_place_simple", {"object_target": "Apple", "parent_target": "", "object_sliced": True}
    )
    b = AlfredGoal.from_pddl("pick_and_place_simple", {"object_target": "Apple", "parent_target": None, "sliced": 1})
    assert a == b and a.target_object == "AppleSliced"
