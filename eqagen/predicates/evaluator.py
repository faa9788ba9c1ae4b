"""The vectorised evaluator: ``DATA -> FILTER_1 -> ... -> FILTER_n -> QUERY`` over ``[t, entity]`` masks.

There is no final unique(). A filter that names an object with several observed instances (two
countertops) is *ambiguous*: the answer is grouped per instance (the group's anchor), each group
holding what the query says about that instance. A program may have at most one ambiguous filter (the
sampler rejects more), so the groups are the instances of that one filter. Groups where the query finds
nothing are dropped, but for one: a program without an ambiguous filter whose query has a value for
nothing (``QueryDef.none_value``: counting events, "0") has that one group, with no entity.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

import numpy as np

from eqagen.core import FilterSpec, Program
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.queries import last_step
from eqagen.predicates.registry import REGISTRY, Anchored, QueryDef, selection


class SeveralAmbiguousFilters(ValueError):
    """More than one filter names an object with several instances: the groups would be a product."""


@dataclass(frozen=True)
class RawGroup:
    """One answer group before it is turned into text: anchor entity (-1: none), entities, value, and
    the group mask's last step per entity (where each result is reported)."""

    anchor: int
    filter_index: int  # the ambiguous filter's position in the program, -1 when none
    entities: np.ndarray
    value: str
    last_t: np.ndarray


Select = Callable[[FilterSpec], "np.ndarray | Anchored"]
NO_ENTITIES = np.zeros(0, dtype=np.int64)
NO_ENTITIES.setflags(write=False)


def base_mask(ctx: EpisodeContext, program: Program, qdef: QueryDef) -> np.ndarray:
    """DATA (for queries over observations) AND the subject AND what the query applies to: ``[T, N]``."""
    q = program.query
    cols = qdef.applies(ctx, q)
    if q.args.get("subject"):
        cols = cols & ctx.of_type(q.args["subject"])
    return ctx.data & cols[None, :] if qdef.observed else np.broadcast_to(cols, (ctx.T, ctx.N))


def combine(ctx: EpisodeContext, filters: tuple[FilterSpec, ...], mask: np.ndarray, select: Select):
    """AND the filters into ``mask``; returns (mask, ambiguous Anchored or None, its filter index)."""
    grouped, where = None, -1
    for i, spec in enumerate(filters):
        sel = select(spec)
        if isinstance(sel, Anchored):
            if len(sel) == 1:
                sel = sel.masks[0]
            elif len(sel) == 0:
                sel = np.zeros((ctx.T, ctx.N), dtype=bool)
            elif grouped is not None:
                raise SeveralAmbiguousFilters(f"{filters[where].value} and {spec.value} both have several instances")
            else:
                grouped, where = sel, i
                continue
        mask = mask & sel
    return mask, grouped, where


def evaluate_raw(ctx: EpisodeContext, program: Program, select: Select | None = None) -> list[RawGroup]:
    """The answer groups of a program (no text). Raises SeveralAmbiguousFilters. ``select`` gives a
    filter's selection; by default its definition, called (the sampler passes the selections its index
    computed from the same definitions once per episode)."""
    qdef = REGISTRY.query(program.query.name)
    return groups_on(ctx, program, qdef, base_mask(ctx, program, qdef), select or partial(selection, ctx))


def groups_on(
    ctx: EpisodeContext, program: Program, qdef: QueryDef, base: np.ndarray, select: Select
) -> list[RawGroup]:
    """``evaluate_raw`` given the program's ``base_mask`` (programs that differ in their filters only, as
    the validity rules' dropped filters, share it)."""
    mask, grouped, where = combine(ctx, program.filters, base, select)
    pairs = [(-1, mask)] if grouped is None else list(zip(grouped.anchors.tolist(), grouped.masks & mask[None]))
    groups = []
    for anchor, gmask in pairs:
        out = qdef.fn(ctx, program.query, gmask)
        if out is None:
            continue
        last_t = out.steps if out.steps is not None else last_step(gmask, out.entities)
        groups.append(RawGroup(anchor, where if anchor >= 0 else -1, out.entities, out.value, last_t))
    if not groups and grouped is None:
        none = qdef.none_value(program.query) if qdef.none_value else None
        if none is not None:
            groups.append(RawGroup(-1, -1, NO_ENTITIES, none, NO_ENTITIES))
    return groups
