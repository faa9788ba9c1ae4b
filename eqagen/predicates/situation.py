"""The situational filter family: a spatial configuration the agent saw, which selects the steps it saw it at.

TAG-EQA's "where = a chair is in front of a dining table" or "where = two green cups are in front of you" says
where the agent stood, not where an answer object was: it selects *moments*, as a moment filter does, and
the query then runs on what was seen at those steps ("When a chair was in front of the dining table (as you
saw it), which objects did you see?"). TAG-EQA counts these as "situational spatial", apart from the
"relative spatial" location predicates, so they are their own family here (docs/questions.md, "Situational
filters: configurations that select steps").

A spec is ``FilterSpec("situation", key, ground, {"figure": type})``: some object of type ``figure`` stood
``key`` (left / right / in front of / behind) of ``ground`` (an object type, or ``you``) as the agent saw
them at a step. The relation is the position filter's own step-by-step definition
(:func:`eqagen.predicates.filters.relative_relations`, :func:`~eqagen.predicates.filters.agent_relation`),
so each relation has one definition; the situational filter only reads *at which steps* it held.
"""

from __future__ import annotations

import numpy as np

from eqagen.core import FilterSpec
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.filters import (
    AGENT,
    POSITION_KEYS,
    agent_relation,
    holding_pairs,
    instances_of,
    relative_holds,
    type_codes_of,
)
from eqagen.predicates.registry import Anchored, CellRow, register_filter
from eqagen.predicates.worlds import extend_world_family

FAMILY = "situation"
FIGURE = "figure"  # the arg naming the object type seen in the relation ("a chair" in front of the table)


def figure_of(spec: FilterSpec) -> str:
    return spec.args[FIGURE]


def situation_steps(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray | Anchored:
    """The steps at which the agent saw an object of type ``figure`` stand ``key`` of the ``ground`` (one of
    its instances: one group per instance, as a position filter has), over every entity: the filter keeps
    whatever is seen at those steps, as a moment window does. The relation is the position filter's, read
    at each step (``agent_relation``; ``relative_holds`` on the co-visible pairs)."""
    figure = ctx.of_type(figure_of(spec))
    if spec.value == AGENT:
        steps = (agent_relation(ctx, spec.key) & figure[None, :]).any(axis=1)  # [T]
        return np.repeat(steps[:, None], ctx.N, axis=1)
    ground = ctx.of_type(spec.value) & ctx.observed
    anchors = np.flatnonzero(ground)  # ctx.instances(spec.value)
    pairs = np.flatnonzero(figure[ctx.pair_e] & ground[ctx.pair_a])
    return Anchored(anchors, step_stack(ctx, anchors, pairs[relative_holds(ctx, spec.key, pairs)]))


def step_stack(ctx: EpisodeContext, anchors: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """``[G, T, N]``: the whole step of each of ``pairs`` (whose ground is among ``anchors``), at its ground's
    group."""
    masks = np.zeros((anchors.size, ctx.T, ctx.N), dtype=bool)
    masks[np.searchsorted(anchors, ctx.pair_a[pairs]), ctx.pair_t[pairs], :] = True
    return masks


def situation_cells(ctx: EpisodeContext, key: str, specs: list[FilterSpec]) -> list[CellRow]:
    """``cell_row`` of ``situation_steps`` for many specs of one key (the index's accelerator): the relation is
    read once, against you for every observation and between objects for every co-visible pair, each spec's
    steps are marked by its (figure type, ground type), and a spec keeps every cell of its steps."""
    n_types = ctx.type_names.size
    figures = type_codes_of(ctx, [figure_of(spec) for spec in specs])
    you = np.array([spec.value == AGENT for spec in specs], dtype=bool)
    steps = np.zeros((len(specs), ctx.T), dtype=bool)
    if you.any():  # [T, types + 1]: an object of the type stood ``key`` of you (the last column: no such type)
        one_hot = (ctx.type_code[:, None] == np.arange(n_types + 1)[None, :]).astype(np.int32)
        by_type = (agent_relation(ctx, key).astype(np.int32) @ one_hot) > 0
        steps[you] = by_type[:, figures[you]].T
    grounds = type_codes_of(ctx, [spec.value for spec in specs])
    named = ~you & (figures >= 0) & (grounds >= 0)
    if named.any():  # each pair in the relation marks its step for the specs of its (figure, ground) types
        codes, inverse = np.unique(figures[named] * n_types + grounds[named], return_inverse=True)
        held = holding_pairs(ctx, key)
        pair_codes = ctx.type_code[ctx.pair_e[held]] * n_types + ctx.type_code[ctx.pair_a[held]]
        at = np.minimum(np.searchsorted(codes, pair_codes), codes.size - 1)
        hit = codes[at] == pair_codes
        by_code = np.zeros((codes.size, ctx.T), dtype=bool)
        by_code[at[hit], ctx.pair_t[held][hit]] = True
        steps[named] = by_code[inverse.ravel()]
    rows, anchors = steps[:, ctx.cell_t], instances_of(ctx, grounds)
    return [(None if spec.value == AGENT else a, row) for spec, row, a in zip(specs, rows, anchors)]


# Parts of a larger piece of furniture: "a desk in front of the drawer" is read of the desk's own drawer, "a
# countertop in front of the cabinet" of the cabinet under it; such parts name no place of their own.
PART_TYPES = ("Drawer", "Cabinet", "StoveBurner", "StoveKnob", "SinkBasin", "BathtubBasin", "Faucet")


def landmarks(ctx: EpisodeContext) -> np.ndarray:
    """Bool ``[N]``: what a situation may be named by against another object: things the agent cannot pick
    up (furniture, appliances), which stay where they are, so "a chair in front of the dining table" names
    a place, but not the parts of a piece of furniture (the world family's ``situation_parts``); against you,
    any object ("while you had a cup in front of you")."""
    parts = set(ctx.params.get("situation_parts", PART_TYPES))
    return ~ctx.capable("pickupable") & np.array([t not in parts for t in ctx.types.tolist()], dtype=bool)


def situation_values(ctx: EpisodeContext, key: str) -> list[FilterSpec]:
    """Every (figure type, ground) the agent saw in relation ``key`` at some step: any object against you
    (never "behind you": it is never seen), and a landmark against a landmark of another type ("when a
    chair was left of the chair" names no place)."""
    seen: set[tuple[str, str]] = set()
    if key != "behind":
        seen |= {(t, AGENT) for t in ctx.types[agent_relation(ctx, key).any(axis=0)].tolist()}
    fixed = landmarks(ctx)
    pairs = np.flatnonzero(fixed[ctx.pair_e] & fixed[ctx.pair_a])
    pairs = pairs[relative_holds(ctx, key, pairs)]
    figures, grounds = ctx.types[ctx.pair_e[pairs]].tolist(), ctx.types[ctx.pair_a[pairs]].tolist()
    seen |= {(f, g) for f, g in zip(figures, grounds) if f != g}
    return [FilterSpec(FAMILY, key, ground, {FIGURE: figure}) for figure, ground in sorted(seen)]


register_filter(
    FAMILY,
    POSITION_KEYS,
    situation_values,
    slot="when",
    labels={"front": "in front of", "behind": "behind", "left": "left of", "right": "right of"},
    cells=situation_cells,
)(situation_steps)

extend_world_family("household", filters={FAMILY: None})
