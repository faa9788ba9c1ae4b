"""The index's accelerators equal the definitions they stand for: a filter key's ``batch`` form gives every spec
the selection its definition gives, and the ask stage's per-episode selections are the definitions' own."""

from __future__ import annotations

import numpy as np
import pytest

from eqagen.predicates.asking import EpisodeSelections, episode_names
from eqagen.predicates.context import context_for
from eqagen.predicates.index import build_index, filter_keys
from eqagen.predicates.registry import REGISTRY, Anchored, selection
from tests.predicates.helpers import family_episodes, household_episodes

BATCHED = sorted(k for k, fdef in REGISTRY.filters.items() if fdef.batch is not None)


def same_selection(a, b) -> bool:
    if isinstance(a, Anchored) or isinstance(b, Anchored):
        return (
            isinstance(a, Anchored)
            and isinstance(b, Anchored)
            and np.array_equal(a.anchors, b.anchors)
            and a.masks.shape == b.masks.shape
            and np.array_equal(a.masks, b.masks)
        )
    return a.shape == b.shape and np.array_equal(a, b)


def test_the_situated_families_have_a_batch_form():
    """The keys the index batches (a planted ``batch=None`` would leave this test's loop empty)."""
    assert {f for f, _ in BATCHED} == {"position", "situation"}
    assert len(BATCHED) == 8


@pytest.mark.parametrize("start", [0, 20, 40])
def test_batch_selections_equal_the_definition(start):
    """On 20 household episodes per case (and each world family's), every spec each batched key lists gets
    from ``batch`` what its definition gives: the same anchors and the same masks, step by step."""
    episodes = household_episodes(start + 20)[start:] + (family_episodes() if start == 0 else ())
    checked = 0
    for ep in episodes:
        ctx = context_for(ep)
        for family, key in filter_keys(ctx):
            fdef = REGISTRY.filter(family, key)
            if fdef.batch is None:
                continue
            specs = list(fdef.values(ctx, key))
            for spec, got in zip(specs, fdef.batch(ctx, key, specs), strict=True):
                assert same_selection(got, fdef.fn(ctx, spec)), (ep.episode_id, spec)
                checked += 1
    assert checked > 1000


def test_episode_selections_are_the_definitions():
    """Asked twice, a spec's selection comes back the same object, equal to the definition's."""
    ctx = context_for(household_episodes(1)[0])
    select = EpisodeSelections(ctx)
    index = build_index(ctx)
    for spec in index.specs:
        first = select(spec)
        assert select(spec) is first
        assert same_selection(first, selection(ctx, spec))


def test_vocabulary_from_the_index_equals_the_listed_values():
    """The ask stage's vocabulary, taken from the index's specs (those that keep a cell), names what the
    ``values`` functions list: no listed spec keeps no cell."""
    for ep in household_episodes(30) + family_episodes():
        ctx = context_for(ep)
        assert episode_names(ctx, build_index(ctx).specs) == episode_names(ctx), ep.episode_id
