"""The records stage's caches and shortcuts give what a fresh computation gives, on sampled programs."""

from __future__ import annotations

from functools import lru_cache

from eqagen.core import ResultItem, derive_rng
from eqagen.predicates import QuestionConfig, context_for
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.evaluator import RawGroup, caption, result_items
from eqagen.predicates.sampler import Accepted, sample_programs
from tests.predicates.conftest import make_episode


@lru_cache(maxsize=1)
def sampled() -> list[tuple[EpisodeContext, list[Accepted]]]:
    """Accepted programs of a few small episodes (each with its context)."""
    out = []
    for seed in range(4):
        ep = make_episode(seed, 60)
        ctx = context_for(ep)
        accepted, _ = sample_programs(ctx, QuestionConfig(), derive_rng(0, "text-caches", ep.episode_id))
        out.append((ctx, accepted))
    return out


def fresh_items(ctx: EpisodeContext, g: RawGroup) -> tuple[ResultItem, ...]:
    """The result items of a group read straight from the episode's arrays."""
    ents = ctx.episode.entities
    return tuple(
        ResultItem(
            ents.instance_id[e],
            str(ctx.types[e]),
            tuple(round(float(v), 2) for v in ctx.position[t, e]),
            caption(ctx, e),
        )
        for e, t in zip(g.entities.tolist(), g.last_t.tolist())
    )


def test_result_items_are_the_entities_where_they_are_reported():
    moved = False  # an entity reported at two steps at two positions: a cache keyed by entity alone would fail
    for ctx, accepted in sampled():
        where: dict[int, set[tuple]] = {}
        for acc in accepted:
            for g in acc.groups:
                items = result_items(ctx, g)
                assert items == fresh_items(ctx, g)
                for e, item in zip(g.entities.tolist(), items):
                    where.setdefault(e, set()).add(item.position)
        moved = moved or any(len(p) > 1 for p in where.values())
    assert moved
