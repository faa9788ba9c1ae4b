"""A FAKE ``habitat_sim`` module for the habitat-sim backend's contract test.

habitat-sim cannot be installed here (it is distributed through conda only and needs a GPU-capable
build), so this stand-in implements the part of habitat-sim's documented Python API that
:mod:`eqagen.generators.navigation.habitat_backend` uses, with the same names, signatures and return
conventions (https://aihabitat.org/docs/habitat-sim/):

- ``ShortestPath`` (``requested_start``, ``requested_end``, ``points``, ``geodesic_distance``: inf and
  no points when there is no path);
- ``nav.PathFinder``: ``load_nav_mesh``, ``is_navigable(pt, max_y_delta=0.5)``,
  ``snap_point(point, island_index=-1)``, ``get_random_navigable_point(max_tries=10, island_index=-1)``,
  ``seed``, ``get_island``, ``island_area``, ``num_islands``, ``find_path``, ``try_step_no_sliding``,
  ``get_topdown_view(meters_per_pixel, height)``, ``get_bounds``;
- ``nav.GreedyGeodesicFollower(pathfinder, agent, goal_radius=None, *, stop_key=None, ...)`` whose
  ``find_path(goal_pos)`` returns the action keys and ends with ``stop_key`` (None);
- ``Simulator(Configuration(SimulatorConfiguration, [agent.AgentConfiguration]))`` with
  ``pathfinder``, ``get_agent``, ``step``; ``AgentState``; ``agent.ActionSpec``/``ActuationSpec``;
  ``utils.common.quat_from_angle_axis`` and ``quat_to_coeffs`` (``[x, y, z, w]``).

Behind the API it is NOT habitat-sim: "navmeshes" are top-down ``.npy`` navigability maps (such as
habitat-sim's own maps of 17DRP5sb8fy) and paths come from the embedded grid path finder. It tests
that the backend speaks habitat-sim's API correctly, not habitat-sim's algorithms.
"""

from __future__ import annotations

import types
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqagen.generators.navigation import actions as nav_actions
from eqagen.generators.navigation.grid import NavGrid
from eqagen.generators.navigation.pathfinder import GridPathFinder
from eqagen.generators.navigation.pathfinder import ShortestPath as _OurPath


class Quaternion:
    """numpy-quaternion's ``quaternion`` as habitat-sim returns it: ``w, x, y, z`` attributes."""

    def __init__(self, w: float, x: float, y: float, z: float):
        self.w, self.x, self.y, self.z = float(w), float(x), float(y), float(z)


def quat_from_angle_axis(theta: float, axis: np.ndarray) -> Quaternion:
    axis = np.asarray(axis, dtype=np.float64) / np.linalg.norm(axis)
    s = np.sin(theta / 2.0)
    return Quaternion(np.cos(theta / 2.0), *(axis * s))


def quat_to_coeffs(q: Quaternion) -> np.ndarray:
    return np.array([q.x, q.y, q.z, q.w])


class ShortestPath:
    def __init__(self) -> None:
        self.requested_start = np.zeros(3, dtype=np.float32)
        self.requested_end = np.zeros(3, dtype=np.float32)
        self.points: list[np.ndarray] = []
        self.geodesic_distance = float("inf")


class PathFinder:
    """habitat_sim.nav.PathFinder over a top-down map (see the module docstring)."""

    def __init__(self) -> None:
        self._grid: GridPathFinder | None = None
        self._rng = np.random.default_rng(0)
        self.calls: list[str] = []  # which documented methods the backend used

    @property
    def is_loaded(self) -> bool:
        return self._grid is not None

    def load_nav_mesh(self, path: str) -> bool:
        self._grid = GridPathFinder(NavGrid(np.load(path).astype(bool), 0.1, (-3.0, -5.0), 0.2))
        return True

    @property
    def num_islands(self) -> int:
        return self._pf.num_islands

    @property
    def _pf(self) -> GridPathFinder:
        if self._grid is None:
            raise RuntimeError("PathFinder: no navmesh loaded")
        return self._grid

    def seed(self, new_seed: int) -> None:
        self.calls.append("seed")
        self._rng = np.random.default_rng(int(new_seed))

    def is_navigable(self, pt: np.ndarray, max_y_delta: float = 0.5) -> bool:
        return self._pf.is_navigable(np.asarray(pt, dtype=np.float64), max_y_delta)

    def snap_point(self, point: np.ndarray, island_index: int = -1) -> np.ndarray:
        return self._pf.snap_point(np.asarray(point, dtype=np.float64), island_index).astype(np.float32)

    def get_random_navigable_point(self, max_tries: int = 10, island_index: int = -1) -> np.ndarray:
        self.calls.append("get_random_navigable_point")
        return self._pf.get_random_navigable_point(self._rng, island_index).astype(np.float32)

    def get_island(self, pt: np.ndarray) -> int:
        return self._pf.get_island(np.asarray(pt, dtype=np.float64))

    def island_area(self, island_index: int = -1) -> float:
        return self._pf.island_area(island_index)

    def find_path(self, path: ShortestPath) -> bool:
        self.calls.append("find_path")
        ours = _OurPath(np.asarray(path.requested_start, np.float64), np.asarray(path.requested_end, np.float64))
        found = self._pf.find_path(ours)
        path.points = [p.astype(np.float32) for p in ours.points]
        path.geodesic_distance = ours.geodesic_distance
        return found

    def try_step_no_sliding(self, start: np.ndarray, end: np.ndarray) -> np.ndarray:
        """The point closest to ``end`` reachable in a straight line from ``start`` (no sliding)."""
        self.calls.append("try_step_no_sliding")
        s, e = np.asarray(start, np.float64), np.asarray(end, np.float64)
        fractions = np.linspace(0.0, 1.0, 65)
        clear = self._pf.segment_clear(s, s + fractions[:, None] * (e - s))
        last = int(np.argmin(clear)) - 1 if not clear.all() else len(fractions) - 1
        return (s + fractions[max(last, 0)] * (e - s)).astype(np.float32)

    def get_bounds(self) -> tuple[np.ndarray, np.ndarray]:
        g = self._pf.grid
        h, w = g.shape
        lower = np.array([g.origin[0], g.floor_y, g.origin[1]], dtype=np.float32)
        upper = lower + np.array([w * g.meters_per_pixel, 1.0, h * g.meters_per_pixel], dtype=np.float32)
        return lower, upper

    def get_topdown_view(self, meters_per_pixel: float, height: float) -> np.ndarray:
        self.calls.append("get_topdown_view")
        if abs(meters_per_pixel - self._pf.grid.meters_per_pixel) > 1e-9:
            raise ValueError("the fake only renders at its map's resolution")
        return self._pf.grid.navigable.copy()


@dataclass
class AgentState:
    position: np.ndarray = field(default_factory=lambda: np.zeros(3, dtype=np.float32))
    rotation: Quaternion = field(default_factory=lambda: Quaternion(1.0, 0.0, 0.0, 0.0))


@dataclass
class ActuationSpec:
    amount: float


@dataclass
class ActionSpec:
    name: str
    actuation: ActuationSpec


@dataclass
class AgentConfiguration:
    action_space: dict[str, ActionSpec] = field(default_factory=dict)


class Agent:
    def __init__(self, config: AgentConfiguration):
        self.agent_config = config
        self._state = AgentState()

    def get_state(self) -> AgentState:
        return AgentState(np.array(self._state.position, dtype=np.float32), self._state.rotation)

    def set_state(self, state: AgentState) -> None:
        self._state = AgentState(np.array(state.position, dtype=np.float32), state.rotation)

    def yaw(self) -> float:
        return float(np.rad2deg(2.0 * np.arctan2(self._state.rotation.y, self._state.rotation.w)))


@dataclass
class SimulatorConfiguration:
    scene_id: str = ""


@dataclass
class Configuration:
    sim_cfg: SimulatorConfiguration
    agents: list[AgentConfiguration]


class Simulator:
    def __init__(self, config: Configuration):
        self.config = config
        self.pathfinder = PathFinder()
        self._agents = [Agent(a) for a in config.agents]

    def get_agent(self, agent_id: int) -> Agent:
        return self._agents[agent_id]

    def step(self, action: str) -> dict[str, Any]:
        agent = self._agents[0]
        spec = agent.agent_config.action_space[action]  # KeyError for an action not in the space, as habitat
        yaw = agent.yaw()
        if spec.name == "move_forward":
            fwd = nav_actions.forward_vector(yaw)
            end = np.asarray(agent._state.position, np.float64) + spec.actuation.amount * fwd
            agent._state.position = self.pathfinder.try_step_no_sliding(agent._state.position, end)
        else:
            sign = 1.0 if spec.name == "turn_left" else -1.0
            agent._state.rotation = quat_from_angle_axis(
                np.deg2rad(yaw + sign * spec.actuation.amount), np.array([0, 1, 0])
            )
        return {}


class GreedyGeodesicFollower:
    """Plans move_forward/turn_left/turn_right keys to the goal, ending with ``stop_key``."""

    def __init__(self, pathfinder: PathFinder, agent: Agent, goal_radius: float | None = None, *,
                 stop_key: Any = None, forward_key: Any = None, left_key: Any = None, right_key: Any = None,
                 fix_thrashing: bool = True, thrashing_threshold: int = 0):  # fmt: skip
        self.pathfinder, self.agent, self.goal_radius = pathfinder, agent, goal_radius
        self.keys = {"stop": stop_key, "move_forward": forward_key or "move_forward",
                     "turn_left": left_key or "turn_left", "turn_right": right_key or "turn_right"}  # fmt: skip

    def find_path(self, goal_pos: np.ndarray) -> list[Any]:
        state = self.agent.get_state()
        space = self.agent.agent_config.action_space
        step, turn = space["move_forward"].actuation.amount, space["turn_left"].actuation.amount
        path = ShortestPath()
        path.requested_start, path.requested_end = state.position, np.asarray(goal_pos, np.float32)
        if not self.pathfinder.find_path(path):
            raise RuntimeError("GreedyFollowerError: no path")
        radius = self.goal_radius if self.goal_radius is not None else 0.75 * step
        waypoints = np.asarray(path.points, dtype=np.float64)
        waypoints[0] = state.position
        traj = nav_actions.follow_path(
            self.pathfinder._pf, waypoints, self.agent.yaw(),
            nav_actions.ActionSpace(step=step, turn_degrees=turn, goal_radius_factor=radius / step),
        )  # fmt: skip
        if traj is None:
            raise RuntimeError("GreedyFollowerError: could not reach the goal")
        return [self.keys[a] for a in traj.actions] + [self.keys["stop"]]


def install() -> types.ModuleType:
    """The fake as a module tree ``habitat_sim`` (with ``nav``, ``agent``, ``utils.common``)."""
    hs = types.ModuleType("habitat_sim")
    hs.__doc__ = __doc__
    hs.ShortestPath, hs.Simulator, hs.AgentState = ShortestPath, Simulator, AgentState
    hs.SimulatorConfiguration, hs.Configuration = SimulatorConfiguration, Configuration
    hs.nav = types.SimpleNamespace(PathFinder=PathFinder, GreedyGeodesicFollower=GreedyGeodesicFollower)
    hs.agent = types.SimpleNamespace(
        AgentConfiguration=AgentConfiguration, ActionSpec=ActionSpec, ActuationSpec=ActuationSpec
    )
    hs.utils = types.SimpleNamespace(common=types.SimpleNamespace(quat_from_angle_axis=quat_from_angle_axis,
                                                                  quat_to_coeffs=quat_to_coeffs))  # fmt: skip
    return hs
