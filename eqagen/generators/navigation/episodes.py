"""A walked route in a navigation scene as a core :class:`~eqagen.core.Episode`.

The native frame is habitat's, so the episode carries ``FrameTransform("habitat", start, start_yaw)``.
Objects are entities (type = category; attributes: ``category``, ``color`` where known, ``region``
id, ``room`` category, ``kind`` = ``object``). After them comes one entity per region (type = room
category, capability ``region``, ``kind`` = ``region``, position = the region's centre, never
visible), so that events and filters can name a region and answers can be grounded by its position.
Regions are also listed as :class:`~eqagen.core.Region` with footprints in the episode frame (the
axis-aligned bounds of the rotated native box). The timeline holds each entity's position and whether
it is seen at each step. Events:

- ``enter_region`` at step t when the agent steps into a region other than the one it was last in;
  ``entity`` is the region's entity;
- ``pass`` at the step where the agent comes closest to an object, when that is within 1 m and after
  the start; ``entity`` is the object.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eqagen.core import (
    Entities,
    Episode,
    Event,
    FieldChanges,
    FrameTransform,
    Region,
    Steps,
    Timeline,
    make_episode_id,
    number_events,
)
from eqagen.generators.navigation.policies import Policy, Route
from eqagen.generators.navigation.scene import NavScene, SceneRegion
from eqagen.generators.navigation.visibility import Camera, visible_objects

PASS_DISTANCE = 1.0


def yaw_quaternion(yaw_deg: float | np.ndarray) -> np.ndarray:
    """habitat rotation about +y as a ``[w, x, y, z]`` quaternion (``(..., 4)``)."""
    half = np.deg2rad(np.asarray(yaw_deg, dtype=np.float64)) / 2.0
    zero = np.zeros_like(half)
    q = np.stack([np.cos(half), zero, np.sin(half), zero], axis=-1)
    return q * np.where(q[..., :1] < 0, -1.0, 1.0)  # q and -q are the same rotation: keep w >= 0


def build_episode(
    scene: NavScene,
    route: Route,
    policy: Policy,
    backend: str,
    seed: int,
    index: int,
    camera: Camera,
    extra_task: dict[str, Any] | None = None,
) -> Episode:
    positions, yaws = route.trajectory.as_arrays()
    frame = FrameTransform("habitat", tuple(float(v) for v in route.start), float(route.start_yaw))
    pose = np.zeros((len(positions), 5), dtype=np.float32)
    pose[:, :3] = frame.to_episode(positions)
    pose[:, 3] = frame.yaw_to_episode(yaws)
    meta = {
        "success": True,
        "stop_reason": "goal_reached",
        "n_actions": len(route.trajectory.actions),
        "path": np.round(route.path, 4).tolist(),
        "camera": {"hfov": camera.hfov_degrees, "range": camera.max_range},
    }
    entities = make_entities(scene)
    return Episode(
        episode_id=make_episode_id(backend, scene.scene_id, seed, index, policy.name),
        family="navigation",
        backend=backend,
        scene_id=scene.scene_id,
        seed=int(seed),
        task=task_record(route, policy) | (extra_task or {}),
        steps=make_steps(["Initialize", *route.trajectory.actions], pose),
        entities=entities,
        timeline=make_timeline(scene, frame, positions, yaws, camera),
        events=make_events(scene, positions, entities.type),
        regions=[to_core_region(r, frame) for r in scene.regions],
        frame=frame,
        meta=meta,
    )


def make_timeline(
    scene: NavScene, frame: FrameTransform, positions: np.ndarray, yaws: np.ndarray, camera: Camera
) -> Timeline:
    boxes = scene.object_boxes()
    region_boxes = np.asarray([r.box for r in scene.regions], dtype=np.float64).reshape(-1, 6)
    all_boxes = np.concatenate([boxes, region_boxes])
    visible = np.zeros((len(positions), len(all_boxes)), dtype=bool)
    visible[:, : len(boxes)] = visible_objects(scene.sight, positions, yaws, boxes, camera)
    centers = frame.to_episode((all_boxes[:, :3] + all_boxes[:, 3:]) / 2.0).astype(np.float32)
    n_steps, n_ent = len(positions), len(all_boxes)
    if n_ent == 0:  # a bare navigability map: no entities, so no changes to record
        empty = FieldChanges(np.zeros(0, np.int32), np.zeros(0, np.int32), np.zeros(0))
        initial = {
            "position": np.zeros((0, 3), np.float32),
            "visible": np.zeros(0, bool),
            "parent": np.zeros(0, np.int32),
        }
        changes = {k: FieldChanges(empty.t, empty.entity, initial[k][:0]) for k in initial}
        return Timeline(n_steps=n_steps, initial=initial, changes=changes)
    return Timeline.from_dense(
        {
            "position": np.broadcast_to(centers, (n_steps, n_ent, 3)),
            "visible": visible,
            "parent": np.full((n_steps, n_ent), -1, dtype=np.int32),
        }
    )


def task_record(route: Route, policy: Policy) -> dict[str, Any]:
    positions, yaws = route.trajectory.as_arrays()
    return {
        "policy": policy.name,
        "start_position": [float(v) for v in route.start],
        "start_rotation": yaw_quaternion(route.start_yaw).tolist(),
        "goal_position": [float(v) for v in route.goal],
        "goal_rotation": yaw_quaternion(yaws[-1]).tolist(),
        "final_position": [float(v) for v in positions[-1]],
        "geodesic_distance": float(route.geodesic),
        "euclidean_distance": float(route.euclidean),
        "island": int(route.island),
        "step_length": policy.step,
        "turn_degrees": policy.turn_degrees,
        "goal_radius": policy.space.goal_radius,
    }


def make_steps(actions: list[str], pose: np.ndarray) -> Steps:
    n = len(actions)
    return Steps(
        action=actions,
        target=np.full(n, -1, dtype=np.int32),
        receptacle=np.full(n, -1, dtype=np.int32),
        args=[{} for _ in range(n)],
        success=np.ones(n, dtype=bool),
        error=[""] * n,
        pose=pose,
        held=np.full(n, -1, dtype=np.int32),
    )


def make_entities(scene: NavScene) -> Entities:
    """Objects (``sofa#2``), then one entity per region (``region:bedroom#1``)."""
    counts: dict[str, int] = {}
    ids, types, native, attrs, caps = [], [], [], [], []
    for obj in scene.objects:
        counts[obj.category] = counts.get(obj.category, 0) + 1
        ids.append(f"{obj.category}#{counts[obj.category]}")
        a = {"category": obj.category, "kind": "object"}
        if obj.color:
            a["color"] = obj.color
        if obj.region >= 0:
            a["region"] = scene.regions[obj.region].region_id
            a["room"] = scene.regions[obj.region].category
        types.append(obj.category)
        native.append(str(obj.object_id))
        attrs.append(a)
        caps.append(())
    for reg in scene.regions:
        key = "region:" + reg.category
        counts[key] = counts.get(key, 0) + 1
        ids.append(f"{key}#{counts[key]}")
        types.append(reg.category)
        native.append(reg.region_id)
        attrs.append({"category": reg.category, "kind": "region", "region": reg.region_id, "room": reg.category})
        caps.append(("region",))
    return Entities(instance_id=ids, type=types, native_id=native, attributes=attrs, capabilities=caps)


def make_events(scene: NavScene, positions: np.ndarray, types: list[str]) -> list[Event]:
    raw: list[tuple[int, str, int, int]] = []
    region = scene.region_at(positions)
    n_obj, last = len(scene.objects), int(region[0])
    for t in range(1, len(region)):
        r = int(region[t])
        if r >= 0 and r != last:
            raw.append((t, "enter_region", n_obj + r, -1))
            last = r
    boxes = scene.object_boxes()
    if len(boxes):
        xz = positions[:, None, [0, 2]]
        nearest = np.clip(xz, boxes[None, :, [0, 2]], boxes[None, :, [3, 5]])
        dist = np.linalg.norm(nearest - xz, axis=-1)  # [T, N]
        closest = dist.argmin(axis=0)
        for n in np.flatnonzero((dist.min(axis=0) <= PASS_DISTANCE) & (closest > 0)):
            raw.append((int(closest[n]), "pass", int(n), -1))
    return number_events(raw, types)


def to_core_region(region: SceneRegion, frame: FrameTransform) -> Region:
    b = np.asarray(region.box, dtype=np.float64)
    corners = np.array([[x, y, z] for x in (b[0], b[3]) for y in (b[1], b[4]) for z in (b[2], b[5])])
    ep = frame.to_episode(corners)
    footprint = tuple(float(v) for v in np.round(np.concatenate([ep.min(axis=0), ep.max(axis=0)]), 4))
    return Region(region.region_id, region.category, footprint, name=region.category)  # type: ignore[arg-type]
