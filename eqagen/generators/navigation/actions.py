"""Atomic actions along a shortest path: ``move_forward`` by a fixed step and turns by a fixed angle.

habitat-sim's agent moves by discrete actions: ``move_forward`` (0.25 m by default) and
``turn_left``/``turn_right`` (10 degrees by default; 30 in EXPRESS-Bench and HM3D ObjectNav, 15 in
OpenEQA's renders). Its ``GreedyGeodesicFollower`` turns toward the geodesic path and steps forward
until the agent is within the goal radius (0.75 times the step here). :func:`follow_path` does the same
on a path's waypoints: it aims at the furthest waypoint in sight, turns to the lattice heading closest
to it, and walks the run of forward steps that ends nearest to it, taking only moves whose whole
0.25 m segment is navigable (so every ``move_forward`` moves exactly one step and every turn moves
nothing). Runs are checked in one vectorised call, which keeps a 100-action episode to a few dozen
array operations.

Angles here are habitat's native yaw: degrees counter-clockwise about +y, 0 facing -Z; ``turn_left``
adds the turn angle. Positions are native ``[x, y, z]``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from eqagen.core import TaskError
from eqagen.generators.navigation.pathfinder import PathFinder, ShortestPath

MOVE_FORWARD, TURN_LEFT, TURN_RIGHT = "move_forward", "turn_left", "turn_right"


@dataclass(frozen=True)
class ActionSpace:
    step: float = 0.25
    turn_degrees: float = 30.0
    goal_radius_factor: float = 0.75  # goal radius = factor * step, as in habitat's ObjectNav settings
    max_actions: int = 500

    @property
    def goal_radius(self) -> float:
        return self.goal_radius_factor * self.step

    def __post_init__(self) -> None:
        if self.step <= 0 or not 0 < self.turn_degrees <= 180:
            raise TaskError(f"action space needs step > 0 and 0 < turn <= 180, got {self.step}, {self.turn_degrees}")


@dataclass
class Trajectory:
    """Actions and the pose after each: ``positions``/``yaws`` have one more row than ``actions``
    (row 0 is the start pose)."""

    actions: list[str] = field(default_factory=list)
    positions: list[np.ndarray] = field(default_factory=list)
    yaws: list[float] = field(default_factory=list)

    def turn(self, n: int, turn_degrees: float) -> None:
        """``n`` turns to the left (positive) or right (negative); the position stays."""
        for _ in range(abs(n)):
            self.actions.append(TURN_LEFT if n > 0 else TURN_RIGHT)
            self.yaws.append((self.yaws[-1] + np.sign(n) * turn_degrees) % 360.0)
            self.positions.append(self.positions[-1])

    def forward(self, points: np.ndarray) -> None:
        for p in points:
            self.actions.append(MOVE_FORWARD)
            self.positions.append(p)
            self.yaws.append(self.yaws[-1])

    def as_arrays(self) -> tuple[np.ndarray, np.ndarray]:
        return np.asarray(self.positions, dtype=np.float64), np.asarray(self.yaws, dtype=np.float64)


def forward_vector(yaw_deg: float | np.ndarray) -> np.ndarray:
    """habitat's forward direction ``(..., 3)`` for a native yaw: (-sin, 0, -cos)."""
    r = np.deg2rad(np.asarray(yaw_deg, dtype=np.float64))
    return np.stack([-np.sin(r), np.zeros_like(r), -np.cos(r)], axis=-1)


def heading_to(src: np.ndarray, dst: np.ndarray) -> float:
    """Native yaw (degrees) that faces from ``src`` to ``dst``."""
    d = dst - src
    return float(np.rad2deg(np.arctan2(-d[0], -d[2])) % 360.0)


def signed_turns(yaw: float, target: float, turn: float) -> list[int]:
    """Turn counts (positive = left), ordered by how close the resulting heading is to ``target``
    (fewer turns first on ties). Plain Python: a dozen scalars are cheaper than arrays."""
    n_max = math.ceil(180.0 / turn)
    counts = range(-n_max, n_max + 1)
    return sorted(counts, key=lambda n: (abs((yaw + n * turn - target + 180.0) % 360.0 - 180.0), abs(n)))


def follow_path(pf: PathFinder, waypoints: np.ndarray, start_yaw: float, space: ActionSpace) -> Trajectory | None:
    """Actions that take the agent from ``waypoints[0]`` to within the goal radius of
    ``waypoints[-1]``; None when it cannot get there within ``space.max_actions``."""
    wp = np.asarray(waypoints, dtype=np.float64)
    traj = Trajectory(positions=[wp[0].copy()], yaws=[float(start_yaw) % 360.0])
    k = 1
    while len(traj.actions) <= space.max_actions:
        pos = traj.positions[-1]
        if math.hypot(*(pos - wp[-1]).tolist()) <= space.goal_radius:
            return traj
        k = furthest_in_sight(pf, pos, wp, k)
        if take_run(pf, traj, wp[k], space):
            continue
        if k < len(wp) - 1 and np.linalg.norm(pos - wp[k]) < space.step:
            k += 1  # close enough to an intermediate waypoint: aim at the next one
            continue
        # Off the path's straight lines (a lattice heading grazes a wall): take the single step that
        # most shortens the geodesic, as habitat's greedy follower does, then plan again from there.
        if not geodesic_step(pf, traj, wp[-1], space):
            return None
        wp, k = replan(pf, traj.positions[-1], wp[-1]), 1
        if wp is None:
            return None
    return None


def replan(pf: PathFinder, start: np.ndarray, goal: np.ndarray) -> np.ndarray | None:
    path = ShortestPath(start, goal)
    if not pf.find_path(path):
        return None
    pts = np.asarray(path.points)
    pts[0] = start  # the agent's own position, not its snapped copy
    return pts


def geodesic_step(pf: PathFinder, traj: Trajectory, goal: np.ndarray, space: ActionSpace) -> bool:
    """Turn (fewest turns first) and make the one clear step that most shortens the geodesic."""
    pos, yaw = traj.positions[-1], traj.yaws[-1]
    n_max = int(np.ceil(180.0 / space.turn_degrees))
    counts = np.arange(-n_max, n_max + 1)
    counts = counts[np.argsort(np.abs(counts), kind="stable")]
    ends = pos + space.step * forward_vector(yaw + counts * space.turn_degrees)
    clear = pf.segment_clear(pos, ends)
    if not clear.any():
        return False
    dists = pf.geodesic_distances(np.concatenate([pos[None], ends[clear]]), goal)
    here, dists = dists[0], dists[1:]
    best = int(np.argmin(dists))
    if dists[best] >= here - 1e-9:
        return False
    traj.turn(int(counts[clear][best]), space.turn_degrees)
    traj.forward(ends[clear][best][None])
    return True


def furthest_in_sight(pf: PathFinder, pos: np.ndarray, wp: np.ndarray, k: int) -> int:
    """The last of the consecutive waypoints from ``k + 1`` on that a straight move from ``pos``
    could reach (``k`` if none)."""
    while k + 1 < len(wp) and pf.segment_clear(pos, wp[k + 1 : k + 2])[0]:
        k += 1
    return k


def take_run(pf: PathFinder, traj: Trajectory, target: np.ndarray, space: ActionSpace) -> bool:
    """Turn to the best lattice heading toward ``target`` and walk the clear run of steps that ends
    closest to it. False if no heading gives progress. (Scalar maths in Python floats: this runs a few
    times per episode and numpy's per-call cost would dominate.)"""
    pos, yaw, step = traj.positions[-1], traj.yaws[-1], space.step
    px, py, pz = pos.tolist()
    dx, dz = float(target[0]) - px, float(target[2]) - pz
    dist = math.hypot(dx, dz)
    wanted = math.degrees(math.atan2(-dx, -dz)) % 360.0
    for n in signed_turns(yaw, wanted, space.turn_degrees)[:7]:
        h = math.radians(yaw + n * space.turn_degrees)
        fx, fz = -math.sin(h), -math.cos(h)
        n_steps = round((dx * fx + dz * fz) / step)
        if n_steps <= 0:
            continue
        k = np.arange(1, n_steps + 1) * step
        ends = np.stack([px + k * fx, np.full(n_steps, py), pz + k * fz], axis=1)
        n_clear = clear_prefix(pf, pos, ends)
        if n_clear == 0:
            continue
        remaining = math.hypot(px + n_clear * step * fx - dx - px, pz + n_clear * step * fz - dz - pz)
        if remaining >= dist - 1e-9:
            continue
        traj.turn(int(n), space.turn_degrees)
        traj.forward(ends[:n_clear])
        return True
    return False


def clear_prefix(pf: PathFinder, pos: np.ndarray, ends: np.ndarray) -> int:
    """How many of the collinear steps ``pos -> ends[i]`` are clear: if a step is clear so are all
    shorter ones, so the whole run is checked first and otherwise a binary search finds the block."""
    if pf.segment_clear(pos, ends[-1:])[0]:
        return len(ends)
    lo, hi = 0, len(ends) - 1  # ends[:lo] clear; ends[hi:] blocked
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if pf.segment_clear(pos, ends[mid - 1 : mid])[0]:
            lo = mid
        else:
            hi = mid - 1
    return lo
