"""The sampler's bulk shortcuts (``rows_at_cells``) agree with the filters' ``values`` and own masks on every
satisfiable spec, and the index built from them with the one built spec by spec from the masks."""

from __future__ import annotations

import numpy as np

from eqagen.predicates import REGISTRY, Anchored
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.index import build_index, filter_keys
from eqagen.predicates.registry import KeyRows
from tests.predicates.conftest import make_episode
from tests.predicates.helpers import household_episodes


def mask_at_cells(ctx: EpisodeContext, sel, ts: np.ndarray, es: np.ndarray) -> tuple[np.ndarray, bool]:
    """A filter's selection reduced to the cells the plain way: union over anchors, then gathered."""
    if isinstance(sel, Anchored):
        return sel.union()[ts, es] if len(sel) else np.zeros(ts.size, dtype=bool), len(sel) >= 2
    return np.asarray(sel)[ts, es], False


def episodes() -> list:
    return [make_episode(s, 40) for s in range(4)] + list(household_episodes(6))


def test_every_bulk_shortcut_agrees_with_values_and_masks():
    checked = set()
    for ep in episodes():
        ctx = EpisodeContext(ep)  # fresh: shortcuts first, masks after, so neither reuses the other
        ts, es = ctx.cells
        bulk: dict[tuple[str, str], KeyRows] = {}
        for family, key in filter_keys(ctx):
            shortcut = REGISTRY.filter(family, key).rows_at_cells
            if shortcut is not None:
                bulk[(family, key)] = shortcut(ctx, key)
        for (family, key), got in bulk.items():
            fdef = REGISTRY.filter(family, key)
            assert got.specs == list(fdef.values(ctx, key)), (ep.episode_id, family, key)
            assert got.rows.shape == (len(got.specs), ts.size) and got.rows.dtype == bool
            assert got.ambiguous.shape == (len(got.specs),)
            for spec, row, ambiguous in zip(got.specs, got.rows, got.ambiguous):
                cells, want_ambiguous = mask_at_cells(ctx, fdef.fn(ctx, spec), ts, es)
                assert np.array_equal(row, cells), (ep.episode_id, spec)
                assert bool(ambiguous) == want_ambiguous, (ep.episode_id, spec)
                checked.add((family, key))
    assert {f for f, _ in checked} >= {"property", "state", "location", "position", "moment"}, checked


def test_index_from_shortcuts_equals_index_from_masks(monkeypatch):
    """The same specs, rows, ambiguity, families and keys when every key goes through the masks instead."""
    for ep in episodes()[::2]:
        fast = build_index(EpisodeContext(ep))
        with monkeypatch.context() as m:
            for (family, key), fdef in list(REGISTRY.filters.items()):
                m.setitem(REGISTRY.filters, (family, key), type(fdef)(**{**fdef.__dict__, "rows_at_cells": None}))
            slow = build_index(EpisodeContext(ep))
        assert fast.specs == slow.specs
        assert np.array_equal(fast.holds, slow.holds)
        assert np.array_equal(fast.ambiguous, slow.ambiguous)
        assert (fast.families, fast.keys) == (slow.families, slow.keys)
        assert np.array_equal(fast.family_of, slow.family_of) and np.array_equal(fast.key_id, slow.key_id)
        assert [fast.families[f] for f in fast.family_of.tolist()] == [s.family for s in fast.specs]
        assert [fast.keys[k] for k in fast.key_id.tolist()] == [(s.family, s.key) for s in fast.specs]
        assert fast.holds.any(axis=1).all()  # specs that hold nowhere at the cells are dropped
