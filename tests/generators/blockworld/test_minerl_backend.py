"""Contract test of the MineRL backend against a FAKE env that follows MineRL's documented spaces
(MineRL cannot be installed here; nothing in this file ran real Minecraft)."""

import numpy as np
import pytest

from eqagen.core import ConfigError
from eqagen.generators import get_backend
from eqagen.generators.blockworld.minerl_backend import MinerlBlockworld, real_minerl_env

from .fake_minerl import FakeMineRLEnv


class _Factory:
    def __init__(self, start_yaw: float = 0.0):
        self.envs, self.start_yaw = [], start_yaw

    def __call__(self, save_dir, params):
        assert (save_dir / "level.dat").exists() and (save_dir / "region").is_dir()
        env = FakeMineRLEnv(save_dir, params, self.start_yaw)
        self.envs.append(env)
        return env


def test_minerl_episode_follows_the_plan_in_a_fake_env():
    embedded = get_backend("blockworld", "embedded")
    spec = embedded.plan(1, 6, {"biomes": ["plains"], "max_steps": 150})[0]
    factory = _Factory()
    backend = MinerlBlockworld(env_factory=factory)
    mspec = backend.plan(1, 6, {"biomes": ["plains"], "max_steps": 150})[0]
    ep = backend.run(mspec)
    ref = embedded.run(spec)
    assert ep.backend == "minerl" and ep.family == "blockworld" and factory.envs[0].closed
    assert ep.steps.action == ref.steps.action
    assert ep.steps.success.all()
    # walking 0.25 (sprinting 0.33) blocks a tick, the player arrives within 0.3 of each block's centre
    assert np.abs(ep.steps.pose[:, [0, 2]] - ref.steps.pose[:, [0, 2]]).max() <= 0.35
    assert np.array_equal(ep.steps.pose[:, 1], ref.steps.pose[:, 1])
    assert np.array_equal(ep.steps.pose[:, 3:], ref.steps.pose[:, 3:])
    assert [e.kind for e in ep.events] == [e.kind for e in ref.events]
    ticks = [a["ticks"] for a in ep.steps.args[1:]]
    assert max(ticks) >= 4, "a one-block walk takes several ticks at walking speed"
    assert factory.envs[0].steps == sum(ticks)


def test_start_view_is_aligned_and_short_tick_budgets_fail_moves():
    """The fake spawns facing north; the driver turns to the plan's view first. With two ticks per move
    (a block takes four) moves fall short and are recorded as failed steps."""
    factory = _Factory(start_yaw=180.0)
    backend = MinerlBlockworld(env_factory=factory)
    spec = backend.plan(1, 2, {"biomes": ["town"], "max_steps": 40, "max_ticks_per_move": 2})[0]
    ep = backend.run(spec)
    assert ep.n_steps > 1 and ep.steps.pose[0, 3] == 0.0
    moves = [i for i, a in enumerate(ep.steps.args) if any(a[k] for k in ("forward", "back", "left", "right"))]
    blocked = [i for i in range(ep.n_steps) if ep.steps.error[i] == "blocked"]
    assert blocked and set(blocked) <= set(moves)
    assert np.array_equal(ep.steps.success, np.array([e == "" for e in ep.steps.error]))


def test_real_minerl_missing_is_a_config_error(tmp_path):
    pytest.importorskip("numpy")
    try:
        import minerl  # noqa: F401
    except ImportError:
        with pytest.raises(ConfigError, match="minerl is not installed"):
            real_minerl_env(tmp_path, {})
    else:  # pragma: no cover - MineRL is not installable where these tests were written
        pytest.skip("MineRL is installed: this checks the error when it is not")


def test_registered_lazily():
    assert isinstance(get_backend("blockworld", "minerl"), MinerlBlockworld)
