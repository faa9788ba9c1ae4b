"""The ``household/alfred`` world backend: episodes on the real ALFRED floor plans.

``mode: film`` (the default, TAG-EQA's setting) runs the FILM-like agent on FILM's parse of each
instruction of a split (``tests_seen`` by default); ``mode: expert`` replays the expert plans of a
split that has them (``valid_seen``). Data come from ``data_root`` (default
``$EQAGEN_REALDATA/alfred/json_2.1.0/<split>``), layouts from ``layouts`` (default
``$EQAGEN_REALDATA/alfred/layouts``), FILM's parses from ``parses`` (default
``$EQAGEN_REALDATA/film/instruction2_params_<split>.json``). FILM mode goes through the split's
annotations as FILM's evaluation does, round by round: every trajectory's first instruction, then every
second one, and so on (tests_seen: 483 trajectories, 1,533 annotations, three to six each); a plan
longer than that starts over. Expert mode stops at the number of trajectories.
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
from eqagen.generators.household.alfred.film_run import annotation_consensus, run_film_episode
from eqagen.generators.household.alfred.reader import (
    find_layouts_dir,
    iter_trajectory_paths,
    read_layout,
    read_trajectory,
)
from eqagen.generators.household.alfred.replay import replay_trajectory


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
def _trajectory_list(root: str) -> tuple[tuple[str, str, int], ...]:
    """(path relative to root, floor plan, number of annotations) of every trajectory."""
    trajs = (read_trajectory(p) for p in iter_trajectory_paths(root))
    return tuple((t.path.relative_to(root).as_posix(), t.floor_plan, max(len(t.annotations), 1)) for t in trajs)


def annotation_rounds(trajs: tuple[tuple[str, str, int], ...]) -> list[tuple[str, str, int]]:
    """(trajectory, floor plan, annotation index) of every annotation, round by round."""
    rounds = range(max((n for _, _, n in trajs), default=0))
    return [(rel, plan, k) for k in rounds for rel, plan, n in trajs if k < n]


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
        runs = annotation_rounds(trajs) if p.mode == "film" else [(rel, plan, 0) for rel, plan, _ in trajs]
        n = n_episodes if p.mode == "film" else min(n_episodes, len(trajs))
        specs = []
        for i in range(n):
            rel, floor_plan, repeat_idx = runs[i % len(runs)]
            run = p.model_dump() | {"trajectory": rel, "repeat_idx": repeat_idx}
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
        consensus = annotation_consensus(traj, parses)
        return run_film_episode(traj, layout, parse, rel, spec.seed, scene_catalog, p.max_steps, repeat_idx, consensus)
