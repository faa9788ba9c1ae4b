"""The sampler's evaluation: ``evaluate_raw``'s answer groups from the index's cell rows.

A query over observations sees only DATA, and the built-in count reads only DATA (objects) and event
cells (events): all of them among the index's cells. So the filters can be ANDed on the cells' rows of
``EpisodeIndex.holds`` (one bool per cell, already built) instead of on full ``[T, N]`` masks that must
each be computed first, and the group's ``[T, N]`` mask is then scattered from its cells. The query
function itself runs unchanged on that mask, so the groups are exactly ``evaluate_raw``'s
(``tests/predicates/test_cell_answers.py`` compares the two on every sampled program).
"""

from __future__ import annotations

import numpy as np

from eqagen.core import Program, QuerySpec
from eqagen.predicates.context import query_key
from eqagen.predicates.evaluator import RawGroup, SeveralAmbiguousFilters
from eqagen.predicates.index import EpisodeIndex
from eqagen.predicates.queries import count, last_step
from eqagen.predicates.registry import REGISTRY, CellSelection


def evaluate_on_cells(index: EpisodeIndex, program: Program) -> list[RawGroup] | None:
    """The program's answer groups, or None when they cannot be computed on the cells (a query that may
    read other cells, a filter the index does not hold): then ``evaluate_raw``. Raises
    SeveralAmbiguousFilters like ``evaluate_raw``."""
    q = program.query
    qdef = REGISTRY.query(q.name)
    if not (qdef.observed or qdef.fn is count):
        return None
    used = index.positions(program.filters)
    if any(i is None for i in used):
        return None
    selected, grouped, where = index.query_cells(q), -1, -1
    for pos, i in enumerate(used):
        if index.lists.ambiguous[i]:
            if grouped >= 0:
                first, second = program.filters[where].value, program.filters[pos].value
                raise SeveralAmbiguousFilters(f"{first} and {second} both have several instances")
            grouped, where = i, pos
            continue
        selected = selected & index.holds[i]
    if grouped < 0:
        pairs = [(-1, selected)]
    else:
        anchors, rows = index.anchor_rows(grouped)
        cells = rows & selected[None, :]
        pairs = list(zip(anchors.tolist(), cells))
        if empty_is_nothing(index, program.query):  # an anchor whose group holds no cell has no group
            pairs = [pair for pair, any_cell in zip(pairs, cells.any(axis=1).tolist()) if any_cell]
    return [g for anchor, cells in pairs if (g := _group(index, program, anchor, where, cells)) is not None]


def empty_is_nothing(index: EpisodeIndex, q: QuerySpec) -> bool:
    """Whether the query says nothing about an empty selection (every built-in query; asked of the query
    itself once per episode and query, queries being pure functions of the episode, query and selection)."""
    return index.ctx.memo(
        ("empty_is_nothing", query_key(q)),
        lambda: _group(index, Program((), q), -1, -1, np.zeros(index.n_cells, dtype=bool)) is None,
    )


def _group(index: EpisodeIndex, program: Program, anchor: int, where: int, cells: np.ndarray) -> RawGroup | None:
    """One group from its cells: the query's own cell shortcut where it has one, else the query on the
    ``[T, N]`` mask scattered from the cells."""
    ctx, qdef = index.ctx, REGISTRY.query(program.query.name)
    if qdef.at_cells is not None:
        selection = CellSelection(cells, index.cell_t, index.cell_e)
        out = qdef.at_cells(ctx, program.query, selection)
        if out is None:
            return None
        last_t = out.steps if out.steps is not None else selection.last_steps(out.entities)
    else:
        mask = np.zeros(ctx.T * ctx.N, dtype=bool)
        mask[ctx.flat_cells()[cells]] = True
        mask = mask.reshape(ctx.T, ctx.N)
        out = qdef.fn(ctx, program.query, mask)
        if out is None:
            return None
        last_t = out.steps if out.steps is not None else last_step(mask, out.entities)
    return RawGroup(anchor, where if anchor >= 0 else -1, out.entities, out.value, last_t)
