"""The contract between world backends and the pipeline.

A backend turns a plan (which scenes, how many episodes, which seed) into :class:`EpisodeSpec` items,
and one spec into one :class:`~eqagen.core.Episode`. Specs are small and picklable, so the pipeline
can batch them across processes or Dask workers; ``run`` must be deterministic given the spec.

Backends register by ``(family, backend)`` name and are imported lazily, so an optional simulator
(ai2thor, habitat_sim, minerl) is only imported when a config asks for it.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from eqagen.core import Episode, UnknownNameError


@dataclass(frozen=True)
class EpisodeSpec:
    """Everything needed to produce one episode, deterministically."""

    family: str
    backend: str
    scene_id: str
    seed: int
    index: int  # position in the plan; part of the episode id
    params: dict[str, Any] = field(default_factory=dict)


class WorldBackend(Protocol):
    family: str
    backend: str

    def plan(self, n_episodes: int, seed: int, params: dict[str, Any]) -> list[EpisodeSpec]:
        """The episodes to make: scenes chosen and seeds derived from ``seed``."""
        ...

    def run(self, spec: EpisodeSpec) -> Episode:
        """Make one episode. Raises an :class:`~eqagen.core.EqagenError` subclass on bad input."""
        ...


_REGISTRY: dict[tuple[str, str], Callable[[], WorldBackend]] = {}
# Modules that register backends when imported; listed here so lookups can import them lazily.
_BACKEND_MODULES: dict[tuple[str, str], str] = {
    ("household", "embedded"): "eqagen.generators.household.backend",
    ("household", "alfred"): "eqagen.generators.household.alfred",
    ("household", "ai2thor"): "eqagen.generators.household.alfred.ai2thor_backend",
    ("navigation", "embedded"): "eqagen.generators.navigation.backend",
    ("navigation", "hm3d-files"): "eqagen.generators.navigation.backend",
    ("navigation", "habitat-sim"): "eqagen.generators.navigation.habitat_backend",
    ("blockworld", "embedded"): "eqagen.generators.blockworld.backend",
    ("blockworld", "world-file"): "eqagen.generators.blockworld.backend",
    ("blockworld", "minerl"): "eqagen.generators.blockworld.minerl_backend",
}


def register_backend(family: str, backend: str) -> Callable[[Callable[[], WorldBackend]], Callable[[], WorldBackend]]:
    """Class decorator: ``@register_backend("household", "embedded")``. The class takes no arguments."""

    def wrap(factory: Callable[[], WorldBackend]) -> Callable[[], WorldBackend]:
        _REGISTRY[(family, backend)] = factory
        return factory

    return wrap


def get_backend(family: str, backend: str) -> WorldBackend:
    key = (family, backend)
    if key not in _REGISTRY and key in _BACKEND_MODULES:
        importlib.import_module(_BACKEND_MODULES[key])
    if key not in _REGISTRY:
        raise UnknownNameError("world backend", f"{family}/{backend}", [f"{f}/{b}" for f, b in _BACKEND_MODULES])
    return _REGISTRY[key]()


def list_backends() -> list[tuple[str, str]]:
    return sorted(_BACKEND_MODULES)
