"""ALFRED's task goals, checked the way ALFRED's ``env/tasks.py`` checks them, over AI2-THOR metadata.

Each of the seven task types counts goal conditions met out of the total; the goal holds when all are
met. The state is an AI2-THOR metadata dict (``objects`` with ``objectId``, ``pickupable``,
``receptacle``, ``toggleable``, ``isToggled``, ``visible``, ``receptacleObjectIds``,
``parentReceptacles``; ``inventoryObjects``), so the same checker judges our household world (through
its metadata export) and a real AI2-THOR event. As in ALFRED, a target matches every object whose
objectId *contains* the target name (so ``Knife`` also matches ``ButterKnife``), and heated, cooled and
cleaned are not object states but sets the environment keeps (:class:`AlfredStateTracker`):
toggling a microwave on heats what is inside, closing a fridge cools what is inside, turning a faucet
on cleans what is in the nearest sink basin.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from eqagen.core import UnknownNameError
from eqagen.generators.household.alfred.reader import TASK_TYPES

Metadata = dict[str, Any]


@dataclass(frozen=True)
class AlfredGoal:
    task_type: str
    object_target: str
    parent_target: str = ""
    mrecep_target: str = ""
    toggle_target: str = ""
    sliced: bool = False

    def __post_init__(self) -> None:
        if self.task_type not in TASK_TYPES:
            raise UnknownNameError("ALFRED task type", self.task_type, TASK_TYPES)

    @property
    def names(self) -> tuple[str, ...]:
        """Every name the goal conditions match objectIds against."""
        return tuple(n for n in (self.object_target, self.parent_target, self.mrecep_target, self.toggle_target) if n)

    @property
    def target_object(self) -> str:
        """The pickup target: ``Apple`` becomes ``AppleSliced`` when the task wants it sliced."""
        return self.object_target + "Sliced" if self.sliced else self.object_target

    @classmethod
    def from_pddl(cls, task_type: str, params: dict[str, Any]) -> AlfredGoal:
        """From ``pddl_params`` (``object_sliced``) or a FILM parse (``sliced``), "" or None for unset."""

        def get(key: str) -> str:
            return str(params.get(key) or "")

        sliced = bool(params.get("object_sliced", params.get("sliced", False)))
        return cls(
            task_type, get("object_target"), get("parent_target"), get("mrecep_target"), get("toggle_target"), sliced
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "task_type": self.task_type,
            "object_target": self.object_target,
            "parent_target": self.parent_target,
            "mrecep_target": self.mrecep_target,
            "toggle_target": self.toggle_target,
            "object_sliced": self.sliced,
        }


@dataclass
class AlfredStateTracker:
    """The heated / cooled / cleaned sets ALFRED's environment keeps, updated after each successful action."""

    heated: set[str] = field(default_factory=set)
    cooled: set[str] = field(default_factory=set)
    cleaned: set[str] = field(default_factory=set)

    def update(self, action: dict[str, Any], success: bool, metadata: Metadata) -> None:
        if not success:
            return
        name, oid = action.get("action", ""), str(action.get("objectId", ""))
        if name == "ToggleObjectOn" and "Faucet" in oid:
            basin = _closest_of_type(metadata, "SinkBasin", oid)
            self.cleaned |= set((basin or {}).get("receptacleObjectIds") or [])
        elif name == "ToggleObjectOn" and "Microwave" in oid:
            self.heated |= _contents_of_first(metadata, "Microwave")
        elif name == "CloseObject" and "Fridge" in oid:
            self.cooled |= _contents_of_first(metadata, "Fridge")


def _objects_of_type(metadata: Metadata, object_type: str) -> list[dict[str, Any]]:
    return [o for o in metadata["objects"] if o["objectType"] == object_type]


def _contents_of_first(metadata: Metadata, object_type: str) -> set[str]:
    found = _objects_of_type(metadata, object_type)
    return set(found[0].get("receptacleObjectIds") or []) if found else set()


def _closest_of_type(metadata: Metadata, object_type: str, object_id: str) -> dict[str, Any] | None:
    anchor = next((o for o in metadata["objects"] if o["objectId"] == object_id), None)
    found = _objects_of_type(metadata, object_type)
    if anchor is None or not found:
        return None
    a = anchor["position"]
    return min(found, key=lambda o: sum((o["position"][k] - a[k]) ** 2 for k in "xyz"))


def with_name_and_prop(metadata: Metadata, name: str, prop: str) -> list[dict[str, Any]]:
    """ALFRED's match: the name is a substring of the objectId and the property holds."""
    if not name:
        return []
    return [o for o in metadata["objects"] if name in o["objectId"] and o.get(prop)]


def _contains(receptacle: dict[str, Any], object_id: str) -> bool:
    return object_id in (receptacle.get("receptacleObjectIds") or [])


def _sliced_condition(goal: AlfredGoal, pickupables: list[dict[str, Any]], need: int) -> tuple[int, int]:
    if "Sliced" not in goal.target_object:
        return 0, 0
    return min(sum("Sliced" in p["objectId"] for p in pickupables), need), need


def _in_place(pickupables: list[dict[str, Any]], receptacles: list[dict[str, Any]]) -> list[str]:
    return [p["objectId"] for p in pickupables for r in receptacles if _contains(r, p["objectId"])]


def _place(goal: AlfredGoal, md: Metadata, _tracker: AlfredStateTracker) -> tuple[int, int]:
    recs = with_name_and_prop(md, goal.parent_target, "receptacle")
    picks = with_name_and_prop(md, goal.target_object, "pickupable")
    s, ts = _sliced_condition(goal, picks, 1)
    return s + int(bool(_in_place(picks, recs))), ts + 1


def _place_two(goal: AlfredGoal, md: Metadata, _tracker: AlfredStateTracker) -> tuple[int, int]:
    recs = with_name_and_prop(md, goal.parent_target, "receptacle")
    picks = with_name_and_prop(md, goal.target_object, "pickupable")
    s, ts = _sliced_condition(goal, picks, 2)
    best = max((sum(_contains(r, p["objectId"]) for p in picks) for r in recs), default=0)
    return s + min(best, 2), ts + 2


def _look_in_light(goal: AlfredGoal, md: Metadata, _tracker: AlfredStateTracker) -> tuple[int, int]:
    lamps = with_name_and_prop(md, goal.toggle_target, "toggleable")
    picks = with_name_and_prop(md, goal.target_object, "pickupable")
    s, ts = _sliced_condition(goal, picks, 1)
    inventory = md.get("inventoryObjects") or []
    held = bool(inventory) and inventory[0]["objectId"] in {p["objectId"] for p in picks}
    lit = any(t.get("isToggled") and t.get("visible") for t in lamps)
    return s + int(held) + int(lit), ts + 2


def _place_with_state(goal: AlfredGoal, md: Metadata, changed: set[str]) -> tuple[int, int]:
    recs = with_name_and_prop(md, goal.parent_target, "receptacle")
    picks = with_name_and_prop(md, goal.target_object, "pickupable")
    s, ts = _sliced_condition(goal, picks, 1)
    placed = _in_place(picks, recs)
    done = [p["objectId"] for p in picks if p["objectId"] in changed]
    return s + int(bool(placed)) + int(bool(done)) + int(any(o in done for o in placed)), ts + 3


def _movable_recep(goal: AlfredGoal, md: Metadata, _tracker: AlfredStateTracker) -> tuple[int, int]:
    recs = with_name_and_prop(md, goal.parent_target, "receptacle")
    picks = with_name_and_prop(md, goal.target_object, "pickupable")
    movs = with_name_and_prop(md, goal.mrecep_target, "pickupable")
    s, ts = _sliced_condition(goal, picks, 1)
    pick_in = any(_contains(m, p["objectId"]) for p in picks for m in movs)
    mov_in = any(_contains(r, m["objectId"]) for m in movs for r in recs)
    stacked = any(
        any(_contains(m, p["objectId"]) for p in picks)
        and any(r["objectId"] in (m.get("parentReceptacles") or []) for r in recs)
        for m in movs
    )
    return s + int(pick_in) + int(mov_in) + int(stacked), ts + 3


def goal_conditions_met(goal: AlfredGoal, metadata: Metadata, tracker: AlfredStateTracker) -> tuple[int, int]:
    """(conditions met, conditions in total) for the goal in this state."""
    t = goal.task_type
    if t == "pick_heat_then_place_in_recep":
        return _place_with_state(goal, metadata, tracker.heated)
    if t == "pick_cool_then_place_in_recep":
        return _place_with_state(goal, metadata, tracker.cooled)
    if t == "pick_clean_then_place_in_recep":
        return _place_with_state(goal, metadata, tracker.cleaned)
    checks = {
        "pick_and_place_simple": _place,
        "pick_two_obj_and_place": _place_two,
        "look_at_obj_in_light": _look_in_light,
        "pick_and_place_with_movable_recep": _movable_recep,
    }
    return checks[t](goal, metadata, tracker)


def goal_satisfied(goal: AlfredGoal, metadata: Metadata, tracker: AlfredStateTracker) -> bool:
    met, total = goal_conditions_met(goal, metadata, tracker)
    return met == total
