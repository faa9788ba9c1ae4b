"""ALFRED's seven task types: parameters, validation, sampling and goal checking.

A task names object *types* (as ALFRED's ``pddl_params`` do): ``object_target`` (what to move),
``parent_target`` (where it must end up), ``mrecep_target`` (the movable receptacle of
pick_and_place_with_movable_recep), ``toggle_target`` (the lamp of look_at_obj_in_light) and
``object_sliced`` (the object must be sliced first). :func:`validate_task` rejects unknown names with
:class:`~eqagen.core.UnknownNameError` and impossible parameters with :class:`~eqagen.core.TaskError`.
:class:`GoalChecker` evaluates ALFRED's goal conditions vectorised on a world's arrays.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from eqagen.core import TaskError, UnknownNameError
from eqagen.generators.household.objects import Catalog, catalog
from eqagen.generators.household.scene import HouseholdScene

TASK_TYPES = (
    "pick_and_place_simple",
    "pick_two_obj_and_place",
    "look_at_obj_in_light",
    "pick_clean_then_place_in_recep",
    "pick_heat_then_place_in_recep",
    "pick_cool_then_place_in_recep",
    "pick_and_place_with_movable_recep",
)
# ALFRED gen/constants.py GOALS_VALID: the room kinds where ALFRED generated each task type.
GOALS_VALID = {
    "pick_and_place_simple": ("kitchen", "living_room", "bathroom", "bedroom"),
    "pick_two_obj_and_place": ("kitchen", "living_room", "bathroom", "bedroom"),
    "look_at_obj_in_light": ("living_room", "bedroom"),
    "pick_clean_then_place_in_recep": ("kitchen", "bathroom"),
    "pick_heat_then_place_in_recep": ("kitchen",),
    "pick_cool_then_place_in_recep": ("kitchen",),
    "pick_and_place_with_movable_recep": ("kitchen", "living_room", "bedroom"),
}
MOVABLE_RECEPTACLES = ("Bowl", "Box", "Cup", "Mug", "Plate", "Pan", "Pot")  # ALFRED's MOVABLE_RECEPTACLES
LAMPS = ("DeskLamp", "FloorLamp")  # ALFRED's Toggleable set
KNIVES = ("Knife", "ButterKnife")
# Appliances each task type needs: type -> the object types that must be in the scene.
NEEDS = {
    "pick_clean_then_place_in_recep": ("SinkBasin", "Faucet"),
    "pick_heat_then_place_in_recep": ("Microwave",),
    "pick_cool_then_place_in_recep": ("Fridge",),
}
CONDITION = {
    "pick_clean_then_place_in_recep": "cleanable",
    "pick_heat_then_place_in_recep": "heatable",
    "pick_cool_then_place_in_recep": "coolable",
}


@dataclass(frozen=True)
class AlfredTask:
    task_type: str
    object_target: str
    parent_target: str | None = None
    mrecep_target: str | None = None
    toggle_target: str | None = None
    object_sliced: bool = False

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> AlfredTask:
        known = {"task_type", "object_target", "parent_target", "mrecep_target", "toggle_target", "object_sliced"}
        extra = sorted(set(d) - known)
        if extra:
            raise TaskError(f"task parameters {extra} are not ALFRED task parameters; known: {sorted(known)}")
        return cls(**d)

    def moved_type(self, cat: Catalog | None = None) -> str:
        """The type that ends up in the receptacle (the slice type when the task slices the object)."""
        if not self.object_sliced:
            return self.object_target
        return (cat or catalog()).slices[self.object_target][0]


def _check_names(task: AlfredTask, cat: Catalog) -> None:
    if task.task_type not in TASK_TYPES:
        raise UnknownNameError("ALFRED task type", task.task_type, TASK_TYPES)
    for field in ("object_target", "parent_target", "mrecep_target", "toggle_target"):
        name = getattr(task, field)
        if name is not None and name not in cat.index:
            raise UnknownNameError(f"object type (task {field})", name, cat.index)


def _check_required(task: AlfredTask) -> None:
    t = task.task_type
    need = {"toggle_target"} if t == "look_at_obj_in_light" else {"parent_target"}
    if t == "pick_and_place_with_movable_recep":
        need.add("mrecep_target")
    missing = [f for f in sorted(need) if getattr(task, f) is None]
    if missing:
        raise TaskError(f"task {t} needs {missing}")


def _check_rules(task: AlfredTask, cat: Catalog) -> None:
    """Impossible parameters: capabilities and receptacle compatibility, whatever the scene."""
    t, obj = task.task_type, task.object_target
    if not cat.get(obj).can("pickupable"):
        raise TaskError(f"task {t}: object_target {obj} cannot be picked up")
    if task.object_sliced and obj not in cat.slices:
        raise TaskError(f"task {t}: object_sliced is set but {obj} is not sliceable")
    moved = task.moved_type(cat)
    if t in CONDITION and not cat.get(moved).can(CONDITION[t]):
        raise TaskError(f"task {t}: {moved} is not {CONDITION[t]} (ALFRED's VAL_ACTION_OBJECTS)")
    if t == "look_at_obj_in_light":
        if task.toggle_target not in LAMPS:
            raise TaskError(f"task {t}: toggle_target {task.toggle_target} is not one of {LAMPS}")
        return
    parent = task.parent_target
    if t == "pick_and_place_with_movable_recep":
        m = task.mrecep_target
        if m not in MOVABLE_RECEPTACLES:
            raise TaskError(f"task {t}: mrecep_target {m} is not a movable receptacle {MOVABLE_RECEPTACLES}")
        if not cat.can_hold(m, moved):
            raise TaskError(f"task {t}: a {m} cannot hold {moved}")
        moved = m
    if not cat.can_hold(parent, moved):  # type: ignore[arg-type]
        raise TaskError(f"task {t}: parent_target {parent} cannot hold {moved}")


def type_counts(scene: HouseholdScene) -> dict[str, int]:
    counts: dict[str, int] = {}
    for o in scene.objects:
        counts[o.object_type] = counts.get(o.object_type, 0) + 1
    return counts


def _check_scene(task: AlfredTask, scene: HouseholdScene, counts: dict[str, int] | None = None) -> None:
    """The scene has what the task needs (objects, receptacle, knife, appliances, two instances)."""
    counts = counts if counts is not None else type_counts(scene)
    t = task.task_type
    need = [task.object_target, *NEEDS.get(t, ())]
    need += [n for n in (task.parent_target, task.mrecep_target, task.toggle_target) if n is not None]
    missing = sorted({n for n in need if counts.get(n, 0) == 0})
    if task.object_sliced and not any(counts.get(k, 0) for k in KNIVES):
        missing.append("Knife")
    if missing:
        raise TaskError(f"task {t} in scene {scene.scene_id}: no {missing} in the scene")
    if t == "pick_two_obj_and_place" and counts[task.object_target] < 2 and not task.object_sliced:
        raise TaskError(f"task {t} in scene {scene.scene_id}: needs two {task.object_target}, the scene has one")
    if _already_placed(task, scene):
        raise TaskError(f"task {t} in scene {scene.scene_id}: a {task.object_target} already starts in the goal")


def _already_placed(task: AlfredTask, scene: HouseholdScene) -> bool:
    """Whether the placement the task asks for already holds at the start (ALFRED never poses those)."""
    if task.task_type == "look_at_obj_in_light" or task.object_sliced:
        return False
    by_id = {o.object_id: o for o in scene.objects}
    goal = task.mrecep_target if task.task_type == "pick_and_place_with_movable_recep" else task.parent_target
    return any(
        o.object_type == task.object_target and o.parent is not None and by_id[o.parent].object_type == goal
        for o in scene.objects
    )


def validate_task(
    task: AlfredTask, scene: HouseholdScene | None = None, cat: Catalog | None = None, counts: dict | None = None
) -> AlfredTask:
    """Check names, required parameters, ALFRED's rules and (given a scene) feasibility; returns the task."""
    cat = cat or catalog()
    _check_names(task, cat)
    _check_required(task)
    _check_rules(task, cat)
    if scene is not None:
        _check_scene(task, scene, counts)
    return task


def _raw_candidates(task_type: str, scene: HouseholdScene, cat: Catalog) -> list[AlfredTask]:
    """Every parameter combination of one task type over the types present (valid or not)."""
    present = sorted({o.object_type for o in scene.objects})
    pickups = [p for p in present if cat.get(p).can("pickupable")]
    receps = [r for r in present if cat.get(r).can("receptacle") and r not in MOVABLE_RECEPTACLES]
    raw: list[AlfredTask] = []
    for obj in pickups:
        for sliced in (False, True) if obj in cat.slices else (False,):
            if task_type == "look_at_obj_in_light":
                raw += [AlfredTask(task_type, obj, toggle_target=lamp, object_sliced=sliced) for lamp in LAMPS]
            elif task_type == "pick_and_place_with_movable_recep":
                raw += [AlfredTask(task_type, obj, r, m, None, sliced) for m in MOVABLE_RECEPTACLES for r in receps]
            else:
                raw += [AlfredTask(task_type, obj, r, object_sliced=sliced) for r in receps]
    return raw


def feasible_tasks(task_type: str, scene: HouseholdScene, cat: Catalog | None = None) -> list[AlfredTask]:
    """Every valid parameter combination of one task type in this scene."""
    cat = cat or catalog()
    counts = type_counts(scene)
    out = []
    for task in _raw_candidates(task_type, scene, cat):
        try:
            out.append(validate_task(task, scene, cat, counts))
        except TaskError:
            continue
    return out


def sample_task(scene: HouseholdScene, rng: np.random.Generator, cat: Catalog | None = None) -> AlfredTask:
    """A random feasible task: a task type valid for the room kind, then parameters drawn uniformly among
    the valid ones (the first valid combination in a random order, so only a few are validated)."""
    cat = cat or catalog()
    counts = type_counts(scene)
    kinds = [t for t in TASK_TYPES if scene.room_kind in GOALS_VALID[t]]
    for idx in rng.permutation(len(kinds)):
        raw = _raw_candidates(kinds[int(idx)], scene, cat)
        for j in rng.permutation(len(raw)):
            try:
                return validate_task(raw[int(j)], scene, cat, counts)
            except TaskError:
                continue
    raise TaskError(f"scene {scene.scene_id}: no ALFRED task is feasible (room kind {scene.room_kind})")


class GoalChecker:
    """ALFRED's goal conditions for one task on one world, vectorised over the world's entities."""

    def __init__(self, task: AlfredTask, world: Any):
        self.task, self.w = task, world
        types = np.array(world.types)
        cat = world.cat
        self.obj = types == task.moved_type(cat)
        self.recep = types == (task.parent_target or "")
        self.mrecep = types == (task.mrecep_target or "")
        self.lamp = types == (task.toggle_target or "")
        self.condition = {
            "pick_clean_then_place_in_recep": world.cleaned,
            "pick_heat_then_place_in_recep": world.heated,
            "pick_cool_then_place_in_recep": world.cooled,
        }.get(task.task_type)

    def _in(self, mask_children: np.ndarray, mask_parents: np.ndarray) -> np.ndarray:
        par = self.w.parent
        return mask_children & self.w.flags["exists"] & (par >= 0) & mask_parents[np.maximum(par, 0)]

    def __call__(self) -> bool:
        t, w = self.task.task_type, self.w
        if t == "look_at_obj_in_light":
            held_ok = w.held >= 0 and bool(self.obj[w.held])
            return held_ok and bool((self.lamp & w.flags["toggled"] & w.visible).any())
        if t == "pick_and_place_with_movable_recep":
            placed_m = self._in(self.mrecep, self.recep)
            return bool(self._in(self.obj, placed_m).any())
        placed = self._in(self.obj, self.recep)
        if self.condition is not None:
            placed &= self.condition
        return int(placed.sum()) >= (2 if t == "pick_two_obj_and_place" else 1)
