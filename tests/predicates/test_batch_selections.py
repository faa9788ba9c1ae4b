"""The index's accelerators equal the definitions they stand for: a filter key's ``cells`` form gives every spec
the anchors and the row of cells its definition gives, and the selections the index and the ask stage keep per
episode are the definitions' own."""

from __future__ import annotations

import numpy as np
import pytest

from eqagen.predicates.asking import episode_names
from eqagen.predicates.context import context_for
from eqagen.predicates.index import build_index, filter_keys
from eqagen.predicates.registry import REGISTRY, Anchored, EpisodeSelections, cell_row, selection
from tests.predicates.helpers import family_episodes, household_episodes

ACCELERATED = sorted(k for k, fdef in REGISTRY.filters.items() if fdef.cells is not None)


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


def same_cell_row(got, want) -> bool:
    (anchors, row), (want_anchors, want_row) = got, want
    if want_anchors is None:
        same_anchors = anchors is None
    else:
        same_anchors = (
            anchors is not None and anchors.dtype == want_anchors.dtype and np.array_equal(anchors, want_anchors)
        )
    return same_anchors and row.dtype == bool and np.array_equal(row, want_row)


def test_the_situated_and_vertical_keys_have_a_cells_form():
    """The keys the index reads at the cells (a planted ``cells=None`` would leave this test's loop empty)."""
    assert {f for f, _ in ACCELERATED} == {"position", "situation", "location"}
    assert {k for f, k in ACCELERATED if f == "location"} == {"above", "under"}
    assert len(ACCELERATED) == 10


@pytest.mark.parametrize("start", [0, 20, 40])
def test_cell_rows_equal_the_definition(start):
    """On 20 household episodes per case (and each world family's), every spec each accelerated key lists gets
    from ``cells`` what its definition's selection gives: the same anchors and the same cells kept."""
    episodes = household_episodes(start + 20)[start:] + (family_episodes() if start == 0 else ())
    checked, kept = 0, 0
    for ep in episodes:
        ctx = context_for(ep)
        for family, key in filter_keys(ctx):
            fdef = REGISTRY.filter(family, key)
            if fdef.cells is None:
                continue
            specs = list(fdef.values(ctx, key))
            for spec, got in zip(specs, fdef.cells(ctx, key, specs), strict=True):
                assert same_cell_row(got, cell_row(ctx, fdef.fn(ctx, spec))), (ep.episode_id, spec)
                checked += 1
                kept += bool(got[1].any())
    assert checked > 1000 and kept > 1000


def test_episode_selections_are_the_definitions():
    """Asked twice, a spec's selection comes back the same object, equal to the definition's, whether the index
    computed it with its row or a program asked for it first."""
    ctx = context_for(household_episodes(1)[0])
    select = EpisodeSelections(ctx)
    index = build_index(ctx)
    assert index.specs and any(REGISTRY.filter(s.family, s.key).cells for s in index.specs)
    for spec in index.specs:
        first = select(spec)
        assert select(spec) is first
        assert same_selection(first, selection(ctx, spec))
        assert index.selection(spec) is index.selection(spec)
        assert same_selection(index.selection(spec), first)


def test_vocabulary_from_the_index_equals_the_listed_values():
    """The ask stage's vocabulary, taken from the index's specs (those that keep a cell), names what the
    ``values`` functions list: no listed spec keeps no cell."""
    for ep in household_episodes(30) + family_episodes():
        ctx = context_for(ep)
        assert episode_names(ctx, build_index(ctx).specs) == episode_names(ctx), ep.episode_id


def test_the_specs_holding_at_a_cell_are_those_whose_row_keeps_it():
    """``holding_at`` (a column of ``holds``, read when a proposal asks) lists, ascending, exactly the allowed
    specs whose definition keeps the cell; and the index lists every spec whose definition keeps a cell, and
    no other (``satisfiable_specs`` tests every row in one call)."""
    for ep in household_episodes(6) + family_episodes():
        ctx = context_for(ep)
        index = build_index(ctx)
        rows = [cell_row(ctx, selection(ctx, spec))[1] for spec in index.specs]
        assert all(row.any() for row in rows), ep.episode_id
        listed = {(f, k): list(REGISTRY.filter(f, k).values(ctx, k)) for f, k in filter_keys(ctx)}
        keeping = [s for (f, k), specs in listed.items() for s in specs if cell_row(ctx, selection(ctx, s))[1].any()]
        assert index.specs == keeping, ep.episode_id
        for allowed in index.allowed.values():
            for cell in range(0, index.n_cells, 7):
                want = [j for j, row in enumerate(rows) if row[cell] and allowed[j]]
                assert index.holding_at(cell, allowed) == want, (ep.episode_id, cell)
