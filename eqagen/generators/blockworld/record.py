"""A walk through a block world as a core :class:`~eqagen.core.Episode`.

Entities are the world's mobs, chests, structures and plants (trees, cacti, nether fungi), with static
attributes (category, biome, quadrant, material, the structure they are inside, a chest's items).
Mobs stand still while the player walks (no mob AI is simulated), so positions are constant; the
timeline's ``visible`` field says which entities the player could see at each step. Events are
``enter``/``exit`` (the player's feet entering or leaving a structure's box: "after you entered the
house").
Regions are the structures and the four quadrants. The world's
ground truth (biome, block counts, mobs, plants and structures per quadrant, blocks seen) is kept in
``episode.meta`` so every answer can be recomputed from the episode alone.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import asdict, dataclass

import numpy as np

from eqagen.core import Entities, Episode, FrameTransform, Region, Steps, Timeline, make_episode_id, number_events
from eqagen.generators.blockworld.explorer import Walk
from eqagen.generators.blockworld.features import Feature, detect_cacti, detect_trees, ground_truth
from eqagen.generators.blockworld.palette import base_name, short_name
from eqagen.generators.blockworld.visibility import ViewParams, blocks_seen, visible_points
from eqagen.generators.blockworld.world import QUADRANTS, BlockWorld, Structure, material_label

_MOB_HEIGHT = {
    "bat": 0.45,
    "chicken": 0.7,
    "rabbit": 0.5,
    "wolf": 0.85,
    "pig": 0.9,
    "sheep": 1.3,
    "cow": 1.4,
    "polar_bear": 1.4,
    "strider": 1.7,
    "villager": 1.95,
}


def _v(x: float, y: float, z: float) -> np.ndarray:
    return np.array([x, y, z], dtype=np.float64)


@dataclass
class WorldEntity:
    type: str
    native_id: str
    attributes: dict[str, str]
    capabilities: tuple[str, ...]
    position: np.ndarray  # voxel frame, the entity's reference point
    samples: np.ndarray  # [K, 3] voxel-frame points tested for visibility


def _inside(world: BlockWorld, point: np.ndarray) -> str:
    for s in world.structures:
        if s.contains(point):
            return s.structure_id
    return ""


def _base_attrs(world: BlockWorld, category: str, point: np.ndarray) -> dict[str, str]:
    return {
        "category": category,
        "biome": world.biome,
        "quadrant": world.quadrant_of(point[0], point[2]),
        "inside": _inside(world, point),
    }


def _mob_entities(world: BlockWorld) -> list[WorldEntity]:
    out = []
    for m in world.mobs:
        p = np.asarray(m.position, float)
        h = _MOB_HEIGHT.get(m.kind, 1.0)
        uuid = "-".join(f"{v & 0xFFFFFFFF:08x}" for v in m.uuid)
        attrs = _base_attrs(world, "mob", p) | {f"nbt_{k}": str(v) for k, v in m.extra.items()}
        out.append(WorldEntity(m.kind, uuid, attrs, (), p, np.array([p + _v(0, h / 2, 0), p + _v(0, h, 0)])))
    return out


def _chest_entities(world: BlockWorld) -> list[WorldEntity]:
    out = []
    for c in world.chests:
        centre = np.asarray(c.position, float) + 0.5
        items = ",".join(f"{i.split(':')[-1]}:{n}" for i, n in c.items)
        attrs = _base_attrs(world, "container", centre) | {"material": "wood", "items": items}
        samples = centre + np.array([[0, 0.45, 0], [0.45, 0, 0.45], [-0.45, 0, -0.45]])
        out.append(
            WorldEntity("chest", ",".join(map(str, c.position)), attrs, ("openable", "receptacle"), centre, samples)
        )
    return out


def _structure_samples(bbox) -> np.ndarray:
    lo, hi = np.asarray(bbox[:3], float), np.asarray(bbox[3:], float)
    c = (lo + hi) / 2
    mid_y = lo[1] + min(1.5, (hi[1] - lo[1]) / 2)
    return np.array(
        [
            [c[0], hi[1] + 0.4, c[2]],
            [lo[0] - 0.6, mid_y, c[2]],
            [hi[0] + 0.6, mid_y, c[2]],
            [c[0], mid_y, lo[2] - 0.6],
            [c[0], mid_y, hi[2] + 0.6],
        ]
    )


_NEIGHBOURS = np.array([[1, 0, 0], [-1, 0, 0], [0, 1, 0], [0, -1, 0], [0, 0, 1], [0, 0, -1]])


def _exposed_material_samples(world: BlockWorld, s: Structure, max_points: int = 12) -> np.ndarray:
    """Points in the air next to blocks of a structure's material, evenly spread, at most ``max_points``:
    PQB's structures fill a quadrant, so the outside of their faces is the world's edge or another
    quadrant, and seeing them means seeing their blocks."""
    x0, y0, z0, x1, y1, z1 = s.bbox
    table = world.palette.ids_where(lambda st: short_name(st) == s.material)
    passable = world.palette.passable_table()[world.blocks]
    blocks = np.argwhere(table[world.blocks[x0:x1, y0:y1, z0:z1]]) + np.array([x0, y0, z0])
    out = []
    for d in _NEIGHBOURS:
        n = blocks + d
        ok = np.all((n >= 0) & (n < np.asarray(world.shape)), axis=1)
        ok[ok] = passable[tuple(n[ok].T)]
        out.append(n[ok])
    air = np.unique(np.concatenate(out), axis=0) if out else np.zeros((0, 3), int)
    if len(air) == 0:
        return np.zeros((0, 3))
    pick = np.linspace(0, len(air) - 1, min(max_points, len(air))).round().astype(int)
    return air[pick] + 0.5


def _structure_entities(world: BlockWorld) -> list[WorldEntity]:
    out = []
    for s in world.structures:
        lo, hi = np.asarray(s.bbox[:3], float), np.asarray(s.bbox[3:], float)
        attrs = {
            "category": "structure",
            "biome": world.biome,
            "quadrant": s.quadrant,
            "inside": "",
            "material": material_label(s.material),
            "name": s.structure_id,
        }
        caps = ("enterable",) if s.enterable else ()
        samples = _structure_samples(s.bbox)
        if s.kind == "structure":
            samples = np.concatenate([samples, _exposed_material_samples(world, s)])
        out.append(WorldEntity(s.kind, s.structure_id, attrs, caps, (lo + hi) / 2, samples))
    return out


def _plant_entities(world: BlockWorld, plants: list[Feature]) -> list[WorldEntity]:
    out = []
    for f in plants:
        base = np.asarray(f.position, float) + _v(0.5, 0.0, 0.5)
        attrs = _base_attrs(world, "plant", base) | {"material": material_label(f.material), "height": str(f.height)}
        samples = np.array([base + _v(0, 0.5, 0), base + _v(0, f.height - 0.5, 0), base + _v(0, f.height + 0.5, 0)])
        out.append(
            WorldEntity(f.kind, ",".join(map(str, f.position)), attrs, (), base + _v(0, f.height / 2, 0), samples)
        )
    return out


def world_entities(world: BlockWorld) -> list[WorldEntity]:
    plants = detect_trees(world) + detect_cacti(world)
    return _mob_entities(world) + _chest_entities(world) + _structure_entities(world) + _plant_entities(world, plants)


def instance_ids(types: list[str]) -> list[str]:
    seen: Counter[str] = Counter()
    out = []
    for t in types:
        seen[t] += 1
        out.append(f"{t}#{seen[t]}")
    return out


def _entity_visibility(
    world: BlockWorld, ents: list[WorldEntity], feet: np.ndarray, yaw: np.ndarray, pitch: np.ndarray, params: ViewParams
) -> np.ndarray:
    occluding = ~world.palette.see_through_table()[world.blocks]
    if not ents:
        return np.zeros((len(feet), 0), dtype=bool)
    samples = np.concatenate([e.samples for e in ents])
    starts = np.cumsum([0] + [len(e.samples) for e in ents[:-1]])
    vis = visible_points(occluding, feet, yaw, pitch, samples, params)
    return np.maximum.reduceat(vis, starts, axis=1)


def _structure_events(world: BlockWorld, ents: list[WorldEntity], feet: np.ndarray) -> list[tuple[int, str, int, int]]:
    raw = []
    ids = [e.native_id for e in ents]
    for s in world.structures:
        inside = s.contains(feet + _v(0.0, 0.1, 0.0)).astype(np.int8)
        change = np.diff(np.concatenate([[0], inside]))
        k = ids.index(s.structure_id)
        raw += [(int(t), "enter", k, -1) for t in np.flatnonzero(change == 1)]
        raw += [(int(t), "exit", k, -1) for t in np.flatnonzero(change == -1)]
    return raw


def _regions(world: BlockWorld, frame: FrameTransform) -> list[Region]:
    origin = np.asarray(world.origin, float)

    def footprint(lo, hi) -> tuple[float, ...]:
        corners = np.array([[x, y, z] for x in (lo[0], hi[0]) for y in (lo[1], hi[1]) for z in (lo[2], hi[2])])
        pts = frame.to_episode(origin + corners)
        return tuple(float(v) for v in np.concatenate([pts.min(axis=0), pts.max(axis=0)]).round(4))

    out = [Region(s.structure_id, s.kind, footprint(s.bbox[:3], s.bbox[3:]), s.structure_id) for s in world.structures]
    sx, sy, sz = world.shape
    for q in QUADRANTS:
        x0 = 0 if q.endswith("west") else sx / 2
        z0 = 0 if q.startswith("north") else sz / 2
        out.append(Region(q, "quadrant", footprint((x0, 0, z0), (x0 + sx / 2, sy, z0 + sz / 2)), q))
    return out


def _blocks_seen_counts(world: BlockWorld, feet: np.ndarray, yaw: np.ndarray, pitch: np.ndarray) -> dict[str, int]:
    occluding = ~world.palette.see_through_table()[world.blocks]
    every = slice(None, None, 8)
    voxels = blocks_seen(occluding, feet[every], yaw[every], pitch[every])
    ids = world.blocks[voxels[:, 0], voxels[:, 1], voxels[:, 2]] if len(voxels) else np.zeros(0, int)
    counts = Counter(base_name(world.palette.states[i]) for i in ids.tolist())
    return dict(sorted(counts.items()))


def _timeline(positions: np.ndarray, visible: np.ndarray) -> Timeline:
    """Constant positions and no parents (no changes), visibility as initial state plus changes."""
    n = positions.shape[0]
    dense = Timeline.from_dense({"visible": visible})
    static = Timeline.from_dense({"position": positions[None], "parent": np.full((1, n), -1, np.int32)})
    return Timeline(
        n_steps=visible.shape[0],
        initial={"position": positions, "visible": dense.initial["visible"], "parent": static.initial["parent"]},
        changes={
            "position": static.changes["position"],
            "visible": dense.changes["visible"],
            "parent": static.changes["parent"],
        },
    )


def _steps(walk: Walk, pose: np.ndarray) -> Steps:
    t_len = len(walk)
    errors = list(walk.errors) if walk.errors else [""] * t_len
    none = np.full(t_len, -1, np.int32)
    return Steps(
        action=list(walk.actions),
        target=none,
        receptacle=none.copy(),
        args=list(walk.args),
        success=np.array([not e for e in errors], dtype=bool),
        error=errors,
        pose=pose,
        held=none.copy(),
    )


def _meta(world: BlockWorld, walk: Walk, visible: np.ndarray, feet, yaw, pitch) -> dict:
    return {
        "ground_truth": asdict(ground_truth(world)),
        "blocks_seen": _blocks_seen_counts(world, feet, yaw, pitch),
        "goals": walk.goals,
        "coverage": float(visible.any(axis=0).mean()) if visible.shape[1] else 1.0,
        "world_shape": list(world.shape),
        "world_origin": list(world.origin),
        "world_source": world.meta.get("source", ""),
        "missing_structures": world.meta.get("missing_structures", []),
    }


def walk_to_episode(
    world: BlockWorld, walk: Walk, backend: str, seed: int, index: int = 0, params: ViewParams | None = None
) -> Episode:
    """The episode of one walk: entities from the world, visibility from the walk's poses."""
    ents = world_entities(world)
    feet, yaw, pitch = np.asarray(walk.feet, float), np.asarray(walk.yaw, float), np.asarray(walk.pitch, float)
    origin = np.asarray(world.origin, float)
    frame = FrameTransform("minecraft", tuple(float(v) for v in origin + feet[0]), float(yaw[0]))
    visible = _entity_visibility(world, ents, feet, yaw, pitch, params or ViewParams())
    positions = frame.to_episode(origin + np.array([e.position for e in ents]).reshape(-1, 3)).astype(np.float32)
    pose = np.column_stack([frame.to_episode(origin + feet), frame.yaw_to_episode(yaw), pitch]).astype(np.float32)
    entities = Entities(
        instance_ids([e.type for e in ents]),
        [e.type for e in ents],
        [e.native_id for e in ents],
        [e.attributes for e in ents],
        [e.capabilities for e in ents],
    )
    return Episode(
        episode_id=make_episode_id(backend, world.scene_id, seed, index),
        family="blockworld",
        backend=backend,
        scene_id=world.scene_id,
        seed=int(seed),
        task={"type": "explore", "biome": world.biome},
        steps=_steps(walk, pose),
        entities=entities,
        timeline=_timeline(positions, visible),
        events=number_events(_structure_events(world, ents, feet), entities.type),
        regions=_regions(world, frame),
        frame=frame,
        meta=_meta(world, walk, visible, feet, yaw, pitch),
    )
