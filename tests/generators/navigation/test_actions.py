"""Atomic actions on the real 17DRP5sb8fy maps: exact steps, no turn moves, goal reached, no wall crossed."""

from __future__ import annotations

import numpy as np
import pytest

from eqagen.generators.navigation.actions import MOVE_FORWARD, ActionSpace, Trajectory, follow_path
from eqagen.generators.navigation.pathfinder import ShortestPath
from eqagen.generators.navigation.policies import EXPRESS, OPENEQA, PolicyStats, insert_scans, sample_route
from tests.generators.navigation.conftest import dense_navigable

pytestmark = pytest.mark.realdata


def check_trajectory(pf, traj: Trajectory, goal: np.ndarray, space: ActionSpace) -> None:
    positions, yaws = traj.as_arrays()
    moved = np.linalg.norm(np.diff(positions, axis=0), axis=1)
    turned = np.abs((np.diff(yaws) + 180.0) % 360.0 - 180.0)
    for i, action in enumerate(traj.actions):
        if action == MOVE_FORWARD:
            assert moved[i] == pytest.approx(space.step, abs=1e-9) and turned[i] == 0.0
            assert dense_navigable(pf, positions[i], positions[i + 1])
        else:
            assert moved[i] == 0.0 and turned[i] == pytest.approx(space.turn_degrees)
    assert np.linalg.norm(positions[-1] - goal) <= space.goal_radius + 1e-9
    assert all(pf.is_navigable(p) for p in positions)


@pytest.mark.parametrize("turn", [10.0, 15.0, 30.0])
def test_followed_paths_on_the_real_map(real_pf, turn):
    space = ActionSpace(step=0.25, turn_degrees=turn, max_actions=400)
    rng = np.random.default_rng(int(turn))
    done = 0
    for _ in range(60):
        island = int(rng.integers(2))
        a, b = (real_pf.get_random_navigable_point(rng, island_index=island) for _ in range(2))
        sp = ShortestPath(a, b)
        assert real_pf.find_path(sp)
        traj = follow_path(real_pf, np.asarray(sp.points), float(rng.integers(0, 360 // int(turn))) * turn, space)
        if traj is None:  # a 0.25 m step cannot thread every 0.1 m gap of the real map; rare
            continue
        done += 1
        check_trajectory(real_pf, traj, b, space)
    assert done >= 55


@pytest.mark.parametrize("policy", [EXPRESS, OPENEQA], ids=["express", "openeqa"])
def test_policies_on_the_real_map(real_pf, policy):
    rng, stats = np.random.default_rng(7), PolicyStats()
    for _ in range(25):
        route = sample_route(real_pf, rng, policy, stats)
        assert real_pf.get_island(route.start) == real_pf.get_island(route.goal) == route.island
        assert route.geodesic >= route.euclidean - 1e-9
        check_trajectory(real_pf, route.trajectory, route.goal, policy.space)
        if policy.name == "express":
            assert 10 <= len(route.trajectory.actions) <= 100
        else:
            assert route.geodesic > 10.0 and route.geodesic >= 1.1 * route.euclidean
    assert "no_path" not in stats.rejected  # pairs on different islands are never even tried
    assert stats.accepted == 25 and stats.attempts == 25 + sum(stats.rejected.values())


def test_scans_sweep_180_degrees_every_metre_and_return():
    traj = Trajectory(positions=[np.zeros(3)], yaws=[90.0])
    traj.forward([np.array([0.0, 0.0, -0.25 * (i + 1)]) for i in range(9)])
    out = insert_scans(traj, step=0.25, every=1.0, degrees=180.0, turn=15.0)
    positions, yaws = out.as_arrays()
    assert out.actions.count("move_forward") == 9
    assert out.actions.count("turn_left") == out.actions.count("turn_right") == 2 * 12  # two scans
    first = out.actions.index("turn_left")
    assert first == 4 and out.actions[first : first + 24] == ["turn_left"] * 6 + ["turn_right"] * 12 + ["turn_left"] * 6
    sweep = yaws[first : first + 25]
    assert sweep.max() == 180.0 and sweep.min() == 0.0 and yaws[first + 24] == 90.0
    assert np.all(positions[first : first + 25] == positions[first])
