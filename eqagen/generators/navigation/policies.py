"""How start and goal are chosen and walked: EXPRESS-Bench's and OpenEQA's trajectory policies.

``express`` (EXPRESS-Bench): a random navigable start and a random goal on the same island (so the
same floor), the shortest sequence of atomic actions (move_forward 0.25 m, turns of 30 degrees) from
one to the other, kept when it has 10 to 100 actions; the geodesic distance is recorded.

``openeqa`` (OpenEQA's HM3D episodes): start and goal with a geodesic distance over 10 m and at least
1.1 times the straight-line distance, so the path curves through several rooms; turns of 15 degrees
(OpenEQA's renders), and every 1 m walked the agent scans by rotating 90 degrees to one side, 180 to
the other and back (a 180 degree sweep).

Each attempt that fails is counted by reason in :class:`PolicyStats`; :func:`summarise` gives the
statistics of a set of routes.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqagen.core import TaskError
from eqagen.generators.navigation.actions import ActionSpace, Trajectory, follow_path
from eqagen.generators.navigation.pathfinder import PathFinder, ShortestPath


@dataclass(frozen=True)
class Policy:
    name: str = "express"
    step: float = 0.25
    turn_degrees: float = 30.0
    min_actions: int = 10
    max_actions: int = 100
    min_geodesic: float = 0.0  # metres, exclusive
    min_ratio: float = 1.0  # geodesic / straight-line
    scan_every: float = 0.0  # metres walked between scans; 0 = no scans
    scan_degrees: float = 180.0
    max_tries: int = 300

    @property
    def space(self) -> ActionSpace:
        # Scans are added after the route is walked, so the walk itself is bounded by max_actions.
        return ActionSpace(step=self.step, turn_degrees=self.turn_degrees, max_actions=self.max_actions)


EXPRESS = Policy("express", turn_degrees=30.0, min_actions=10, max_actions=100)
OPENEQA = Policy(
    "openeqa",
    turn_degrees=15.0,
    min_actions=1,
    max_actions=1000,
    min_geodesic=10.0,
    min_ratio=1.1,
    scan_every=1.0,
    scan_degrees=180.0,
)
POLICIES = {"express": EXPRESS, "openeqa": OPENEQA}


@dataclass
class PolicyStats:
    attempts: int = 0
    accepted: int = 0
    rejected: Counter = field(default_factory=Counter)

    def to_dict(self) -> dict[str, Any]:
        return {"attempts": self.attempts, "accepted": self.accepted, "rejected": dict(sorted(self.rejected.items()))}


@dataclass
class Route:
    start: np.ndarray  # native
    goal: np.ndarray
    start_yaw: float  # habitat yaw, degrees
    island: int
    geodesic: float
    euclidean: float
    path: np.ndarray  # waypoints [K, 3]
    trajectory: Trajectory
    n_walk_actions: int  # actions before scans were added


# (path finder, waypoints, start yaw, action space) -> trajectory or None: the embedded follower, or
# habitat-sim's GreedyGeodesicFollower in the habitat-sim backend.
Follower = Callable[[PathFinder, np.ndarray, float, ActionSpace], "Trajectory | None"]


def sample_route(
    pf: PathFinder, rng: np.random.Generator, policy: Policy, stats: PolicyStats, follow: Follower = follow_path
) -> Route:
    """Draw start/goal pairs until one satisfies the policy; TaskError after ``max_tries``."""
    for _ in range(policy.max_tries):
        stats.attempts += 1
        route, reason = try_route(pf, rng, policy, follow)
        if route is not None:
            stats.accepted += 1
            return route
        stats.rejected[reason] += 1
    raise TaskError(
        f"policy '{policy.name}' found no start/goal pair in {policy.max_tries} tries "
        f"(rejections: {dict(stats.rejected)}); use a larger scene or relax the policy's limits"
    )


def try_route(
    pf: PathFinder, rng: np.random.Generator, policy: Policy, follow: Follower = follow_path
) -> tuple[Route | None, str]:
    start = pf.get_random_navigable_point(rng)
    island = pf.get_island(start)
    goal = pf.get_random_navigable_point(rng, island_index=island)  # same island, so never unreachable
    start_yaw = float(rng.integers(round(360.0 / policy.turn_degrees))) * policy.turn_degrees
    euclid = float(np.linalg.norm(goal - start))
    if euclid / policy.step > LONG_SHARE * policy.max_actions:  # the geodesic is longer still
        return None, "geodesic_too_long"
    path = ShortestPath(start, goal)
    if not pf.find_path(path):
        return None, "no_path"
    reason = path_rejection(policy, path.geodesic_distance, euclid)
    if reason:
        return None, reason
    traj = follow(pf, np.asarray(path.points), start_yaw, policy.space)
    if traj is None:
        return None, "no_action_sequence_within_limit"
    if len(traj.actions) < policy.min_actions:
        return None, "too_few_actions"
    n_walk = len(traj.actions)
    if policy.scan_every > 0:
        traj = insert_scans(traj, policy.step, policy.scan_every, policy.scan_degrees, policy.turn_degrees)
    route = Route(start, goal, start_yaw, island, path.geodesic_distance, euclid, np.asarray(path.points), traj, n_walk)
    return route, ""


# Walks need about 4.1 forward steps per geodesic metre plus turns: a pair whose geodesic alone would
# use this share of the action budget is not worth walking. Measured on the embedded houses with the
# express policy: of walks with a geodesic over 19.5 m (0.78 x 100 x 0.25 m), 1 in 79 fit in 100 actions.
LONG_SHARE = 0.78


def path_rejection(policy: Policy, geodesic: float, euclid: float) -> str:
    if geodesic <= policy.min_geodesic:
        return "geodesic_too_short"
    if policy.min_ratio > 1.0 and geodesic < policy.min_ratio * euclid:
        return "path_too_straight"
    if geodesic / policy.step > LONG_SHARE * policy.max_actions:
        return "geodesic_too_long"
    return ""


def insert_scans(traj: Trajectory, step: float, every: float, degrees: float, turn: float) -> Trajectory:
    """After every ``every`` metres walked, sweep ``degrees``: half to the left, all the way to the
    right, and back to the original heading (positions unchanged during the sweep)."""
    half = round(degrees / 2.0 / turn)
    out = Trajectory(positions=[traj.positions[0]], yaws=[traj.yaws[0]])
    walked = 0.0
    for action, pos, yaw in zip(traj.actions, traj.positions[1:], traj.yaws[1:]):
        out.actions.append(action)
        out.positions.append(pos)
        out.yaws.append(yaw)
        if action == "move_forward":
            walked += step
            if walked >= every - 1e-9:
                walked = 0.0
                out.turn(half, turn)
                out.turn(-2 * half, turn)
                out.turn(half, turn)
    return out


def summarise(routes: list[Route], stats: PolicyStats | None = None) -> dict[str, Any]:
    """Statistics of a set of routes: actions, geodesic, actions per geodesic metre, curvature ratio."""
    if not routes:
        return {"n": 0, **(stats.to_dict() if stats else {})}
    n_actions = np.array([len(r.trajectory.actions) for r in routes], dtype=np.float64)
    walk = np.array([r.n_walk_actions for r in routes], dtype=np.float64)
    geo = np.array([r.geodesic for r in routes])
    ratio = geo / np.maximum([r.euclidean for r in routes], 1e-9)
    out = {
        "n": len(routes),
        "actions": describe(n_actions),
        "geodesic_m": describe(geo),
        "geodesic_over_euclidean": describe(ratio),
        "actions_per_geodesic_m": float(n_actions.sum() / geo.sum()),
        "walk_actions_per_geodesic_m": float(walk.sum() / geo.sum()),
    }
    return out | (stats.to_dict() if stats else {})


def describe(values: np.ndarray) -> dict[str, float]:
    return {
        "min": float(values.min()),
        "mean": float(values.mean()),
        "median": float(np.median(values)),
        "max": float(values.max()),
    }
