"""The ``habitat-sim`` backend: the same episodes, with habitat-sim's own navmesh and follower.

Optional: habitat-sim is distributed through conda only (``conda install habitat-sim -c conda-forge
-c aihabitat``) and is imported lazily, when a config asks for this backend. What it uses:

- ``habitat_sim.nav.PathFinder`` (``sim.pathfinder``) behind :class:`HabitatPathFinder`, the same
  interface as the embedded :class:`~eqagen.generators.navigation.pathfinder.GridPathFinder`:
  ``is_navigable``, ``snap_point``, ``get_random_navigable_point`` (seeded through ``seed``),
  ``get_island``, ``island_area``, ``find_path`` with ``habitat_sim.ShortestPath``, and
  ``try_step_no_sliding`` for straight-move checks;
- ``habitat_sim.nav.GreedyGeodesicFollower`` for the atomic actions, stepping the agent with
  ``sim.step`` and reading its pose back after every action;
- ``pathfinder.get_topdown_view`` and ``get_bounds`` for the grid that places regions and blocks
  sight (as in :mod:`eqagen.generators.navigation.readers`).

Params: the policy keys of the other navigation backends, and ``scenes``: a list of ``{scene_id,
scene (the .glb or scene-dataset id), navmesh (optional .navmesh), semantic, boxes,
meters_per_pixel}``. This module has been checked against a stand-in that follows habitat-sim's
documented API (tests/generators/navigation/fake_habitat_sim.py), never against a real habitat-sim.
"""

from __future__ import annotations

import importlib
from functools import lru_cache
from typing import Any

import numpy as np

from eqagen.core import ConfigError, Episode, derive_rng, derive_seed
from eqagen.generators.base import EpisodeSpec, register_backend
from eqagen.generators.navigation.actions import ActionSpace, Trajectory
from eqagen.generators.navigation.backend import camera_from_params, policy_from_params
from eqagen.generators.navigation.episodes import build_episode
from eqagen.generators.navigation.grid import NavGrid
from eqagen.generators.navigation.pathfinder import ShortestPath
from eqagen.generators.navigation.policies import Policy, PolicyStats, sample_route
from eqagen.generators.navigation.readers import semantic_scene

STEP_MATCH = 1e-4  # metres: a straight move is clear when try_step_no_sliding ends this close to its end


def import_habitat_sim() -> Any:
    try:
        return importlib.import_module("habitat_sim")
    except ImportError as err:
        raise ConfigError(
            "generation.backend",
            "habitat-sim is not installed (conda install habitat-sim -c conda-forge -c aihabitat)",
            "embedded, hm3d-files",
        ) from err


def yaw_to_quaternion(hs: Any, yaw_deg: float) -> Any:
    return hs.utils.common.quat_from_angle_axis(np.deg2rad(yaw_deg), np.array([0.0, 1.0, 0.0]))


def quaternion_to_yaw(hs: Any, rotation: Any) -> float:
    """habitat yaw (degrees) of a rotation about +y, from its ``[x, y, z, w]`` coefficients."""
    _, y, _, w = (float(v) for v in hs.utils.common.quat_to_coeffs(rotation))
    return float(np.rad2deg(2.0 * np.arctan2(y, w)) % 360.0)


class HabitatPathFinder:
    """habitat-sim's ``PathFinder`` behind the embedded path finder's interface."""

    def __init__(self, hs: Any, pathfinder: Any):
        self.hs, self.pf = hs, pathfinder

    @property
    def num_islands(self) -> int:
        return int(self.pf.num_islands)

    def is_navigable(self, point: np.ndarray, max_y_delta: float = 0.5) -> bool:
        return bool(self.pf.is_navigable(np.asarray(point, dtype=np.float32), max_y_delta))

    def snap_point(self, point: np.ndarray, island_index: int = -1) -> np.ndarray:
        return np.asarray(self.pf.snap_point(np.asarray(point, dtype=np.float32), island_index), dtype=np.float64)

    def get_random_navigable_point(self, rng: np.random.Generator, island_index: int = -1) -> np.ndarray:
        self.pf.seed(int(rng.integers(2**31 - 1)))  # habitat's sampler has its own generator: seed it from ours
        point = self.pf.get_random_navigable_point(island_index=island_index)
        return np.asarray(point, dtype=np.float64)

    def get_island(self, point: np.ndarray) -> int:
        return int(self.pf.get_island(np.asarray(point, dtype=np.float32)))

    def island_area(self, island_index: int = -1) -> float:
        return float(self.pf.island_area(island_index))

    def find_path(self, path: ShortestPath) -> bool:
        sp = self.hs.ShortestPath()
        sp.requested_start = np.asarray(path.requested_start, dtype=np.float32)
        sp.requested_end = np.asarray(path.requested_end, dtype=np.float32)
        found = bool(self.pf.find_path(sp))
        path.points = [np.asarray(p, dtype=np.float64) for p in sp.points] if found else []
        path.geodesic_distance = float(sp.geodesic_distance) if found else float("inf")
        return found

    def geodesic_distances(self, points: np.ndarray, goal: np.ndarray) -> np.ndarray:
        out = []
        for p in np.asarray(points, dtype=np.float64):
            sp = ShortestPath(p, np.asarray(goal, dtype=np.float64))
            self.find_path(sp)
            out.append(sp.geodesic_distance)
        return np.asarray(out)

    def segment_clear(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        a, b = np.broadcast_arrays(np.asarray(a, dtype=np.float32), np.asarray(b, dtype=np.float32).reshape(-1, 3))
        ends = [np.asarray(self.pf.try_step_no_sliding(s, e)) for s, e in zip(a, b)]
        return np.array([np.linalg.norm(e - t) <= STEP_MATCH for e, t in zip(ends, b)], dtype=bool)


class GreedyFollowerWalk:
    """Walks a route with habitat-sim's ``GreedyGeodesicFollower`` on the simulator's agent."""

    def __init__(self, hs: Any, sim: Any):
        self.hs, self.sim = hs, sim

    def __call__(self, pf: Any, waypoints: np.ndarray, start_yaw: float, space: ActionSpace) -> Trajectory | None:
        hs, agent = self.hs, self.sim.get_agent(0)
        state = hs.AgentState()
        state.position = np.asarray(waypoints[0], dtype=np.float32)
        state.rotation = yaw_to_quaternion(hs, start_yaw)
        agent.set_state(state)
        follower = hs.nav.GreedyGeodesicFollower(self.sim.pathfinder, agent, goal_radius=space.goal_radius)
        try:
            keys = follower.find_path(np.asarray(waypoints[-1], dtype=np.float32))
        except Exception:  # habitat raises GreedyFollowerError when it cannot reach the goal
            return None
        traj = Trajectory(positions=[np.asarray(waypoints[0], dtype=np.float64)], yaws=[float(start_yaw) % 360.0])
        for key in keys:
            if key is None or len(traj.actions) >= space.max_actions:  # None: the follower's stop
                break
            self.sim.step(key)
            now = agent.get_state()
            traj.actions.append(str(key))
            traj.positions.append(np.asarray(now.position, dtype=np.float64))
            traj.yaws.append(quaternion_to_yaw(hs, now.rotation))
        reached = np.linalg.norm(traj.positions[-1] - np.asarray(waypoints[-1])) <= space.goal_radius + 1e-6
        return traj if reached else None


def make_simulator(hs: Any, scene: str, navmesh: str | None, step: float, turn: float) -> Any:
    sim_cfg = hs.SimulatorConfiguration()
    sim_cfg.scene_id = scene
    agent_cfg = hs.agent.AgentConfiguration()
    agent_cfg.action_space = {
        name: hs.agent.ActionSpec(name, hs.agent.ActuationSpec(amount=amount))
        for name, amount in (("move_forward", step), ("turn_left", turn), ("turn_right", turn))
    }
    sim = hs.Simulator(hs.Configuration(sim_cfg, [agent_cfg]))
    if navmesh:
        sim.pathfinder.load_nav_mesh(navmesh)
    return sim


def topdown_grid(pathfinder: Any, meters_per_pixel: float) -> NavGrid:
    lower, _ = pathfinder.get_bounds()
    height = float(lower[1])
    view = np.asarray(pathfinder.get_topdown_view(meters_per_pixel, height), dtype=bool)
    return NavGrid(view, meters_per_pixel, (float(lower[0]), float(lower[2])), height)


@lru_cache(maxsize=4)
def _loaded(
    scene_id: str, scene: str, navmesh: str | None, step: float, turn: float, mpp: float, extra: tuple
) -> tuple:
    hs = import_habitat_sim()
    sim = make_simulator(hs, scene, navmesh, step, turn)
    pf = HabitatPathFinder(hs, sim.pathfinder)
    files = dict(extra)
    scene_record = semantic_scene(
        scene_id, topdown_grid(sim.pathfinder, mpp), files.get("semantic"), files.get("boxes"), source="habitat-sim"
    )
    scene_record._pathfinder = pf
    return hs, sim, scene_record


@register_backend("navigation", "habitat-sim")
class HabitatSimBackend:
    family = "navigation"
    backend = "habitat-sim"

    def plan(self, n_episodes: int, seed: int, params: dict[str, Any]) -> list[EpisodeSpec]:
        policy_from_params(params)
        scenes = params.get("scenes") or []
        if not scenes or any("scene_id" not in s or "scene" not in s for s in scenes):
            raise ConfigError(
                "scenes", "the habitat-sim backend needs scenes with scene_id and scene", "docs/navigation.md"
            )
        ids = [str(s["scene_id"]) for s in scenes]
        return [
            EpisodeSpec(
                "navigation", "habitat-sim", ids[i % len(ids)], derive_seed(seed, "navigation", i), i, dict(params)
            )
            for i in range(n_episodes)
        ]

    def run(self, spec: EpisodeSpec) -> Episode:
        entry = next((s for s in spec.params.get("scenes", []) if str(s.get("scene_id")) == spec.scene_id), None)
        if entry is None:
            raise ConfigError("scenes", f"scene '{spec.scene_id}' is not listed in the backend's scenes")
        policy: Policy = policy_from_params(spec.params)
        extra = tuple(sorted((k, str(v)) for k, v in entry.items() if k in ("semantic", "boxes")))
        hs, sim, scene = _loaded(
            spec.scene_id, str(entry["scene"]), entry.get("navmesh"), policy.step, policy.turn_degrees,
            float(entry.get("meters_per_pixel", 0.1)), extra,
        )  # fmt: skip
        rng = derive_rng(spec.seed, "navigation", spec.scene_id, spec.index, policy.name)
        stats = PolicyStats()
        route = sample_route(scene.pathfinder, rng, policy, stats, follow=GreedyFollowerWalk(hs, sim))
        episode = build_episode(
            scene, route, policy, "habitat-sim", spec.seed, spec.index, camera_from_params(spec.params)
        )
        episode.meta["policy_stats"] = stats.to_dict()
        return episode
