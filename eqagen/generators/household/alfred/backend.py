"""The ``household/alfred`` world backend: episodes on the real ALFRED floor plans.

``mode: film`` (the default, TAG-EQA's setting) runs the FILM-like agent on FILM's parse of each
instruction of a split (``tests_seen`` by default); ``mode: expert`` replays the expert plans of a
split that has them (``valid_seen``). Data come from ``data_root`` (default
``$EQAGEN_REALDATA/alfred/json_2.1.0/<split>``), layouts from ``layouts`` (default
``$EQAGEN_REALDATA/alfred/layouts``), FILM's parses from ``parses`` (default
``$EQAGEN_REALDATA/film/instruction2_params_<split>.json``). When a plan asks for more episodes than
the split has trajectories, FILM mode moves on to each trajectory's next annotation (``repeat_idx``),
as FILM's evaluation covers every annotation; expert mode stops at the number of trajectories.
"""

from __future__ import annotations

import os
from functools import lru_cache
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eqagen.core import ConfigError, DataFileError, Episode, derive_seed
from eqagen.generators.base import EpisodeSpec, register_backend
from eqagen.generators.household.alfred.catalog import SceneCatalog, build_catalog
from eqagen.generators.household.alfred.film import FILM_FILES, lookup_parse, read_film_parses
from eqagen.generators.household.alfred.film_run import run_film_episode
from eqagen.generators.household.alfred.reader import (
    find_layouts_dir,
    iter_trajectory_paths,
    read_layout,
    read_trajectory,
)
from eqagen.generators.household.alfred.replay import replay_trajectory

N_ANNOTATIONS = 3  # ALFRED collected three instructions per trajectory


class AlfredParams(BaseModel):
    model_config = ConfigDict(extra="forbid")

    mode: Literal["film", "expert"] = Field("film", description="film: FILM-like agent on FILM's parse; expert: replay")
    split: str = Field("tests_seen", description="ALFRED split folder under json_2.1.0")
    data_root: str | None = Field(None, description="folder of traj_data.json files (default: by split)")
    layouts: str | None = Field(None, description="ALFRED gen/layouts folder")
    parses: str | None = Field(None, description="FILM parse JSON (film mode)")
    catalog: str | None = Field(None, description="scene catalog folder (default: index the data root's parent)")
    max_steps: int = Field(250, ge=1, le=10_000)


def parse_params(params: dict[str, Any]) -> AlfredParams:
    try:
        return AlfredParams(**params)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "params"
        raise ConfigError(f"household.{key}", err["msg"], source="household/alfred params") from None


def _realdata(*parts: str) -> Path:
    env = os.environ.get("EQAGEN_REALDATA")
    if not env:
        fix = "set EQAGEN_REALDATA to the folder holding alfred/ and film/, or pass the path"
        raise DataFileError("$EQAGEN_REALDATA", "/".join(parts), "not set and no explicit path given", fix)
    return Path(env).joinpath(*parts)


def data_root(p: AlfredParams) -> Path:
    root = Path(p.data_root) if p.data_root else _realdata("alfred", "json_2.1.0", p.split)
    if not root.is_dir():
        raise DataFileError(root, "data_root", "ALFRED split folder not found", "point data_root at json_2.1.0/<split>")
    return root


@lru_cache(maxsize=4)
def _trajectory_list(root: str) -> tuple[tuple[str, str], ...]:
    """(path relative to root, floor plan) of every trajectory; the floor plan is the episode's scene."""
    return tuple((p.relative_to(root).as_posix(), read_trajectory(p).floor_plan) for p in iter_trajectory_paths(root))


@lru_cache(maxsize=4)
def _catalog(source: str, layouts: str, prebuilt: bool) -> SceneCatalog:
    return SceneCatalog.read(source) if prebuilt else SceneCatalog(build_catalog(source, layouts))


@lru_cache(maxsize=4)
def _parses(path: str) -> dict:
    return read_film_parses(path)


@lru_cache(maxsize=128)
def _layout(floor_plan: str, layouts: str):
    return read_layout(floor_plan, layouts)


@register_backend("household", "alfred")
class AlfredBackend:
    family = "household"
    backend = "alfred"

    def plan(self, n_episodes: int, seed: int, params: dict[str, Any]) -> list[EpisodeSpec]:
        p = parse_params(params)
        root = data_root(p)
        trajs = _trajectory_list(str(root))
        if not trajs:
            raise DataFileError(root, None, "no traj_data.json found")
        n = n_episodes if p.mode == "film" else min(n_episodes, len(trajs))
        specs = []
        for i in range(n):
            rel, floor_plan = trajs[i % len(trajs)]
            run = p.model_dump() | {"trajectory": rel, "repeat_idx": (i // len(trajs)) % N_ANNOTATIONS}
            specs.append(EpisodeSpec("household", "alfred", floor_plan, derive_seed(seed, "alfred", i), i, run))
        return specs

    def run(self, spec: EpisodeSpec) -> Episode:
        run_params = dict(spec.params)
        rel, repeat_idx = run_params.pop("trajectory"), int(run_params.pop("repeat_idx", 0))
        p = parse_params(run_params)
        root = data_root(p)
        layouts = find_layouts_dir(p.layouts)
        traj = read_trajectory(root / rel)
        layout = _layout(traj.floor_plan, str(layouts))
        if p.mode == "expert":
            return replay_trajectory(traj, layout, rel, spec.seed)[0]
        parses = _parses(str(Path(p.parses) if p.parses else _realdata("film", FILM_FILES.get(p.split, p.split))))
        parse = lookup_parse(parses, traj.instruction(repeat_idx))
        if parse is None:
            raise DataFileError(root / rel, "turk_annotations", f"no FILM parse for annotation {repeat_idx}")
        source = p.catalog or str(root.parent)
        scene_catalog = _catalog(source, str(layouts), p.catalog is not None)
        return run_film_episode(traj, layout, parse, rel, spec.seed, scene_catalog, p.max_steps, repeat_idx)
