"""Shared by the predicate tests: household episodes from the embedded backend, and answer comparison."""

from __future__ import annotations

from functools import lru_cache

from eqagen.core import AnswerGroup, Episode
from eqagen.generators.base import get_backend

MAX_EPISODES = 300


@lru_cache(maxsize=2)
def _household(seed: int) -> tuple[Episode, ...]:
    backend = get_backend("household", "embedded")
    return tuple(backend.run(spec) for spec in backend.plan(MAX_EPISODES, seed, {"max_steps": 250}))


def household_episodes(n: int, seed: int = 0) -> tuple[Episode, ...]:
    """The first ``n`` (at most 300) episodes of one plan, made once per test session."""
    return _household(seed)[:n]


@lru_cache(maxsize=1)
def family_episodes() -> tuple[Episode, ...]:
    """A few episodes of each world family: household, navigation (EXPRESS-style walks) and Minecraft."""
    nav = get_backend("navigation", "embedded")
    blocks = get_backend("blockworld", "embedded")
    return (
        *household_episodes(6),
        *(nav.run(s) for s in nav.plan(3, 3, {"policy": "express", "n_scenes": 2})),
        *(blocks.run(s) for s in blocks.plan(3, 5, {})),
    )


def comparable(groups: list[AnswerGroup]) -> list[tuple]:
    """A structured answer in the reference evaluator's form."""
    return [(g.anchor, [(r.entity, r.type, tuple(r.position)) for r in g.result], g.value) for g in groups]
