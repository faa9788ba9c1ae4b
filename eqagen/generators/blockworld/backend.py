"""The blockworld backends: ``embedded`` (generated worlds) and ``world-file`` (worlds read from files).

Both walk the world with the explorer and record a core Episode (family ``blockworld``). Plans are
deterministic: scene ids and seeds derive from the run's seed.

``embedded`` params: ``biomes`` (default all eight), ``n_scenes`` (default: one per episode),
``max_steps`` (default 500).
``world-file`` params: ``paths`` (save directories, ``.mca``, ``.schem`` or PQB ``.txt`` files) or
``pqb_root`` (a directory with ``qea_for_environment_generation.csv``, ``env_specific_mobs.txt`` and
``structures/``) with ``on_missing`` (``skip``: plan only environments whose structure files are all
present, the default; ``fill``: lay flat ground where one is missing; ``error``), and ``max_steps``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from eqagen.core import ConfigError, DataFileError, Episode, derive_rng, derive_seed
from eqagen.core.limits import MAX_SCENES, checked_count
from eqagen.generators.base import EpisodeSpec, register_backend
from eqagen.generators.blockworld.embedded import generate_world
from eqagen.generators.blockworld.explorer import ExplorerParams, explore
from eqagen.generators.blockworld.files import load_world
from eqagen.generators.blockworld.pqb import assemble_environment, read_env_specs, read_mob_specs
from eqagen.generators.blockworld.record import walk_to_episode
from eqagen.generators.blockworld.world import BIOMES, BlockWorld

SPEC_CSV = "qea_for_environment_generation.csv"
MOB_FILE = "env_specific_mobs.txt"


def walk_world(world: BlockWorld, spec: EpisodeSpec) -> Episode:
    rng = derive_rng(spec.seed, "blockworld-explore", spec.scene_id, spec.index)
    walk = explore(world, rng, ExplorerParams(max_steps=int(spec.params.get("max_steps", 500))))
    return walk_to_episode(world, walk, spec.backend, spec.seed, spec.index)


def _episode_specs(backend: str, scenes: list[tuple[str, dict]], n_episodes: int, seed: int) -> list[EpisodeSpec]:
    out = []
    for i in range(n_episodes):
        scene_id, params = scenes[i % len(scenes)]
        out.append(
            EpisodeSpec(
                "blockworld", backend, scene_id, derive_seed(seed, "blockworld-episode", scene_id, i), i, dict(params)
            )
        )
    return out


@register_backend("blockworld", "embedded")
class EmbeddedBlockworld:
    family, backend = "blockworld", "embedded"

    def plan(self, n_episodes: int, seed: int, params: dict[str, Any]) -> list[EpisodeSpec]:
        biomes = params.get("biomes") or list(BIOMES)
        if not isinstance(biomes, list) or not all(isinstance(b, str) for b in biomes):
            raise ConfigError("biomes", f"{biomes!r} is not a list of biome names", ", ".join(BIOMES))
        unknown = sorted(set(biomes) - set(BIOMES))
        if unknown:
            raise ConfigError("biomes", f"unknown biome(s) {unknown}", ", ".join(BIOMES))
        n_scenes = checked_count(params, "n_scenes", n_episodes, MAX_SCENES)
        scenes = []
        for k in range(n_scenes):
            biome = biomes[k % len(biomes)]
            scene_id = f"{biome}-{k:05d}"
            scenes.append(
                (
                    scene_id,
                    {
                        "biome": biome,
                        "world_seed": derive_seed(seed, "blockworld-scene", scene_id),
                        "max_steps": params.get("max_steps", 500),
                    },
                )
            )
        return _episode_specs(self.backend, scenes, n_episodes, seed)

    def world(self, spec: EpisodeSpec) -> BlockWorld:
        return generate_world(spec.params["biome"], int(spec.params["world_seed"]), spec.scene_id)

    def run(self, spec: EpisodeSpec) -> Episode:
        return walk_world(self.world(spec), spec)


@register_backend("blockworld", "world-file")
class WorldFileBlockworld:
    family, backend = "blockworld", "world-file"

    def plan(self, n_episodes: int, seed: int, params: dict[str, Any]) -> list[EpisodeSpec]:
        common = {"max_steps": params.get("max_steps", 500)}
        if params.get("pqb_root"):
            scenes = self._pqb_scenes(Path(params["pqb_root"]), str(params.get("on_missing", "skip")), seed, common)
        elif params.get("paths"):
            scenes = [
                (Path(p).stem if Path(p).suffix else Path(p).name, {"path": str(p), **common}) for p in params["paths"]
            ]
        else:
            raise ConfigError("params", "world-file needs 'paths' or 'pqb_root'")
        if not scenes:
            raise ConfigError("pqb_root", "no environment has all its structure files", "on_missing: fill")
        return _episode_specs(self.backend, scenes, n_episodes, seed)

    @staticmethod
    def _pqb_scenes(root: Path, on_missing: str, seed: int, common: dict) -> list[tuple[str, dict]]:
        if on_missing not in ("skip", "fill", "error"):
            raise ConfigError("on_missing", f"{on_missing!r}", "skip, fill, error")
        scenes = []
        for spec in read_env_specs(root / SPEC_CSV):
            files = [root / "structures" / spec.structure_file(q) for q in ("nw", "ne", "sw", "se")]
            if on_missing == "skip" and not all(f.exists() for f in files):
                continue
            scenes.append(
                (
                    spec.scene_id,
                    {
                        "pqb_root": str(root),
                        "spec_index": spec.index,
                        **common,
                        "on_missing": "error" if on_missing == "skip" else on_missing,
                        "world_seed": derive_seed(seed, "pqb-scene", spec.scene_id),
                    },
                )
            )
        return scenes

    def world(self, spec: EpisodeSpec) -> BlockWorld:
        p = spec.params
        if "path" in p:
            world = load_world(p["path"])
            world.scene_id = spec.scene_id
            return world
        root = Path(p["pqb_root"])
        env = read_env_specs(root / SPEC_CSV)[int(p["spec_index"])]
        mobs = read_mob_specs(root / MOB_FILE) if (root / MOB_FILE).exists() else {}
        return assemble_environment(env, root / "structures", mobs, int(p["world_seed"]), p["on_missing"])

    def run(self, spec: EpisodeSpec) -> Episode:
        return walk_world(self.world(spec), spec)


def world_of_scene(backend: str, seed: int, params: dict[str, Any], n_episodes: int, scene_id: str) -> BlockWorld:
    """The world of one scene of a run, rebuilt from the run's backend, seed, params and episode count (the
    run's plan names each scene's world)."""
    planner = EmbeddedBlockworld() if backend == "embedded" else WorldFileBlockworld()
    for spec in planner.plan(n_episodes, seed, params):
        if spec.scene_id == scene_id:
            return planner.world(spec)
    raise DataFileError("manifest.json", "config.generation", f"its plan has no scene '{scene_id}'",
                        "export from the dataset folder that holds this episode")  # fmt: skip
