"""Contract test of the habitat-sim backend against a FAKE habitat_sim (fake_habitat_sim.py).

habitat-sim cannot be installed here; the fake follows habitat-sim's documented API, so this checks
that the backend calls that API correctly and turns its answers into valid episodes. It was not run
against a real habitat-sim.
"""

from __future__ import annotations

import sys

import numpy as np
import pytest

from eqagen.core import ConfigError
from eqagen.generators import get_backend
from eqagen.generators.navigation import habitat_backend
from eqagen.generators.navigation.pathfinder import ShortestPath
from tests.generators.navigation import fake_habitat_sim

pytestmark = pytest.mark.realdata


@pytest.fixture()
def fake_hs(monkeypatch):
    hs = fake_habitat_sim.install()
    monkeypatch.setitem(sys.modules, "habitat_sim", hs)
    habitat_backend._loaded.cache_clear()
    yield hs
    habitat_backend._loaded.cache_clear()


def _params(habitat_maps, policy="express"):
    scene = {"scene_id": "17DRP5sb8fy", "scene": "17DRP5sb8fy.glb", "navmesh": str(habitat_maps[0])}
    return {"policy": policy, "scenes": [scene]}


def test_missing_habitat_sim_is_a_config_error(monkeypatch):
    monkeypatch.setitem(sys.modules, "habitat_sim", None)  # import raises ImportError
    with pytest.raises(ConfigError, match="habitat-sim is not installed"):
        habitat_backend.import_habitat_sim()


def test_path_finder_adapter_speaks_habitats_api(fake_hs, habitat_maps):
    sim = habitat_backend.make_simulator(fake_hs, "x.glb", str(habitat_maps[0]), 0.25, 30.0)
    pf = habitat_backend.HabitatPathFinder(fake_hs, sim.pathfinder)
    rng = np.random.default_rng(0)
    a, b = pf.get_random_navigable_point(rng, 1), pf.get_random_navigable_point(rng, 1)
    path = ShortestPath(a, b)
    assert pf.find_path(path) and path.geodesic_distance >= np.linalg.norm(b - a) - 1e-5
    other = pf.get_random_navigable_point(rng, 0)
    across = ShortestPath(a, other)
    assert not pf.find_path(across) and across.points == [] and across.geodesic_distance == float("inf")
    assert pf.num_islands == 2 and pf.get_island(other) == 0
    assert {"seed", "get_random_navigable_point", "find_path"} <= set(sim.pathfinder.calls)
    assert pf.segment_clear(a, path.points[1][None])[0]


@pytest.mark.parametrize("policy", ["express", "openeqa"])
def test_episodes_from_the_follower_keep_the_invariants(fake_hs, habitat_maps, policy):
    backend = get_backend("navigation", "habitat-sim")
    specs = backend.plan(4, 11, _params(habitat_maps, policy))
    for spec in specs:
        ep = backend.run(spec)
        assert (ep.family, ep.backend, ep.frame.native) == ("navigation", "habitat-sim", "habitat")
        native = ep.frame.to_native(ep.steps.pose[:, :3].astype(np.float64))
        moved = np.linalg.norm(np.diff(native, axis=0), axis=1)
        for action, d in zip(ep.steps.action[1:], moved):
            assert d == pytest.approx(0.25 if action == "move_forward" else 0.0, abs=1e-4)
        goal = np.asarray(ep.task["goal_position"])
        assert np.linalg.norm(native[-1] - goal) <= ep.task["goal_radius"] + 1e-4
        if policy == "express":
            assert 10 <= ep.n_steps - 1 <= 100
        else:
            assert ep.task["geodesic_distance"] > 10.0
    assert backend.run(specs[0]).to_dict() == backend.run(specs[0]).to_dict()  # deterministic


def test_plan_rejects_scenes_without_a_scene_file():
    with pytest.raises(ConfigError):
        get_backend("navigation", "habitat-sim").plan(2, 0, {"scenes": [{"scene_id": "x"}]})
