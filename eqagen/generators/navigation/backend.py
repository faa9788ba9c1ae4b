"""World backends of the navigation family: ``embedded`` (seeded houses) and ``hm3d-files``.

Params (both): ``policy`` (``express`` or ``openeqa``), optional overrides ``turn_degrees``, ``step``,
``min_actions``, ``max_actions``, ``min_geodesic``, ``min_ratio``, ``scan_every``, ``scan_degrees``,
and the camera's ``hfov`` (default 90) and ``view_range`` (default 5 m).

- ``embedded``: ``n_scenes`` houses (default: one per 20 episodes, at least 1), ``house_seed``
  (default 0: the fixed embedded family, so ``house-00007`` is always the same house) and
  ``first_scene`` (default 0) choose which houses; episodes go round-robin over them.
- ``hm3d-files``: ``scenes``, a list of ``{scene_id, topdown_binary, topdown_islands, semantic, boxes,
  meters_per_pixel, origin, floor_y}`` (see :mod:`eqagen.generators.navigation.readers`).
"""

from __future__ import annotations

import math
from dataclasses import fields, replace
from functools import lru_cache
from typing import Any

from eqagen.core import ConfigError, Episode, derive_rng, derive_seed
from eqagen.core.limits import MAX_COORDINATE, MAX_SCENES, checked_count, checked_number
from eqagen.generators.base import EpisodeSpec, register_backend
from eqagen.generators.navigation.episodes import build_episode
from eqagen.generators.navigation.houses import make_house
from eqagen.generators.navigation.policies import POLICIES, Policy, PolicyStats, sample_route
from eqagen.generators.navigation.readers import load_hm3d_scene
from eqagen.generators.navigation.scene import NavScene
from eqagen.generators.navigation.visibility import Camera

MAX_METERS_PER_PIXEL = 10.0  # a top-down map's resolution: habitat-sim's are 0.01 to 0.1

POLICY_KEYS = {f.name for f in fields(Policy)} - {"name"}


MAX_POLICY_SETTING = 1e6  # a policy's counts (actions, tries) and distances (metres) and angles (degrees)


def policy_from_params(params: dict[str, Any]) -> Policy:
    name = params.get("policy", "express")
    if not isinstance(name, str) or name not in POLICIES:
        raise ConfigError("policy", f"unknown navigation policy '{name}'", ", ".join(sorted(POLICIES)))
    base = POLICIES[name]
    overrides = {k: checked_number(params, k, getattr(base, k), MAX_POLICY_SETTING) for k in POLICY_KEYS if k in params}
    return replace(base, **overrides)


def camera_from_params(params: dict[str, Any]) -> Camera:
    return Camera(
        checked_number(params, "hfov", 90.0, 360.0), checked_number(params, "view_range", 5.0, MAX_COORDINATE)
    )


def walk_episode(scene: NavScene, spec: EpisodeSpec) -> Episode:
    """One episode of ``spec`` in ``scene``: sample a route by the policy, then build the record."""
    policy = policy_from_params(spec.params)
    rng = derive_rng(spec.seed, "navigation", spec.scene_id, spec.index, policy.name)
    stats = PolicyStats()
    route = sample_route(scene.pathfinder, rng, policy, stats)
    episode = build_episode(scene, route, policy, spec.backend, spec.seed, spec.index, camera_from_params(spec.params))
    episode.meta["policy_stats"] = stats.to_dict()
    return episode


@lru_cache(maxsize=32)
def embedded_house(house_seed: int, index: int) -> NavScene:
    scene = make_house(house_seed, index)
    if house_seed:
        scene.scene_id = f"house-s{house_seed}-{index:05d}"
    return scene


def parse_embedded_scene_id(scene_id: str) -> tuple[int, int]:
    parts = scene_id.split("-")
    if parts[0] != "house" or not parts[-1].isdigit():
        raise ConfigError("scene_id", f"'{scene_id}' is not an embedded house id", "house-00042 or house-s7-00042")
    return (int(parts[1][1:]) if len(parts) == 3 else 0), int(parts[-1])


@register_backend("navigation", "embedded")
class EmbeddedNavigationBackend:
    family = "navigation"
    backend = "embedded"

    def plan(self, n_episodes: int, seed: int, params: dict[str, Any]) -> list[EpisodeSpec]:
        policy_from_params(params)  # fail early on a bad policy or camera
        camera_from_params(params)
        n_scenes = checked_count(params, "n_scenes", max(1, n_episodes // 20), MAX_SCENES)
        first, house_seed = int(params.get("first_scene", 0)), int(params.get("house_seed", 0))
        scene_ids = [embedded_house_id(house_seed, first + i) for i in range(n_scenes)]
        return [
            EpisodeSpec(
                "navigation", "embedded", scene_ids[i % n_scenes], derive_seed(seed, "navigation", i), i, dict(params)
            )
            for i in range(n_episodes)
        ]

    def run(self, spec: EpisodeSpec) -> Episode:
        house_seed, index = parse_embedded_scene_id(spec.scene_id)
        return walk_episode(embedded_house(house_seed, index), spec)


def embedded_house_id(house_seed: int, index: int) -> str:
    return f"house-s{house_seed}-{index:05d}" if house_seed else f"house-{index:05d}"


@lru_cache(maxsize=8)
def _hm3d_scene(
    scene_id: str,
    binary: str,
    islands: str | None,
    semantic: str | None,
    boxes: str | None,
    mpp: float,
    origin: tuple[float, float],
    floor_y: float,
) -> NavScene:
    return load_hm3d_scene(scene_id, binary, islands, semantic, boxes, mpp, origin, floor_y)


def hm3d_scene_from_entry(entry: dict[str, Any]) -> NavScene:
    if not isinstance(entry, dict) or "scene_id" not in entry or "topdown_binary" not in entry:
        raise ConfigError("scenes", "each hm3d-files scene needs scene_id and topdown_binary", "see docs/navigation.md")
    return _hm3d_scene(
        str(entry["scene_id"]),
        str(entry["topdown_binary"]),
        *(str(entry[k]) if entry.get(k) else None for k in ("topdown_islands", "semantic", "boxes")),
        *map_placement(entry),
    )


def map_placement(entry: dict[str, Any]) -> tuple[float, tuple[float, float], float]:
    """``meters_per_pixel`` (in (0, MAX_METERS_PER_PIXEL]), ``origin`` (x, z) and ``floor_y`` of a scene entry,
    checked: finite numbers within MAX_COORDINATE."""
    where = f"scenes[{entry['scene_id']}]"
    try:
        mpp = float(entry.get("meters_per_pixel", 0.1))
        origin = tuple(float(v) for v in entry.get("origin", (0.0, 0.0)))
        floor_y = float(entry.get("floor_y", 0.0))
    except (TypeError, ValueError) as err:
        raise ConfigError(where, f"meters_per_pixel, origin and floor_y must be numbers ({err})") from None
    if len(origin) != 2 or not all(math.isfinite(v) and abs(v) <= MAX_COORDINATE for v in (*origin, floor_y)):
        raise ConfigError(where, f"origin {origin} and floor_y {floor_y} must be finite metres", "origin: [x, z]")
    if not 0 < mpp <= MAX_METERS_PER_PIXEL:
        raise ConfigError(f"{where}.meters_per_pixel", f"{mpp} is not in (0, {MAX_METERS_PER_PIXEL}]", "e.g. 0.1")
    return mpp, origin, floor_y  # type: ignore[return-value]


@register_backend("navigation", "hm3d-files")
class Hm3dFilesBackend:
    family = "navigation"
    backend = "hm3d-files"

    def plan(self, n_episodes: int, seed: int, params: dict[str, Any]) -> list[EpisodeSpec]:
        policy_from_params(params)
        camera_from_params(params)
        scenes = params.get("scenes") or []
        if not isinstance(scenes, list) or not scenes or not all(isinstance(s, dict) for s in scenes):
            raise ConfigError(
                "scenes", "the hm3d-files backend needs a list of scenes, each a mapping", "see docs/navigation.md"
            )
        ids = [str(s.get("scene_id")) for s in scenes]
        return [
            EpisodeSpec(
                "navigation", "hm3d-files", ids[i % len(ids)], derive_seed(seed, "navigation", i), i, dict(params)
            )
            for i in range(n_episodes)
        ]

    def run(self, spec: EpisodeSpec) -> Episode:
        entry = next((s for s in spec.params.get("scenes", []) if str(s.get("scene_id")) == spec.scene_id), None)
        if entry is None:
            raise ConfigError("scenes", f"scene '{spec.scene_id}' is not listed in the backend's scenes")
        return walk_episode(hm3d_scene_from_entry(entry), spec)
