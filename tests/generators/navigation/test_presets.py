"""The express-bench and openeqa-hm3d presets on the embedded houses: their policies' guarantees."""

from __future__ import annotations

import numpy as np
import pytest

from eqagen.config import load_config
from eqagen.flows.stages import backend_params
from eqagen.generators import get_backend


def _episodes(preset: str, n: int, n_scenes: int):
    config = load_config(preset)
    params = backend_params(config.generation) | {"n_scenes": n_scenes}
    backend = get_backend(config.generation.family, config.generation.backend)
    return [backend.run(spec) for spec in backend.plan(n, config.seed, params)]


@pytest.fixture(scope="module")
def express_episodes():
    return _episodes("express-bench", 100, 20)


def test_express_bench_actions_are_10_to_100(express_episodes):
    n_actions = np.array([ep.n_steps - 1 for ep in express_episodes])
    assert ((n_actions >= 10) & (n_actions <= 100)).all()
    assert n_actions.min() < 20 and n_actions.max() > 60  # the whole range is used


def test_express_bench_actions_per_geodesic_metre(express_episodes):
    """EXPRESS-Bench has about 5.9 actions per geodesic metre; 4 forward steps per metre is the floor."""
    n_actions = np.array([ep.n_steps - 1 for ep in express_episodes], dtype=float)
    geodesic = np.array([ep.task["geodesic_distance"] for ep in express_episodes])
    assert 4.0 <= n_actions.sum() / geodesic.sum() <= 8.0
    per_episode = n_actions / geodesic
    assert 4.0 <= np.median(per_episode) <= 8.0
    forward = np.array([ep.steps.action.count("move_forward") for ep in express_episodes])
    assert (forward >= (geodesic - 0.1875) / 0.25 - 1e-6).all()  # a walk is never shorter than its geodesic


def test_express_bench_turns_are_30_degrees(express_episodes):
    for ep in express_episodes[:40]:
        yaw = ep.steps.pose[:, 3].astype(float)
        turned = np.abs((np.diff(yaw) + 180.0) % 360.0 - 180.0)
        is_turn = np.array([a != "move_forward" for a in ep.steps.action[1:]])
        assert np.allclose(turned[is_turn], 30.0, atol=1e-3) and np.allclose(turned[~is_turn], 0.0, atol=1e-3)


def test_openeqa_hm3d_walks_are_long_and_curved():
    episodes = _episodes("openeqa-hm3d", 24, 12)
    geodesic = np.array([ep.task["geodesic_distance"] for ep in episodes])
    straight = np.array([ep.task["euclidean_distance"] for ep in episodes])
    assert (geodesic > 10.0).all() and (geodesic >= 1.1 * straight).all()
    for ep in episodes:  # a 180 degree scan (12 turns of 15 degrees each way) after every metre walked
        forward = ep.steps.action.count("move_forward")
        turns = ep.n_steps - 1 - forward
        assert turns >= (forward // 4) * 24
