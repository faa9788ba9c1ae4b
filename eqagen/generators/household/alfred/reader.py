"""Readers for ALFRED's published data: ``traj_data.json`` (json_2.1.0) and the floor-plan layouts.

ALFRED's ``traj_data.json`` holds, under ``scene``, the floor plan, the initial poses of every movable
object (``object_poses``: ``objectName`` ``Type_hash`` and a position), lamp toggles, the dirty/empty
flag and the agent's start (``init_action``, a ``TeleportFull``). Train and valid trajectories add the
expert plan (``plan.low_actions[*].api_action``: the exact AI2-THOR call), ``task_type`` and
``pddl_params``; the test split has neither. Some conversions store the ``scene`` values as Python
literals in strings (``"'FloorPlan402'"``), so every scene field is decoded with ``literal_eval``.

The layouts (ALFRED's ``gen/layouts``) give per floor plan the reachable ``(x, z)`` points, the object
types present and, for openable/receptacle objects, their objectId and an interaction pose.
AI2-THOR objectIds encode the object's position: ``Type|x|y|z`` (``Sink|x|y|z|SinkBasin`` for a
sub-object, ``Apple|x|y|z|AppleSliced_2`` for a slice).

Every position, rotation and interaction pose must be a finite number within
:data:`~eqagen.core.limits.MAX_COORDINATE` (``NaN`` and ``1e308`` are errors naming the field), and a
layout's reachable points must span a grid of at most :data:`~eqagen.core.limits.MAX_GRID_CELLS` cells.
"""

from __future__ import annotations

import ast
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eqagen.core import DataFileError
from eqagen.core.errors import malformed_file
from eqagen.core.limits import check_npy_size, checked_coordinates, checked_grid_cells
from eqagen.generators.household.scene import GRID_SIZE
from eqagen.generators.household.tasks import TASK_TYPES

LAYOUTS_HINT = (
    "pass --layouts DIR or set EQAGEN_REALDATA so that $EQAGEN_REALDATA/alfred/layouts exists; the files "
    "are ALFRED's gen/layouts (https://github.com/askforalfred/alfred/tree/master/gen/layouts)"
)


@dataclass(frozen=True)
class ParsedId:
    """An AI2-THOR objectId taken apart: the object type, the encoded position and the sub-object suffix."""

    object_id: str
    object_type: str
    position: tuple[float, float, float]
    base_type: str  # the first field (``Sink`` for ``Sink|..|SinkBasin``, ``Apple`` for a slice)
    suffix: str = ""


def parse_object_id(object_id: str, source: object = "<objectId>") -> ParsedId:
    """``Type|x|y|z[|Sub]`` -> :class:`ParsedId`; the type is the sub-object's when there is one."""
    parts = object_id.split("|")
    if len(parts) < 4:
        raise DataFileError(source, "objectId", f"'{object_id}' is not of the form Type|x|y|z")
    try:
        pos = (float(parts[1]), float(parts[2]), float(parts[3]))
    except ValueError as exc:
        raise DataFileError(source, "objectId", f"'{object_id}' has a non-numeric coordinate") from exc
    checked_coordinates(pos, source, f"objectId {object_id[:80]}")
    suffix = "|".join(parts[4:])
    obj_type = suffix.split("_")[0] if suffix else parts[0]
    return ParsedId(object_id, obj_type, pos, parts[0], suffix)


def format_object_id(object_type: str, position: tuple[float, float, float]) -> str:
    """AI2-THOR's objectId text for a position: signed, zero-padded, two decimals (``+00.63``)."""
    return object_type + "".join(f"|{v:+06.2f}" for v in position)


@dataclass(frozen=True)
class ObjectPose:
    object_name: str  # ``Type_hash``; repeated names are duplicates AI2-THOR spawns
    object_type: str
    position: tuple[float, float, float]
    rotation: tuple[float, float, float]


@dataclass
class AlfredTrajectory:
    """One ``traj_data.json``. ``task_type``/``pddl_params``/``low_actions`` are empty on the test split."""

    path: Path
    task_id: str
    floor_plan: str
    scene_num: int
    object_poses: list[ObjectPose]
    object_toggles: list[dict[str, Any]]
    dirty_and_empty: bool
    init_action: dict[str, Any]
    random_seed: int = 0
    task_type: str | None = None
    pddl_params: dict[str, Any] = field(default_factory=dict)
    low_actions: list[dict[str, Any]] = field(default_factory=list)
    high_pddl: list[dict[str, Any]] = field(default_factory=list)
    annotations: list[dict[str, Any]] = field(default_factory=list)

    @property
    def has_plan(self) -> bool:
        return bool(self.low_actions)

    def instruction(self, repeat_idx: int = 0) -> str:
        """The human goal instruction (``task_desc``) of one annotation; "" when there is none."""
        if not self.annotations:
            return ""
        return str(self.annotations[min(repeat_idx, len(self.annotations) - 1)].get("task_desc", ""))

    @property
    def agent_start(self) -> tuple[float, float, float, float, float]:
        a = self.init_action
        return (float(a["x"]), float(a["y"]), float(a["z"]), float(a["rotation"]), float(a["horizon"]))


def _literal(value: Any) -> Any:
    """Scene values come either as JSON values or as Python literals inside strings."""
    if not isinstance(value, str):
        return value
    try:
        return ast.literal_eval(value)
    except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
        return value  # a plain string (a floor plan name stored unquoted)


def _require(d: dict[str, Any], key: str, path: Path, where: str) -> Any:
    if not isinstance(d, dict) or key not in d:
        raise DataFileError(path, f"{where}{key}", "missing", "use ALFRED's json_2.1.0 traj_data.json files")
    return d[key]


def _parse_pose(raw: Any, path: Path, i: int) -> ObjectPose:
    where = f"scene.object_poses[{i}]"
    try:
        name = str(raw["objectName"])
        p, r = raw["position"], raw.get("rotation", {"x": 0.0, "y": 0.0, "z": 0.0})
        pos = (float(p["x"]), float(p["y"]), float(p["z"]))
        rot = (float(r["x"]), float(r["y"]), float(r["z"]))
    except (KeyError, TypeError, ValueError, AttributeError, IndexError, OverflowError) as exc:
        raise DataFileError(
            path, where, f"malformed pose ({exc!r})", "each pose needs objectName and position x/y/z"
        ) from exc
    checked_coordinates(pos, path, f"{where}.position")
    checked_coordinates(rot, path, f"{where}.rotation")
    return ObjectPose(name, name.split("_")[0], pos, rot)


def _parse_init_action(raw: Any, path: Path) -> dict[str, Any]:
    keys = ("x", "y", "z", "rotation", "horizon")
    if not isinstance(raw, dict) or any(k not in raw for k in keys):
        raise DataFileError(path, "scene.init_action", "needs x, y, z, rotation and horizon (a TeleportFull)")
    with malformed_file(path, "scene.init_action", "x, y, z, rotation and horizon are numbers"):
        values = [float(raw[k]) for k in keys]
    checked_coordinates(values, path, "scene.init_action")
    return raw


def _parse_low_actions(plan: Any, path: Path) -> list[dict[str, Any]]:
    actions = []
    steps = plan.get("low_actions", []) if isinstance(plan, dict) else []
    if not isinstance(steps, list):
        raise DataFileError(path, "plan.low_actions", "is not a list", "use ALFRED's json_2.1.0 traj_data.json files")
    for i, step in enumerate(steps):
        api = step.get("api_action") if isinstance(step, dict) else None
        if not isinstance(api, dict) or "action" not in api:
            raise DataFileError(path, f"plan.low_actions[{i}].api_action", "missing or has no 'action'")
        actions.append(api)
    return actions


def _parse_scene(scene: dict[str, Any], path: Path) -> dict[str, Any]:
    if not isinstance(scene, dict):
        raise DataFileError(path, "scene", "is not an object", "use ALFRED's json_2.1.0 traj_data.json files")
    s = {k: _literal(v) for k, v in scene.items()}
    floor_plan = str(_require(s, "floor_plan", path, "scene."))
    if not floor_plan.startswith("FloorPlan"):
        raise DataFileError(path, "scene.floor_plan", f"'{floor_plan}' is not a FloorPlanN name")
    poses_raw = _require(s, "object_poses", path, "scene.")
    if not isinstance(poses_raw, list):
        raise DataFileError(path, "scene.object_poses", "is not a list")
    with malformed_file(path, "scene.scene_num", "an integer"):
        scene_num = int(s.get("scene_num", floor_plan[len("FloorPlan") :]))
    with malformed_file(path, "scene.object_toggles", "a list"):
        toggles = list(s.get("object_toggles") or [])
    with malformed_file(path, "scene.random_seed", "an integer"):
        random_seed = int(s.get("random_seed", 0) or 0)
    return {
        "floor_plan": floor_plan,
        "scene_num": scene_num,
        "object_poses": [_parse_pose(p, path, i) for i, p in enumerate(poses_raw)],
        "object_toggles": toggles,
        "dirty_and_empty": bool(s.get("dirty_and_empty", False)),
        "init_action": _parse_init_action(_require(s, "init_action", path, "scene."), path),
        "random_seed": random_seed,
    }


def _task_type(raw: dict[str, Any], path: Path) -> str | None:
    task_type = _literal(raw.get("task_type")) or None
    if task_type is not None and task_type not in TASK_TYPES:
        raise DataFileError(path, "task_type", f"'{task_type}' is not an ALFRED task type", f"one of {TASK_TYPES}")
    return task_type


def _pddl_params(raw: dict[str, Any], path: Path) -> dict[str, Any]:
    params = _literal(raw.get("pddl_params")) or {}
    if not isinstance(params, dict):
        raise DataFileError(path, "pddl_params", "expected an object of task parameters")
    return dict(params)


def read_trajectory(path: str | os.PathLike[str]) -> AlfredTrajectory:
    """Read one ``traj_data.json``; raises DataFileError naming the file and field when malformed."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise DataFileError(path, None, "file not found") from exc
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise DataFileError(path, None, f"not valid JSON ({exc})") from exc
    if not isinstance(raw, dict):
        raise DataFileError(path, None, "top level is not an object")
    scene = _parse_scene(_require(raw, "scene", path, ""), path)
    anns = _literal(raw.get("turk_annotations", {}))
    plan = _literal(raw.get("plan", {}))
    with malformed_file(path, "plan.high_pddl", "a list of steps"):
        high_pddl = list(plan.get("high_pddl", [])) if isinstance(plan, dict) else []
    with malformed_file(path, "turk_annotations", "an object with a list 'anns'"):
        annotations = list(anns.get("anns", [])) if isinstance(anns, dict) else []
    return AlfredTrajectory(
        path=path,
        task_id=str(_literal(raw.get("task_id", path.parent.name))),
        task_type=_task_type(raw, path),
        pddl_params=_pddl_params(raw, path),
        low_actions=_parse_low_actions(plan, path),
        high_pddl=high_pddl,
        annotations=annotations,
        **scene,
    )


def _xyz(values: tuple[float, float, float]) -> dict[str, float]:
    return dict(zip("xyz", values))


def scene_record(traj: AlfredTrajectory) -> dict[str, Any]:
    """The trajectory's ``scene`` in ALFRED's own layout (what a replay restores): recorded in the episode's
    meta, so that a replay bundle is written from the episode alone."""
    return {
        "floor_plan": traj.floor_plan,
        "scene_num": traj.scene_num,
        "object_poses": [
            {"objectName": p.object_name, "position": _xyz(p.position), "rotation": _xyz(p.rotation)}
            for p in traj.object_poses
        ],
        "object_toggles": traj.object_toggles,
        "dirty_and_empty": traj.dirty_and_empty,
        "init_action": traj.init_action,
        "random_seed": traj.random_seed,
    }


def task_record(traj: AlfredTrajectory) -> dict[str, Any]:
    """``task_type`` and ``pddl_params`` where the split publishes them (none on the test split)."""
    return {"task_type": traj.task_type, "pddl_params": traj.pddl_params} if traj.task_type else {}


def iter_trajectory_paths(root: str | os.PathLike[str]) -> Iterator[Path]:
    """Every ``traj_data.json`` under ``root`` in a stable (sorted) order, streamed directory by directory."""
    root = Path(root)
    if root.is_file():
        yield root
        return
    if not root.is_dir():
        raise DataFileError(root, None, "is not a directory", "point at an ALFRED json_2.1.0 split or data root")
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        if "traj_data.json" in filenames:
            yield Path(dirpath) / "traj_data.json"


@dataclass
class Layout:
    """A floor plan's static data: reachable ``(x, z)`` points, object types present, openable objects."""

    floor_plan: str
    reachable: np.ndarray  # [K, 2]
    object_types: list[str]
    openable: dict[str, tuple[float, float, float, float]]  # objectId -> (x, z, rotation, horizon)


def find_layouts_dir(explicit: str | os.PathLike[str] | None = None) -> Path:
    """``explicit``, else ``$EQAGEN_REALDATA/alfred/layouts``; a DataFileError says where to get them."""
    if explicit is not None:
        path = Path(explicit)
        if not path.is_dir():
            raise DataFileError(path, "--layouts", "layouts directory not found", LAYOUTS_HINT)
        return path
    env = os.environ.get("EQAGEN_REALDATA")
    if env and (Path(env) / "alfred" / "layouts").is_dir():
        return Path(env) / "alfred" / "layouts"
    where = f"{env}/alfred/layouts" if env else "$EQAGEN_REALDATA (unset)"
    raise DataFileError(where, "layouts", "ALFRED floor-plan layouts not found", LAYOUTS_HINT)


def _read_json(path: Path, what: str) -> Any:
    if not path.is_file():
        raise DataFileError(path, what, "layout file not found", LAYOUTS_HINT)
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise DataFileError(path, what, f"not valid JSON ({exc})") from exc


def _read_reachable(path: Path) -> np.ndarray:
    if not path.is_file():
        raise DataFileError(path, "layout", "layout file not found", LAYOUTS_HINT)
    check_npy_size(path, "layout")
    try:
        pts = np.load(path, allow_pickle=False)
    except Exception as exc:  # numpy's header parser raises many types (ValueError, EOFError, TokenError, ...)
        raise DataFileError(path, "layout", f"not a numpy array file ({exc!r})") from exc
    if not isinstance(pts, np.ndarray) or pts.ndim != 2 or pts.shape[1] != 2 or len(pts) == 0:
        raise DataFileError(path, "layout", f"expected a non-empty [K, 2] array of (x, z), got {np.shape(pts)}")
    if not (np.issubdtype(pts.dtype, np.integer) or np.issubdtype(pts.dtype, np.floating)):
        raise DataFileError(path, "layout", f"expected numbers, got dtype {pts.dtype}", LAYOUTS_HINT)
    check_cell_extent(pts, path, "layout", LAYOUTS_HINT)
    return pts.astype(np.float64)


def check_cell_extent(points: np.ndarray, path: object, field: str, fix: str | None = None) -> None:
    """The household world indexes its reachable cells densely over their bounding box: a DataFileError
    naming ``path`` and ``field`` when ``points`` ([K, 2], metres) are not finite coordinates or span more
    than MAX_GRID_CELLS cells."""
    points = checked_coordinates(points, path, field, fix)
    if len(points):
        span = np.ptp(points.reshape(-1, 2), axis=0) / GRID_SIZE + 1
        checked_grid_cells(tuple(int(v) for v in span), path, field, fix)


def _parse_openable(raw: Any, path: Path) -> dict[str, tuple[float, float, float, float]]:
    if not isinstance(raw, dict):
        raise DataFileError(path, "openable", "expected an object objectId -> [x, z, rotation, horizon]")
    out = {}
    for oid, pose in raw.items():
        if not isinstance(pose, list) or len(pose) != 4:
            raise DataFileError(path, oid, f"interaction pose {pose!r} is not [x, z, rotation, horizon]")
        parse_object_id(oid, path)
        with malformed_file(path, oid, "an interaction pose is four numbers [x, z, rotation, horizon]"):
            out[oid] = (float(pose[0]), float(pose[1]), float(pose[2]), float(pose[3]))
        checked_coordinates(out[oid], path, oid)
    return out


def read_layout(floor_plan: str, layouts_dir: str | os.PathLike[str]) -> Layout:
    """The three layout files of one floor plan."""
    d = Path(layouts_dir)
    types = _read_json(d / f"{floor_plan}-objects.json", "objects")
    if not isinstance(types, list) or not all(isinstance(t, str) for t in types):
        raise DataFileError(d / f"{floor_plan}-objects.json", "objects", "expected a list of object type names")
    openable = _parse_openable(
        _read_json(d / f"{floor_plan}-openable.json", "openable"), d / f"{floor_plan}-openable.json"
    )
    reachable = _read_reachable(d / f"{floor_plan}-layout.npy")
    return Layout(floor_plan, reachable, list(types), openable)
