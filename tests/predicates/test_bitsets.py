"""The integer previews of ``bitsets`` agree with plain per-entity loops over random cell selections."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.predicates.bitsets import (
    BitView,
    Previewer,
    cell_layout,
    dense_codes,
    plane_rows,
    rows_to_ints,
)


def plain_preview(cells: np.ndarray, ents: np.ndarray, codes: np.ndarray | None, events: bool, reported=None):
    """(content, size) by loops: counting events, the selected cells and their number; otherwise the
    entities named (with ``reported``, only those whose last selected cell is reported) or, with ``codes``,
    the distinct codes at their last selected cells, and the number of entities named."""
    if events:
        return frozenset(np.flatnonzero(cells).tolist()), int(cells.sum())
    last_cell = {}
    for k in range(cells.size):  # cells sorted by entity, then step: the later cell of an entity wins
        if cells[k]:
            last_cell[int(ents[k])] = k
    named = {e for e, k in last_cell.items() if reported is None or reported[k]}
    content = frozenset(int(codes[last_cell[e]]) for e in named) if codes is not None else frozenset(named)
    return content, len(named)


@st.composite
def episodes(draw):
    runs = draw(st.lists(st.integers(1, 70), min_size=1, max_size=12))
    ents = np.repeat(np.arange(len(runs)) * 3, runs)  # sorted, with gaps in the entity ids
    k = ents.size
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    density = draw(st.sampled_from([0.05, 0.3, 0.7, 0.95]))
    rows = rng.random((6, k)) < density
    view = rng.random(k) < draw(st.sampled_from([0.5, 1.0]))
    codes = rng.integers(-1, draw(st.integers(1, 20)), k) if draw(st.booleans()) else None
    reported = rng.random(k) < 0.6 if draw(st.booleans()) else None
    return ents, rows, view, codes, draw(st.booleans()), reported


@settings(max_examples=150, deadline=None)
@given(episodes())
def test_previews_match_loops(case):
    """Two selections have equal previews exactly when the loops find equal contents; sizes agree."""
    ents, rows, view_cells, codes, events, reported = case
    starts = np.flatnonzero(np.r_[True, ents[1:] != ents[:-1]])
    layout = cell_layout(ents, starts)
    ints = rows_to_ints(rows, layout)
    view_int = rows_to_ints(view_cells[None, :], layout)[0]
    planes = None if codes is None or events else tuple(rows_to_ints(plane_rows(codes), layout))
    reported = None if events else reported
    reported_int = None if reported is None else rows_to_ints(reported[None, :], layout)[0]
    pv = Previewer(layout, BitView(view_int, planes, events, reported_int))
    used_codes = None if planes is None else codes
    for a in range(rows.shape[0]):
        wide = rows[a] & view_cells
        wide_int = ints[a] & view_int
        assert wide_int.bit_count() == int(wide.sum())
        for b in range(rows.shape[0]):
            narrow = wide & rows[b]
            pw, pn = (plain_preview(x, ents, used_codes, events, reported) for x in (wide, narrow))
            qw, qn = pv.preview(wide_int), pv.preview(wide_int & ints[b])
            assert (qw.content == qn.content) == (pw[0] == pn[0])
            assert (qw.size, qn.size) == (pw[1], pn[1])


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.integers(-3, 40), max_size=60)
    | st.lists(st.integers(-(10**9), 10**9), max_size=30)
    | st.lists(st.booleans(), max_size=30)
)
def test_dense_codes_are_the_ranks_np_unique_gives(values):
    """The table shortcut (small ranges) and the fallback (wide ranges) both equal ``np.unique``'s inverse."""
    codes = np.array(values, dtype=bool if values and isinstance(values[0], bool) else np.int64)
    expected = np.unique(codes, return_inverse=True)[1].ravel()
    assert np.array_equal(dense_codes(codes), expected)
