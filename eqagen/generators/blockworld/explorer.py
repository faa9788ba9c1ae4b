"""An explorer that walks a block world the way a player would, recorded in MineRL's action terms.

The explorer starts at the spawn, visits goals (the door of every enterable structure, a spot next to
every other structure and chest, the centre of every quadrant) nearest-first along shortest walks,
and looks around at each goal (quarter turns, glancing down and back up). Moves are single blocks: it
turns with the camera (``[delta pitch, delta yaw]`` in degrees) to face the next block and walks
``forward`` (with ``jump`` to climb one block), or sometimes side-steps with ``left``/``right`` without
turning, and sprints on long straight stretches. Poses are ``location_stats``-style: feet position
(``xpos``, ``ypos``, ``zpos``), ``yaw`` and ``pitch`` in Minecraft's native frame (yaw 0 faces south,
+z; 90 faces west).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eqagen.generators.blockworld.navigation import WalkGraph, build_walk_graph, path_to
from eqagen.generators.blockworld.world import BlockWorld

ACTION_KEYS = ("forward", "back", "left", "right", "jump", "sneak", "sprint", "attack")
# Minecraft yaw of each horizontal step (dx, dz).
_YAW_OF_STEP = {(0, 1): 0.0, (-1, 0): 90.0, (0, -1): 180.0, (1, 0): 270.0}


@dataclass
class Walk:
    """The recorded walk: one row per step (step 0 is the start, action ``Initialize``)."""

    actions: list[str] = field(default_factory=list)
    args: list[dict] = field(default_factory=list)
    feet: list[tuple[float, float, float]] = field(default_factory=list)  # voxel frame
    yaw: list[float] = field(default_factory=list)  # native degrees in [0, 360)
    pitch: list[float] = field(default_factory=list)
    goals: list[str] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)  # per step, "" where it succeeded (empty: all did)

    def __len__(self) -> int:
        return len(self.actions)


def minerl_action(camera: tuple[float, float] = (0.0, 0.0), **keys: int) -> dict:
    """A MineRL action dict: every key 0 unless given, ``camera`` = [delta pitch, delta yaw]."""
    out = {k: int(keys.get(k, 0)) for k in ACTION_KEYS}
    out["camera"] = [float(camera[0]), float(camera[1])]
    return out


def action_name(action: dict) -> str:
    keys = [k for k in ACTION_KEYS if action[k]]
    if action["camera"][0] or action["camera"][1]:
        keys.append("camera")
    return "+".join(keys) or "noop"


class _Recorder:
    def __init__(self, walk: Walk, origin: np.ndarray):
        self.walk, self.origin = walk, origin

    def record(self, action: dict, feet: np.ndarray, yaw: float, pitch: float) -> None:
        native = self.origin + feet
        action = dict(action)
        action["location_stats"] = {
            "xpos": round(float(native[0]), 4),
            "ypos": round(float(native[1]), 4),
            "zpos": round(float(native[2]), 4),
            "yaw": float(yaw),
            "pitch": float(pitch),
        }
        self.walk.actions.append(action_name(action) if self.walk.actions else "Initialize")
        self.walk.args.append(action)
        self.walk.feet.append(tuple(float(v) for v in feet))  # type: ignore[arg-type]
        self.walk.yaw.append(float(yaw))
        self.walk.pitch.append(float(pitch))


def _wrap(deg: float) -> float:
    return float((deg + 180.0) % 360.0 - 180.0)


@dataclass(frozen=True)
class ExplorerParams:
    max_steps: int = 500
    look_around: int = 4  # quarter turns of the camera at each goal
    strafe_prob: float = 0.25  # side-step instead of turning when the next block is to the side
    sprint_after: int = 4  # straight forward steps before sprinting
    glance: float = 20.0  # degrees the camera tilts down while looking around


def goal_targets(world: BlockWorld, graph: WalkGraph, reachable: np.ndarray, ground_y: float) -> list[tuple[str, int]]:
    """(name, node) goals: doors, the spot nearest every structure and chest, the quadrant centres."""
    goals: list[tuple[str, int]] = []
    for s in world.structures:
        spot = (
            s.door
            if s.enterable and s.door is not None
            else ((s.bbox[0] + s.bbox[3]) / 2, ground_y, (s.bbox[2] + s.bbox[5]) / 2)
        )
        goals.append((s.structure_id, graph.nearest(np.asarray(spot, float), reachable)))
    for i, c in enumerate(world.chests):
        goals.append((f"chest#{i + 1}", graph.nearest(np.asarray(c.position, float), reachable)))
    sx, _, sz = world.shape
    for name, (fx, fz) in {
        "northwest": (0.25, 0.25),
        "northeast": (0.75, 0.25),
        "southwest": (0.25, 0.75),
        "southeast": (0.75, 0.75),
    }.items():
        goals.append((name, graph.nearest(np.array([fx * sx, ground_y, fz * sz]), reachable)))
    seen, out = set(), []
    for name, node in goals:
        if node not in seen:
            seen.add(node)
            out.append((name, node))
    return out


class _Walker:
    def __init__(self, world: BlockWorld, graph: WalkGraph, rng: np.random.Generator, params: ExplorerParams):
        self.world, self.graph, self.rng, self.params = world, graph, rng, params
        self.walk = Walk()
        self.rec = _Recorder(self.walk, np.asarray(world.origin, np.float64))
        self.yaw, self.pitch, self.run = float(rng.choice([0.0, 90.0, 180.0, 270.0])), 0.0, 0
        self.node = -1

    def feet(self, node: int) -> np.ndarray:
        return self.graph.cells[node] + np.array([0.5, 0.0, 0.5])

    def full(self) -> bool:
        return len(self.walk) >= self.params.max_steps

    def start(self, node: int) -> None:
        self.node = node
        self.rec.record(minerl_action(), self.feet(node), self.yaw, self.pitch)

    def turn(self, d_yaw: float, d_pitch: float = 0.0) -> None:
        self.yaw = float((self.yaw + d_yaw) % 360.0)
        self.pitch = min(90.0, max(-90.0, self.pitch + d_pitch))
        self.run = 0
        self.rec.record(minerl_action((d_pitch, d_yaw)), self.feet(self.node), self.yaw, self.pitch)

    def step_to(self, nxt: int) -> None:
        dx, dy, dz = (int(v) for v in self.graph.cells[nxt] - self.graph.cells[self.node])
        relative = _wrap(_YAW_OF_STEP[(dx, dz)] - self.yaw)
        jump = int(dy > 0)
        if relative == 0.0:
            self.run += 1
            key = {"forward": 1, "jump": jump, "sprint": int(self.run > self.params.sprint_after)}
        elif abs(relative) == 90.0 and self.rng.random() < self.params.strafe_prob:
            key = {"right" if relative > 0 else "left": 1, "jump": jump}
        elif abs(relative) == 180.0 and self.rng.random() < self.params.strafe_prob:
            key = {"back": 1, "jump": jump}
        else:
            self.turn(relative)
            if self.full():
                return
            self.run, key = 1, {"forward": 1, "jump": jump}
        self.node = nxt
        self.rec.record(minerl_action(**key), self.feet(nxt), self.yaw, self.pitch)

    def look_around(self) -> None:
        """Quarter turns of the camera, glancing down on the first and back up on the last, as a player
        scans the ground around them."""
        n = self.params.look_around
        for k in range(n):
            if self.full():
                return
            d_pitch = self.params.glance if k == 0 and n > 1 else (-self.pitch if k == n - 1 else 0.0)
            self.turn(90.0, d_pitch)
        if self.pitch and not self.full():
            self.turn(0.0, -self.pitch)


def _things(world: BlockWorld) -> np.ndarray:
    """Voxel-frame points of what there is to see: mobs, chests, plants."""
    from eqagen.generators.blockworld.features import detect_cacti, detect_trees

    pts = [m.position for m in world.mobs] + [c.position for c in world.chests]
    pts += [f.position for f in detect_trees(world) + detect_cacti(world)]
    return np.asarray(pts, dtype=np.float64).reshape(-1, 3)


def start_node(world: BlockWorld, graph: WalkGraph) -> int:
    """The standable voxel nearest the spawn (the world's centre if it has none), in the walkable area
    next to the most things (mobs, chests, plants), among areas at least a quarter the size of the
    largest: a large flat roof or a tunnel under PQB's structures does not strand the walk."""
    from scipy.sparse.csgraph import connected_components

    sx, _, sz = world.shape
    spawn = np.asarray(world.spawn if world.spawn is not None else (sx / 2, 0.0, sz / 2), float)
    _, labels = connected_components(graph.graph, directed=True, connection="weak")
    sizes = np.bincount(labels)
    big = np.flatnonzero(sizes >= sizes.max() / 4)
    things = _things(world)
    if len(big) > 1 and len(things):
        d = np.abs(things[:, None, :] - (graph.cells[None, :, :] + 0.5)).sum(axis=2)
        near = np.bincount(labels[np.argmin(d, axis=1)], minlength=len(sizes))[big]
        area = big[np.lexsort((-sizes[big], -near))[0]]
    else:
        area = int(sizes.argmax())
    return graph.nearest(spawn, np.flatnonzero(labels == area))


def explore(
    world: BlockWorld, rng: np.random.Generator, params: ExplorerParams | None = None, graph: WalkGraph | None = None
) -> Walk:
    """Walk the world visiting every goal nearest-first; stops after ``params.max_steps`` steps."""
    from scipy.sparse.csgraph import shortest_path

    params = params or ExplorerParams()
    graph = graph or build_walk_graph(world)
    if len(graph.cells) == 0:
        raise ValueError(f"world {world.scene_id} has no standable voxel")
    walker = _Walker(world, graph, rng, params)
    walker.start(start_node(world, graph))
    order, _ = graph.reachable_from(walker.node)
    pending = goal_targets(world, graph, order, float(graph.cells[walker.node][1]))
    while pending and not walker.full():
        dist, pred = shortest_path(graph.graph, unweighted=True, indices=walker.node, return_predecessors=True)
        costs = [dist[node] for _, node in pending]
        best = int(np.argmin(costs))
        name, goal = pending.pop(best)
        if not np.isfinite(costs[best]):
            continue
        for nxt in path_to(pred, goal)[1:]:
            if walker.full():
                break
            walker.step_to(nxt)
        walker.walk.goals.append(name)
        walker.look_around()
    return walker.walk
