"""A :class:`HouseholdScene` from an ALFRED trajectory and its floor plan's layout.

What is real and what is inferred:

- the navigable grid is the layout's reachable points; the agent's start is ``init_action``;
- static objects sit at the positions their AI2-THOR objectIds encode: every receptacle/openable object
  of the layout, every objectId the trajectory's own actions name (faucets, lamps, receptacles the
  layout leaves out), and, when a scene catalog is given, everything seen in other trajectories of
  the same floor plan (:mod:`.catalog`);
- movable objects sit at their recorded ``object_poses``; their objectId is ``Type|x|y|z`` of that pose
  (matching the ids the expert's actions use to within a centimetre of rounding);
- the receptacle holding a movable object is not recorded: it is the receptacle named by the expert's
  own ``PickupObject`` of that object (``coordinateReceptacleObjectId``) when there is one, else the
  nearest compatible receptacle below it (``parent_source`` says which);
- lamps start as ``object_toggles`` says (others as AI2-THOR starts them: lamps and light switches on),
  and ``dirty_and_empty`` makes every dirtyable movable object dirty and nothing filled, as ALFRED's
  ``restore_scene`` does.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np

from eqagen.generators.household.alfred.reader import (
    AlfredTrajectory,
    Layout,
    ParsedId,
    check_cell_extent,
    format_object_id,
    parse_object_id,
)
from eqagen.generators.household.objects import Catalog, catalog
from eqagen.generators.household.scene import HouseholdScene, SceneObject
from eqagen.generators.household.world import CAPACITY_BY_SIZE

ID_TOLERANCE = 0.021  # objectIds round to 0.01 m; poses settle by up to ~0.01 m more
ON_BY_DEFAULT = ("DeskLamp", "FloorLamp", "LightSwitch")
OPEN_BY_DEFAULT = ("Laptop",)  # iTHOR scenes load laptops open
ROOM_BY_HUNDRED = {0: "kitchen", 2: "living_room", 3: "bedroom", 4: "bathroom"}
AGENT_BODY_HEIGHT = 0.9009  # AI2-THOR agent y above the floor (ALFRED's init_action y on a y=0 floor)


def room_kind(floor_plan: str) -> str:
    """iTHOR numbering: 1-30 kitchens, 201-230 living rooms, 301-330 bedrooms, 401-430 bathrooms."""
    return ROOM_BY_HUNDRED.get(int(floor_plan[len("FloorPlan") :]) // 100, "kitchen")


@dataclass
class AlfredScene:
    """The scene plus provenance: how each object's position and parent were obtained."""

    scene: HouseholdScene
    position_source: dict[str, str] = field(default_factory=dict)  # objectId -> layout|trajectory|catalog|pose
    parent_source: dict[str, str] = field(default_factory=dict)  # objectId -> expert|nearest|none
    skipped_types: list[str] = field(default_factory=list)  # AI2-THOR types our object table lacks
    added_cells: int = 0  # reachable cells added to the layout's (expert's path, catalog)


class _IdSet:
    """Static objects by parsed id, merging ids of the same type within the rounding tolerance."""

    def __init__(self) -> None:
        self.by_id: dict[str, tuple[ParsedId, str]] = {}
        self._by_type: dict[str, list[ParsedId]] = {}

    def find(self, pid: ParsedId) -> str | None:
        for other in self._by_type.get(pid.object_type, []):
            if _close(other.position, pid.position):
                return other.object_id
        return None

    def add(self, pid: ParsedId, source: str) -> None:
        if self.find(pid) is None:
            self.by_id[pid.object_id] = (pid, source)
            self._by_type.setdefault(pid.object_type, []).append(pid)


def _close(a: Iterable[float], b: Iterable[float], tol: float = ID_TOLERANCE) -> bool:
    return all(abs(x - y) <= tol for x, y in zip(a, b))


def action_object_ids(traj: AlfredTrajectory) -> list[str]:
    """Every objectId the expert's actions name (objects and receptacles), in order, without slices."""
    out = []
    for a in traj.low_actions:
        for key in ("objectId", "receptacleObjectId"):
            if key in a and "Sliced" not in a[key]:
                out.append(a[key])
    return out


def _static_ids(traj: AlfredTrajectory, layout: Layout, extra: dict[str, str], cat: Catalog) -> _IdSet:
    ids = _IdSet()
    for oid in layout.openable:
        ids.add(parse_object_id(oid, layout.floor_plan), "layout")
    for oid in action_object_ids(traj):
        pid = parse_object_id(oid, traj.path)
        if not (cat.index.get(pid.object_type) is not None and cat.get(pid.object_type).can("pickupable")):
            ids.add(pid, "trajectory")
    for oid, source in extra.items():
        ids.add(parse_object_id(oid, "catalog"), source)
    return ids


def _pose_objects(traj: AlfredTrajectory) -> list[tuple[str, str, tuple, tuple]]:
    seen: set[str] = set()
    out = []
    for pose in traj.object_poses:
        oid = format_object_id(pose.object_type, pose.position)
        n = 1
        while oid in seen:  # AI2-THOR never repeats an id; keep ids unique even for odd input
            oid, n = f"{format_object_id(pose.object_type, pose.position)}#{n}", n + 1
        seen.add(oid)
        out.append((oid, pose.object_type, pose.position, pose.rotation))
    return out


def _expert_parents(traj: AlfredTrajectory) -> dict[str, tuple[str, tuple[float, float, float]]]:
    """objectId -> (receptacle type, receptacle position) from the planner's first pickup of each object.

    The planner's coordinates are ``[x, x, z, z, y, y]`` in quarter metres (ALFRED's grid units).
    """
    out: dict[str, tuple[str, tuple[float, float, float]]] = {}
    for step in traj.high_pddl:
        pa = step.get("planner_action", {}) if isinstance(step, dict) else {}
        if pa.get("action") != "PickupObject" or "coordinateReceptacleObjectId" not in pa:
            continue
        rec_type, c = pa["coordinateReceptacleObjectId"]
        out.setdefault(str(pa.get("objectId", "")), (str(rec_type), (c[0] / 4, c[4] / 4, c[2] / 4)))
    return out


@dataclass
class _Candidate:
    object_id: str
    object_type: str
    position: tuple[float, float, float]


# Where an object can be when an enclosing receptacle holds it: horizontal reach and the (min, max) of its
# height above the receptacle's origin, read off the real object poses of valid_seen and tests_seen around
# the layouts' receptacles (docs/alfred.md): a fridge's origin is at its base and its shelves reach 1.9 m;
# a microwave's contents sit 0.05 to 0.25 m above its origin, nothing else within 0.3 m of it; a cabinet's
# lie 0.15 to 0.65 m below its origin, up to 0.65 m aside (a counter under a wall cabinet begins 0.7 m
# below); a drawer's lie up to 0.15 m below its origin, and the counter top above it from 0.06 m up.
INSIDE_BOX = {
    "Fridge": (0.45, (-0.05, 1.9)),
    "Microwave": (0.3, (0.0, 0.35)),
    "Cabinet": (0.65, (-0.65, 0.1)),
    "Drawer": (0.45, (-0.4, 0.06)),
    "default": (0.45, (-0.4, 0.1)),
}
ON_SMALL = (0.25, (-0.05, 0.3))  # what a pickupable receptacle (plate, mug, pot) holds is right on it
SURFACE_BELOW = -0.1  # a surface's origin is at or below what rests on it (to a rounding margin)


def score_matrix(movables: list[_Candidate], recs: list[_Candidate], cat: Catalog, open_air: set[str]) -> np.ndarray:
    """``[M, R]`` likelihood scores (lower is likelier; inf where receptacle r cannot hold object m there).

    Enclosures and pickupable receptacles (plates, mugs) hold what lies inside their box, scored by the
    horizontal distance; surfaces hold what lies above their origin, scored by horizontal distance plus
    half the height, behind any matching enclosure. ``open_air`` objects were taken by the expert without
    opening anything, so no closed enclosure holds them.
    """
    mt = np.array([cat.index[m.object_type] for m in movables], dtype=np.int64)
    rt = np.array([cat.index[r.object_type] for r in recs], dtype=np.int64)
    d = np.array([m.position for m in movables])[:, None, :] - np.array([r.position for r in recs])[None, :, :]
    horiz, dy = np.hypot(d[..., 0], d[..., 2]), d[..., 1]
    enclosing, small = cat.capability["enclosing"][rt], cat.capability["pickupable"][rt]
    reach, lo, hi = _boxes(recs, small)
    inside = (horiz <= reach) & (dy >= lo) & (dy <= hi)
    boxed = np.where(inside, horiz, np.inf)
    surface = np.where(dy >= SURFACE_BELOW, horiz + 0.5 * dy + 0.3, np.inf)
    score = np.where((enclosing | small)[None, :], boxed, surface)
    free = np.array([m.object_id in open_air for m in movables])
    score[free[:, None] & enclosing[None, :]] = np.inf
    score[~cat.compatible[rt[None, :], mt[:, None]]] = np.inf
    same = np.array([m.object_id for m in movables])[:, None] == np.array([r.object_id for r in recs])[None, :]
    score[same] = np.inf
    return score


def _boxes(recs: list[_Candidate], small: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    box = [ON_SMALL if s else INSIDE_BOX.get(r.object_type, INSIDE_BOX["default"]) for r, s in zip(recs, small)]
    return (np.array([b[0] for b in box]), np.array([b[1][0] for b in box]), np.array([b[1][1] for b in box]))


def _assign_parents(
    movables: list[_Candidate], recs: list[_Candidate], cat: Catalog, fixed: dict[str, str], open_air: set[str]
) -> dict:
    """Each movable object to its likeliest receptacle, most certain first, leaving room for the task's puts."""
    out = dict(fixed)
    todo = [m for m in movables if m.object_id not in fixed]
    if not todo or not recs:
        return out
    room = np.array([_room(r.object_type, cat) for r in recs])
    load = np.zeros(len(recs), dtype=np.int64)
    index = {r.object_id: k for k, r in enumerate(recs)}
    for parent in fixed.values():
        load[index[parent]] += 1
    score = score_matrix(todo, recs, cat, open_air)
    mi, ri = np.nonzero(np.isfinite(score))
    for k in np.lexsort((ri, mi, score[mi, ri])):  # ascending score; ties in a fixed order
        m, r = todo[mi[k]].object_id, int(ri[k])
        if m not in out and load[r] < room[r]:
            out[m] = recs[r].object_id
            load[r] += 1
    return out


def _room(rec_type: str, cat: Catalog) -> int:
    """How many objects a receptacle may start with: its capacity less room for the task's puts (at least one).

    An enclosure keeps one place only: what lies in its box is shut inside it, nowhere else (a full fridge
    spilling its contents into the open would show the agent what it hides)."""
    t = cat.get(rec_type)
    capacity = CAPACITY_BY_SIZE[t.size]
    if t.can("enclosing"):
        return capacity - 1
    return max(capacity - (5 if capacity > 5 else 2), 1)  # large: room for two puts and a sliced whole


def _open_air(traj: AlfredTrajectory, movables: list[_Candidate], evidence: dict, cat: Catalog) -> set[str]:
    """Objects the expert took from an enclosing receptacle type it had not opened (glass doors, open shelves)."""
    out, opened = set(), set()
    for a in traj.low_actions:
        if a["action"] == "OpenObject":
            opened.add(parse_object_id(a["objectId"]).object_type)
        elif a["action"] == "PickupObject" and a.get("objectId") in evidence:
            rec_type = evidence[a["objectId"]][0]
            if rec_type in cat.index and cat.get(rec_type).can("enclosing") and rec_type not in opened:
                pid = parse_object_id(a["objectId"])
                out |= {
                    m.object_id
                    for m in movables
                    if m.object_type == pid.object_type and _close(m.position, pid.position)
                }
    return out


def _expert_parent(obj: _Candidate, evidence: dict, recs: list[_Candidate], open_air: set[str]) -> str | None:
    if obj.object_id in open_air:
        return None
    for oid, (rec_type, rec_pos) in evidence.items():
        pid = parse_object_id(oid) if oid else None
        if pid is None or pid.object_type != obj.object_type or not _close(pid.position, obj.position):
            continue
        near = [r for r in recs if r.object_type == rec_type and _close(r.position, rec_pos, 0.05)]
        if near:
            return near[0].object_id
    return None


def _initial_toggles(traj: AlfredTrajectory) -> dict[str, bool]:
    toggles = {t: True for t in ON_BY_DEFAULT}
    for entry in traj.object_toggles:
        if isinstance(entry, dict) and "objectType" in entry:
            toggles[str(entry["objectType"])] = bool(entry.get("isOn", False))
    return toggles


def build_alfred_scene(
    traj: AlfredTrajectory,
    layout: Layout,
    extra_static: dict[str, str] | None = None,
    extra_cells: np.ndarray | None = None,
    cat: Catalog | None = None,
) -> AlfredScene:
    """The household scene of one trajectory.

    ``extra_static`` adds objectIds and ``extra_cells`` reachable cells (e.g. from a scene catalog); the
    cells the trajectory's own expert stood on are always added (see :func:`expert_cells`).
    """
    cat = cat or catalog()
    out = AlfredScene(scene=None)  # type: ignore[arg-type]
    statics = _static_ids(traj, layout, extra_static or {}, cat)
    cands = [_Candidate(oid, pid.object_type, pid.position) for oid, (pid, _) in statics.by_id.items()]
    out.position_source = {oid: src for oid, (_, src) in statics.by_id.items()}
    poses = _pose_objects(traj)
    movables = [_Candidate(oid, t, pos) for oid, t, pos, _ in poses]
    out.position_source.update({m.object_id: "pose" for m in movables})
    known = [c for c in cands + movables if c.object_type in cat.index]
    out.skipped_types = sorted({c.object_type for c in cands + movables if c.object_type not in cat.index})
    recs = [c for c in known if cat.get(c.object_type).can("receptacle")]
    evidence = _expert_parents(traj)
    rotations = {oid: rot for oid, _, _, rot in poses}
    toggles = _initial_toggles(traj)
    objects = [_scene_object(c, cat, traj, toggles, rotations.get(c.object_id)) for c in known]
    movable_ids = {m.object_id for m in movables}
    moving = [c for c in known if c.object_id in movable_ids]
    open_air = _open_air(traj, moving, evidence, cat)
    fixed = {c.object_id: p for c in moving if (p := _expert_parent(c, evidence, recs, open_air))}
    parents = _assign_parents(moving, recs, cat, fixed, open_air)
    for obj in objects:
        if obj.object_id in out.position_source and out.position_source[obj.object_id] == "pose":
            obj.parent = parents.get(obj.object_id)
            out.parent_source[obj.object_id] = (
                "expert" if obj.object_id in fixed else ("inferred" if obj.parent else "none")
            )
    cells, out.added_cells = merge_cells(layout.reachable, expert_cells(traj))
    check_cell_extent(cells, traj.path, "plan.low_actions", "the expert's moves (moveMagnitude) are damaged")
    if extra_cells is not None:
        cells, n = merge_cells(cells, extra_cells)
        check_cell_extent(cells, "the scene catalog", "cells", "rebuild the catalog with `eqagen alfred index`")
        out.added_cells += n
    out.scene = _assemble(traj, cells, objects)
    return out


def _scene_object(
    c: _Candidate, cat: Catalog, traj: AlfredTrajectory, toggles: dict[str, bool], rotation: tuple | None
) -> SceneObject:
    t = cat.get(c.object_type)
    movable = t.can("pickupable")
    return SceneObject(
        object_id=c.object_id,
        object_type=c.object_type,
        position=tuple(float(v) for v in c.position),
        rotation=tuple(rotation) if rotation else (0.0, 0.0, 0.0),
        is_toggled=t.can("toggleable") and toggles.get(c.object_type, False),
        is_dirty=bool(traj.dirty_and_empty and movable and t.can("dirtyable")),
        is_open=c.object_type in OPEN_BY_DEFAULT and t.can("openable"),
    )


def _assemble(traj: AlfredTrajectory, cells: np.ndarray, objects: list[SceneObject]) -> HouseholdScene:
    start = traj.agent_start
    return HouseholdScene(
        scene_id=traj.floor_plan,
        room_kind=room_kind(traj.floor_plan),
        reachable=cells,
        floor_y=round(start[1] - AGENT_BODY_HEIGHT, 3),
        agent_start=start,
        objects=objects,
        source="alfred",
    )


def expert_cells(traj: AlfredTrajectory) -> np.ndarray:
    """``[K, 2]`` (x, z) cells the expert stood on, dead-reckoned from the start through its moves.

    Every expert move succeeded in AI2-THOR, so each of these cells is reachable even where ALFRED's
    precomputed layout (made with a different object placement) leaves it out.
    """
    x, _, z, yaw, _ = traj.agent_start
    cells = [(x, z)]
    for a in traj.low_actions:
        name = a.get("action")
        if name in ("RotateLeft", "RotateRight"):
            yaw = (yaw + (90.0 if name == "RotateRight" else -90.0)) % 360.0
        elif name == "MoveAhead":
            step = float(a.get("moveMagnitude", 0.25))
            x, z = x + step * np.sin(np.radians(yaw)), z + step * np.cos(np.radians(yaw))
            x, z = round(x * 4) / 4, round(z * 4) / 4
            cells.append((x, z))
    return np.unique(np.round(np.array(cells, dtype=np.float64), 3), axis=0)


def merge_cells(grid: np.ndarray, extra: np.ndarray) -> tuple[np.ndarray, int]:
    """The union of two ``[K, 2]`` cell sets (layout order first) and how many cells ``extra`` added."""
    grid = np.asarray(grid, dtype=np.float64).reshape(-1, 2)
    extra = np.unique(np.round(np.asarray(extra, dtype=np.float64).reshape(-1, 2), 6), axis=0)
    if len(extra) == 0:
        return grid, 0
    d = np.abs(extra[:, None, :] - grid[None, :, :]).sum(axis=2).min(axis=1) if len(grid) else np.full(len(extra), 1.0)
    new = extra[d > 1e-3]
    return np.concatenate([grid, new]), len(new)
