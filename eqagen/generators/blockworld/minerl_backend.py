"""The MineRL backend (optional extra ``minerl``): the explorer's walk played in real Minecraft.

The world (generated, or read from a file) is written as a save directory (in Minecraft 1.16's chunk
layout by default, the version MineRL 1.0 runs), MineRL is started on it
with ``FileWorldGenerator``, and the explorer's planned moves are driven closed-loop: each planned
turn is one ``camera`` action, each planned one-block move repeats its movement keys until the
observed ``location_stats`` come within 0.3 blocks of the next block's centre (or a tick budget runs
out, recorded as a failed step with error ``blocked``). Before the first step the camera is turned to
the plan's starting view. The observed poses become the episode's steps; entities,
visibility and events are computed from those poses in the voxel world, as for the other backends.

Spaces used (MineRL 1.0 human-control spec): actions ``forward back left right jump sneak sprint
attack`` (0/1) and ``camera`` ([delta pitch, delta yaw], degrees); observations ``pov`` (H x W x 3
uint8) and ``location_stats`` (``xpos ypos zpos pitch yaw``, from ``ObservationFromCurrentLocation``).

MineRL needs Java and Minecraft and could not be installed where this was written: this module was
exercised only against a fake environment that follows the documented spaces
(tests/generators/blockworld/fake_minerl.py), never against real MineRL.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from eqagen.core import ConfigError, Episode, derive_rng
from eqagen.generators.base import EpisodeSpec, register_backend
from eqagen.generators.blockworld.backend import EmbeddedBlockworld
from eqagen.generators.blockworld.embedded import generate_world
from eqagen.generators.blockworld.explorer import ACTION_KEYS, ExplorerParams, Walk, explore, minerl_action
from eqagen.generators.blockworld.files import load_world
from eqagen.generators.blockworld.record import walk_to_episode
from eqagen.generators.blockworld.savedir import write_save
from eqagen.generators.blockworld.world import BlockWorld

EnvFactory = Callable[[Path, dict], Any]  # (save directory, params) -> a gym-style MineRL env
_REACHED = 0.3  # blocks: how close to the next block's centre counts as arrived


def real_minerl_env(save_dir: Path, params: dict) -> Any:
    """A MineRL env on a saved world (imports minerl lazily; raises ConfigError if it is missing)."""
    try:
        import gym
        from minerl.herobraine.env_specs.human_controls import HumanControlEnvSpec
        from minerl.herobraine.hero import handlers
    except ImportError as err:
        raise ConfigError("backend", f"minerl is not installed ({err})", "pip install 'eqagen[minerl]'") from None

    class FileWorldSpec(HumanControlEnvSpec):
        def __init__(self) -> None:
            super().__init__(
                name=f"EqagenFileWorld-{abs(hash(str(save_dir))) % 10**8}-v0",
                max_episode_steps=int(params.get("max_ticks", 20000)),
                resolution=tuple(params.get("resolution", (160, 90))),
            )

        def create_observables(self):
            return [*super().create_observables(), handlers.ObservationFromCurrentLocation()]

        def create_server_world_generators(self):
            return [handlers.FileWorldGenerator(str(save_dir), destroy_after_use=True)]

        def create_agent_start(self):
            return []

        def create_rewardables(self):
            return []

        def create_agent_handlers(self):
            return []

        def create_server_quit_producers(self):
            return [handlers.ServerQuitWhenAnyAgentFinishes()]

        def create_server_decorators(self):
            return []

        def create_server_initial_conditions(self):
            return [handlers.TimeInitialCondition(allow_passage_of_time=False, start_time=6000)]

        def determine_success_from_rewards(self, rewards):
            return True

        def is_from_folder(self, folder: str) -> bool:
            return False

        def get_docstring(self) -> str:
            return "eqagen: a saved world explored by a scripted agent"

    spec = FileWorldSpec()
    spec.register()
    return gym.make(spec.name)


def _location(obs: dict) -> np.ndarray:
    ls = obs["location_stats"]
    return np.array(
        [float(ls["xpos"]), float(ls["ypos"]), float(ls["zpos"]), float(ls["yaw"]) % 360.0, float(ls["pitch"])]
    )


def _env_action(env: Any, action: dict) -> dict:
    """The env's noop with our keys set (MineRL rejects partial dicts)."""
    out = env.action_space.noop()
    for k in ACTION_KEYS:
        if k in out:
            out[k] = int(action[k])
    out["camera"] = np.asarray(action["camera"], dtype=np.float32)
    return out


class _Driver:
    """Plays a planned walk in an env, one planned step at a time, recording what the env reports."""

    def __init__(self, env: Any, world: BlockWorld, max_ticks_per_move: int):
        self.env, self.world, self.max_ticks = env, world, max_ticks_per_move
        self.origin = np.asarray(world.origin, np.float64)
        self.walk = Walk()

    def record(self, name: str, action: dict, pose: np.ndarray, ticks: int, error: str) -> None:
        args = dict(action)
        args["location_stats"] = {
            "xpos": float(pose[0]),
            "ypos": float(pose[1]),
            "zpos": float(pose[2]),
            "yaw": float(pose[3]),
            "pitch": float(pose[4]),
        }
        args["ticks"] = ticks
        self.walk.actions.append(name)
        self.walk.args.append(args)
        self.walk.feet.append(tuple(float(v) for v in pose[:3] - self.origin))  # type: ignore[arg-type]
        self.walk.yaw.append(float(pose[3]))
        self.walk.pitch.append(float(pose[4]))
        self.walk.errors.append(error)

    def align(self, pose: np.ndarray, yaw: float, pitch: float) -> tuple[np.ndarray, int]:
        """Turn the camera to the plan's starting view (the simulator's spawn facing is its own)."""
        d_yaw = float((yaw - pose[3] + 180.0) % 360.0 - 180.0)
        d_pitch = float(pitch - pose[4])
        if abs(d_yaw) < 1e-6 and abs(d_pitch) < 1e-6:
            return pose, 0
        obs, _reward, _done, _info = self.env.step(_env_action(self.env, minerl_action((d_pitch, d_yaw))))
        return _location(obs), 1

    def play(self, plan: Walk) -> Walk:
        pose, ticks = self.align(_location(self.env.reset()), plan.yaw[0], plan.pitch[0])
        self.record("Initialize", minerl_action(), pose, ticks, "")
        for name, planned, feet in zip(plan.actions[1:], plan.args[1:], plan.feet[1:]):
            action = {k: planned[k] for k in (*ACTION_KEYS, "camera")}
            moving = any(action[k] for k in ("forward", "back", "left", "right"))
            target = self.origin + np.asarray(feet)
            ticks, error, done = 0, "", False
            while True:
                obs, _reward, done, _info = self.env.step(_env_action(self.env, action))
                ticks += 1
                pose = _location(obs)
                arrived = np.hypot(pose[0] - target[0], pose[2] - target[2]) < _REACHED
                if not moving or arrived or done:
                    break
                if ticks >= self.max_ticks:
                    error = "blocked"
                    break
                action = dict(action, camera=[0.0, 0.0])  # turn once, then keep walking
            self.record(name, action | {"camera": planned["camera"]}, pose, ticks, error)
            if done:
                break
        self.walk.goals = list(plan.goals)
        return self.walk


def _start_world(world: BlockWorld, plan: Walk) -> BlockWorld:
    """The world with its spawn at the planned start, so the simulator starts where the plan does."""
    world.spawn = plan.feet[0]
    return world


@register_backend("blockworld", "minerl")
class MinerlBlockworld:
    """Plans like ``embedded`` (params ``biomes``, ``n_scenes``, ``max_steps``) or takes ``paths`` of world
    files; ``save_root`` keeps the written saves (default: a temporary directory per episode);
    ``chunk_layout`` is the save's chunk layout (default ``1.16``, the Minecraft MineRL 1.0 runs; ``1.18``
    for newer); ``max_ticks_per_move`` bounds the ticks spent on one planned block move (default 20)."""

    family, backend = "blockworld", "minerl"

    def __init__(self, env_factory: EnvFactory | None = None):
        self.env_factory = env_factory or real_minerl_env

    def plan(self, n_episodes: int, seed: int, params: dict[str, Any]) -> list[EpisodeSpec]:
        if params.get("paths"):
            paths = list(params["paths"])
            return [
                EpisodeSpec(
                    "blockworld",
                    self.backend,
                    Path(paths[i % len(paths)]).stem,
                    seed + i,
                    i,
                    {**params, "path": str(paths[i % len(paths)])},
                )
                for i in range(n_episodes)
            ]
        specs = EmbeddedBlockworld().plan(n_episodes, seed, params)
        return [EpisodeSpec(s.family, self.backend, s.scene_id, s.seed, s.index, {**params, **s.params}) for s in specs]

    def _world(self, spec: EpisodeSpec) -> BlockWorld:
        if "path" in spec.params:
            world = load_world(spec.params["path"])
            world.scene_id = spec.scene_id
            return world
        return generate_world(spec.params["biome"], int(spec.params["world_seed"]), spec.scene_id)

    def run(self, spec: EpisodeSpec) -> Episode:
        world = self._world(spec)
        rng = derive_rng(spec.seed, "blockworld-explore", spec.scene_id, spec.index)
        plan = explore(world, rng, ExplorerParams(max_steps=int(spec.params.get("max_steps", 500))))
        root = spec.params.get("save_root")
        with tempfile.TemporaryDirectory(prefix="eqagen-minerl-") as tmp:
            layout = str(spec.params.get("chunk_layout", "1.16"))  # MineRL 1.0 runs Minecraft 1.16.5
            save_dir = write_save(_start_world(world, plan), Path(root or tmp) / spec.scene_id, layout=layout)
            env = self.env_factory(save_dir, dict(spec.params))
            try:
                walk = _Driver(env, world, int(spec.params.get("max_ticks_per_move", 20))).play(plan)
            finally:
                env.close()
        return walk_to_episode(world, walk, self.backend, spec.seed, spec.index)
