"""The vectorised evaluator: ``DATA -> FILTER_1 -> ... -> FILTER_n -> QUERY`` over ``[t, entity]`` masks.

There is no final unique(). A filter that names an object with several observed instances (two
countertops) is *ambiguous*: the answer is grouped per instance (the group's anchor), each group
holding what the query says about that instance. A program may have at most one ambiguous filter (the
sampler rejects more), so the groups are the instances of that one filter. Groups where the query finds
nothing are dropped.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from eqagen.core import AnswerGroup, Episode, FilterSpec, Program, ResultItem
from eqagen.predicates.context import EpisodeContext, context_for
from eqagen.predicates.queries import last_step
from eqagen.predicates.registry import REGISTRY, Anchored, QueryDef


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
    mask, grouped, where = combine(ctx, program.filters, base_mask(ctx, program, qdef), select or ctx.selection)
    pairs = [(-1, mask)] if grouped is None else list(zip(grouped.anchors.tolist(), grouped.masks & mask[None]))
    groups = []
    for anchor, gmask in pairs:
        out = qdef.fn(ctx, program.query, gmask)
        if out is None:
            continue
        last_t = out.steps if out.steps is not None else last_step(gmask, out.entities)
        groups.append(RawGroup(anchor, where if anchor >= 0 else -1, out.entities, out.value, last_t))
    return groups


# -- structured answers ----------------------------------------------------------------------------------
def coords_text(xyz: tuple[float, float, float]) -> str:
    return f"(x={xyz[0]:.2f}, y={xyz[1]:.2f}, z={xyz[2]:.2f})"


def filter_text(spec: FilterSpec, anchor_xyz: tuple[float, float, float] | None = None) -> str:
    """TAG-EQA's form of one filter: ``(location:on the object = CounterTop (x=.., y=.., z=..))``."""
    fdef = REGISTRY.filter(spec.family, spec.key)
    value = spec.value
    if spec.args.get("receptacle"):
        value = f"{spec.args['receptacle']} as {value}"
    if anchor_xyz is not None:
        value = f"{value} {coords_text(anchor_xyz)}"
    if spec.family == "moment":
        return f"(when = {fdef.label.replace('_', ' ')} {value})"
    return f"({spec.family}:{fdef.label} = {value})"


def caption(ctx: EpisodeContext, entity: int) -> str:
    """A short description from the static attributes: ``green plastic Cup``."""
    attrs = ctx.episode.entities.attributes[entity]
    words = [attrs[k] for k in ("color", "material") if attrs.get(k)]
    return " ".join([*words, str(ctx.types[entity])])


def to_answer_group(ctx: EpisodeContext, program: Program, g: RawGroup) -> AnswerGroup:
    anchor = ctx.anchor_position(g.anchor) if g.anchor >= 0 else None
    if anchor is not None:
        predicate = filter_text(program.filters[g.filter_index], anchor)
    else:
        predicate = " AND ".join(filter_text(f) for f in program.filters)
    return AnswerGroup(predicate=predicate, anchor=anchor, result=result_items(ctx, g), value=g.value)


def result_items(ctx: EpisodeContext, g: RawGroup) -> tuple[ResultItem, ...]:
    """The group's entities where they are reported, as ResultItems."""
    return tuple(result_item(ctx, e, t) for e, t in zip(g.entities.tolist(), g.last_t.tolist()))


def result_item(ctx: EpisodeContext, entity: int, t: int) -> ResultItem:
    """One entity where it is reported at step ``t``, its position in metres rounded to the centimetre."""
    x, y, z = ctx.position[t, entity].tolist()
    instance_id = ctx.episode.entities.instance_id[entity]
    return ResultItem(
        instance_id, str(ctx.types[entity]), (round(x, 2), round(y, 2), round(z, 2)), caption(ctx, entity)
    )


def evaluate_context(ctx: EpisodeContext, program: Program, select: Select | None = None) -> list[AnswerGroup]:
    return [to_answer_group(ctx, program, g) for g in evaluate_raw(ctx, program, select)]


def evaluate(episode: Episode, program: Program) -> list[AnswerGroup]:
    """The structured answer of ``program`` on ``episode``: groups per grounded predicate value, anchor
    coordinates in the episode frame (None when the program names no ambiguous object)."""
    return evaluate_context(context_for(episode), program)
