"""The episode record shared by every world family and backend.

An episode is one trajectory of one agent in one environment: steps (what the agent did and where it
stood), entities (what exists), a :class:`~eqagen.core.timeline.Timeline` (the state of every entity at
every step), events (named happenings with ordinals) and, for navigation and blockworld, regions.
Backends differ in where episodes come from, never in this shape.

Step ``t`` holds action ``t`` and the state *after* it; step 0 is the initial observation (action
``"Initialize"``), so ``timeline[t]`` and ``steps.pose[t]`` describe the same moment.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqagen.core.frame import FrameTransform
from eqagen.core.rng import stable_hash
from eqagen.core.timeline import FieldChanges, Timeline

FAMILIES = ("household", "navigation", "blockworld")
POSE_FIELDS = ("x", "y", "z", "yaw", "pitch")
LOOP_VISITS = 5  # an agent loops when it arrives at one pose this many separate times


def looped_poses(pose: np.ndarray, visits: int = LOOP_VISITS) -> int:
    """How many poses (every field to 0.01) the agent arrived at ``visits`` or more separate times: FILM's
    looping, where a search walks the same cells again. Standing still is one arrival, and turning away and
    back once is not a loop (the audit had counted any return, so nearly every episode "looped")."""
    keys = np.round(np.asarray(pose, dtype=np.float64), 2)
    if not len(keys):
        return 0
    arrival = np.ones(len(keys), dtype=bool)
    arrival[1:] = np.any(keys[1:] != keys[:-1], axis=1)
    _, counts = np.unique(keys[arrival], axis=0, return_counts=True)
    return int((counts >= visits).sum())


@dataclass
class Steps:
    """Columnar steps ``t = 0..T-1``. ``pose`` is ``[T, 5]`` (x, y, z, yaw, pitch) in the episode frame."""

    action: list[str]
    target: np.ndarray  # int32 entity index the action was aimed at, -1 for none
    receptacle: np.ndarray  # int32 second entity argument (PutObject's receptacle), -1 for none
    args: list[dict[str, Any]]  # any further action arguments (e.g. MineRL camera deltas)
    success: np.ndarray  # bool
    error: list[str]  # "" where the action succeeded
    pose: np.ndarray  # float32 [T, 5]
    held: np.ndarray  # int32 entity held after the step, -1 for none

    def __len__(self) -> int:
        return len(self.action)

    @property
    def position(self) -> np.ndarray:
        return self.pose[:, :3]

    @property
    def yaw(self) -> np.ndarray:
        return self.pose[:, 3]

    @property
    def pitch(self) -> np.ndarray:
        return self.pose[:, 4]


@dataclass
class Entities:
    """Columnar entities ``0..N-1``.

    ``instance_id`` is readable and unique in the episode (``CounterTop#2``); ``native_id`` is the
    simulator's own id (an AI2-THOR objectId, a HM3D semantic id, a Minecraft entity UUID).
    ``attributes`` holds static attributes (color, material, utility, size, category, ...);
    ``capabilities`` the sorted capability names (pickupable, receptacle, openable, ...).
    """

    instance_id: list[str]
    type: list[str]
    native_id: list[str]
    attributes: list[dict[str, str]]
    capabilities: list[tuple[str, ...]]

    def __len__(self) -> int:
        return len(self.instance_id)

    def index(self, instance_id: str) -> int:
        return self.instance_id.index(instance_id)

    def attribute(self, name: str) -> list[str | None]:
        """One attribute over all entities (None where an entity lacks it)."""
        return [a.get(name) for a in self.attributes]

    def has_capability(self, name: str) -> np.ndarray:
        return np.array([name in c for c in self.capabilities], dtype=bool)


@dataclass(frozen=True)
class Event:
    """A happening: ``kind`` (open, close, pickup, put, toggle_on, slice, heat, enter_region, ...) at step
    ``t`` on ``entity`` (and ``target``, e.g. the receptacle of a put, -1 if none). ``ordinal`` numbers
    the events of the same kind on entities of the same type, from 1 (:func:`number_events`)."""

    t: int
    kind: str
    entity: int
    target: int = -1
    ordinal: int = 1


@dataclass(frozen=True)
class Region:
    """A room or area: ``footprint`` is an axis-aligned box ``[xmin, ymin, zmin, xmax, ymax, zmax]`` in
    the episode frame."""

    region_id: str
    category: str
    footprint: tuple[float, float, float, float, float, float]
    name: str = ""

    @property
    def center(self) -> np.ndarray:
        f = np.asarray(self.footprint, dtype=np.float64)
        return (f[:3] + f[3:]) / 2.0


def number_events(events: Iterable[tuple[int, str, int, int]], types: Sequence[str]) -> list[Event]:
    """Raw ``(t, kind, entity, target)`` tuples as Events in time order, each with its ordinal: how many
    events of the same kind on an entity of the same type (``types[entity]``; an event without an entity,
    -1, counts among those of its kind without one) happened up to it. Counting per type, not per entity,
    makes "the second time you opened a fridge" name one event even with two fridges; the generators
    record, and questions name (``eqagen.predicates.context.name_events``), events by this one count."""
    seen: Counter[tuple[str, str]] = Counter()
    out = []
    for t, kind, ent, target in sorted(events, key=lambda e: (e[0], e[1], e[2], e[3])):
        key = (kind, str(types[ent]) if ent >= 0 else "")
        seen[key] += 1
        out.append(Event(int(t), kind, int(ent), int(target), seen[key]))
    return out


def make_episode_id(backend: str, scene_id: str, seed: int, *extra: object) -> str:
    """Stable id from where the episode came from; the same inputs always name the same episode."""
    return f"{backend}-{scene_id}-{stable_hash(backend, scene_id, seed, *extra, digest_size=6)}"


@dataclass
class Episode:
    episode_id: str
    family: str
    backend: str
    scene_id: str
    seed: int
    task: dict[str, Any]
    steps: Steps
    entities: Entities
    timeline: Timeline
    events: list[Event]
    regions: list[Region] = field(default_factory=list)
    frame: FrameTransform = field(default_factory=FrameTransform)
    meta: dict[str, Any] = field(default_factory=dict)  # success, stop_reason, instruction, ...

    def __post_init__(self) -> None:
        if self.family not in FAMILIES:
            raise ValueError(f"episode family '{self.family}' is not one of {FAMILIES}")
        if len(self.steps) != self.timeline.n_steps:
            raise ValueError(f"{len(self.steps)} steps but the timeline has {self.timeline.n_steps}")
        if len(self.entities) != self.timeline.n_entities:
            raise ValueError(f"{len(self.entities)} entities but the timeline has {self.timeline.n_entities}")

    @property
    def n_steps(self) -> int:
        return len(self.steps)

    @property
    def n_entities(self) -> int:
        return len(self.entities)

    def native_positions(self, points: np.ndarray) -> np.ndarray:
        """Episode-frame points reported in the simulator's native frame."""
        return self.frame.to_native(points)

    def to_dict(self) -> dict[str, Any]:
        """Plain, JSON-able nested record; :meth:`from_dict` inverts it (the episodes table's row is this,
        laid out by :func:`eqagen.outputs.schemas.episode_row`)."""
        return episode_to_dict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Episode:
        return episode_from_dict(d)


def _array_to_list(a: np.ndarray) -> list:
    return a.tolist()


def _field_to_dict(tl: Timeline, name: str) -> dict[str, Any]:
    """One timeline field with every value flattened to float64, so all fields share one fixed schema
    (float64 holds int32 indices and bools exactly); ``dtype`` and ``width`` restore the shape."""
    initial, changes = tl.initial[name], tl.changes[name]
    return {
        "name": name,
        "dtype": str(initial.dtype),
        "width": int(np.prod(initial.shape[1:], dtype=np.int64)),
        "initial": initial.astype(np.float64).ravel().tolist(),
        "t": _array_to_list(changes.t),
        "entity": _array_to_list(changes.entity),
        "value": changes.value.astype(np.float64).ravel().tolist(),
    }


def episode_to_dict(ep: Episode) -> dict[str, Any]:
    tl = ep.timeline
    return {
        "episode_id": ep.episode_id,
        "family": ep.family,
        "backend": ep.backend,
        "scene_id": ep.scene_id,
        "seed": int(ep.seed),
        "task": dict(ep.task),
        "meta": dict(ep.meta),
        "frame": ep.frame.to_dict(),
        "steps": {
            "action": list(ep.steps.action),
            "target": _array_to_list(ep.steps.target),
            "receptacle": _array_to_list(ep.steps.receptacle),
            "args": [json.dumps(a, sort_keys=True) for a in ep.steps.args],
            "success": _array_to_list(ep.steps.success),
            "error": list(ep.steps.error),
            "pose": _array_to_list(ep.steps.pose),
            "held": _array_to_list(ep.steps.held),
        },
        "entities": {
            "instance_id": list(ep.entities.instance_id),
            "type": list(ep.entities.type),
            "native_id": list(ep.entities.native_id),
            "attributes": [dict(a) for a in ep.entities.attributes],
            "capabilities": [list(c) for c in ep.entities.capabilities],
        },
        "timeline": {"n_steps": tl.n_steps, "fields": [_field_to_dict(tl, name) for name in tl.initial]},
        "events": [
            {"t": e.t, "kind": e.kind, "entity": e.entity, "target": e.target, "ordinal": e.ordinal} for e in ep.events
        ],
        "regions": [
            {"region_id": r.region_id, "category": r.category, "footprint": list(r.footprint), "name": r.name}
            for r in ep.regions
        ],
    }


def _field_from_dict(f: dict[str, Any]) -> tuple[np.ndarray, FieldChanges]:
    dtype, width = np.dtype(f["dtype"]), int(f["width"])
    shape = (-1,) if width == 1 else (-1, width)
    initial = np.asarray(f["initial"], dtype=np.float64).astype(dtype).reshape(shape)
    value = np.asarray(f["value"], dtype=np.float64).astype(dtype).reshape(shape)
    changes = FieldChanges(
        t=np.asarray(f["t"], dtype=np.int32), entity=np.asarray(f["entity"], dtype=np.int32), value=value
    )
    return initial, changes


def episode_from_dict(d: dict[str, Any]) -> Episode:
    s, e, tl = d["steps"], d["entities"], d["timeline"]
    initial, changes = {}, {}
    for f in tl["fields"]:
        initial[f["name"]], changes[f["name"]] = _field_from_dict(f)
    steps = Steps(
        action=list(s["action"]),
        target=np.asarray(s["target"], dtype=np.int32),
        receptacle=np.asarray(s["receptacle"], dtype=np.int32),
        args=json.loads("[" + ",".join(s["args"]) + "]"),  # one parse, not one per step (each is one JSON value)
        success=np.asarray(s["success"], dtype=bool),
        error=list(s["error"]),
        pose=np.asarray(s["pose"], dtype=np.float32).reshape(-1, 5),
        held=np.asarray(s["held"], dtype=np.int32),
    )
    entities = Entities(
        instance_id=list(e["instance_id"]),
        type=list(e["type"]),
        native_id=list(e["native_id"]),
        attributes=[dict(a) for a in e["attributes"]],
        capabilities=[tuple(c) for c in e["capabilities"]],
    )
    return Episode(
        episode_id=d["episode_id"],
        family=d["family"],
        backend=d["backend"],
        scene_id=d["scene_id"],
        seed=int(d["seed"]),
        task=dict(d["task"]),
        steps=steps,
        entities=entities,
        timeline=Timeline(n_steps=int(tl["n_steps"]), initial=initial, changes=changes),
        events=[Event(**ev) for ev in d["events"]],
        regions=[Region(r["region_id"], r["category"], tuple(r["footprint"]), r.get("name", "")) for r in d["regions"]],
        frame=FrameTransform.from_dict(d["frame"]),
        meta=dict(d["meta"]),
    )
