"""The built-in queries: listObjects, count (objects; times an event happened), getState, getProperty,
getLocation.

A query aggregates one group's ``[T, N]`` mask (filters AND subject AND what the query applies to, and
AND DATA for queries over observations) into an :class:`Outcome`: the entities it answers with and the
answer value, always a string. The subject (``query.args["subject"]``, an entity type; absent: any
object) is applied by the evaluator through ``subject_mask``.
"""

from __future__ import annotations

import numpy as np

from eqagen.core import QuerySpec
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.filters import state_capable
from eqagen.predicates.registry import AppliesFn, Outcome, QueryArgsFn, register_query

STATE_WORDS = {
    "open": ("open", "closed"),
    "toggled": ("on", "off"),
    "broken": ("broken", "intact"),
    "sliced": ("sliced", "whole"),
    "filled": ("filled with liquid", "empty"),
}


def state_word(flag: str, value: bool) -> str:
    pos, neg = STATE_WORDS.get(flag, (flag, f"not {flag}"))
    return pos if value else neg


def seen_entities(mask: np.ndarray) -> np.ndarray:
    return np.logical_or.reduce(mask, axis=0).nonzero()[0]


def exists_outcome(ctx: EpisodeContext, query: QuerySpec, mask: np.ndarray) -> Outcome | None:
    """An existence query ("are there pigs?"): ``yes`` with the entities of the asked type in the
    selection, else ``no`` with what the selection holds. World families register it under their name."""
    subject = query.args.get("subject")
    if subject and subject != query.arg:
        return None
    ents = seen_entities(mask)
    if ents.size == 0:
        return None
    hits = ents[ctx.types[ents] == query.arg]
    return Outcome(hits, "yes") if hits.size else Outcome(ents, "no")


def exists_seeds(ctx: EpisodeContext, query: QuerySpec) -> np.ndarray:
    """Where an existence question is built around: a sighting of the kind it asks about, so that its filters
    describe where such a thing was (the question then asks, in every house, whether one is there)."""
    return ctx.data & (ctx.types == query.arg)[None, :]


def register_existence_query(name: str, args: QueryArgsFn, applies: AppliesFn) -> None:
    """A world family's existence query (``name``: "are there pigs in the southwest?"; ``args``: the kinds it
    may ask about; ``applies``: the entities among which it looks): answered by :func:`exists_outcome`, built
    around a sighting of its kind (:func:`exists_seeds`), and asked by the ask stage where the kind was seen
    and where it was not (``asks_presence``)."""
    register_query(
        name,
        args=args,
        applies=applies,
        answer_type="yes/no",
        asks_presence=True,
        seeds=exists_seeds,
        categories=("object recognition", "existence"),
    )(exists_outcome)


def last_step(mask: np.ndarray, entities: np.ndarray) -> np.ndarray:
    """For each entity, the last step its mask holds (the last time the agent saw it so)."""
    return mask.shape[0] - 1 - mask[::-1, entities].argmax(axis=0)


def join_values(values) -> str:
    """Distinct values as text, sorted and comma-joined: the answer of an aggregate over several entities."""
    return ", ".join(sorted({str(v) for v in values}))


def _everything(ctx: EpisodeContext, _q: QuerySpec) -> np.ndarray:
    return np.ones(ctx.N, dtype=bool)


# -- listObjects ----------------------------------------------------------------------------------------
def _list_outcome(ctx: EpisodeContext, ents: np.ndarray) -> Outcome | None:
    return Outcome(ents, ", ".join(sorted(ctx.types[ents].tolist()))) if ents.size else None


@register_query(
    "listObjects",
    args=lambda ctx: [QuerySpec("listObjects")],
    applies=_everything,
    answer_type="objects",
    categories=("object recognition", "object"),
)
def list_objects(ctx: EpisodeContext, query: QuerySpec, mask: np.ndarray) -> Outcome | None:
    """The types of the entities seen, sorted, with repeats ("Apple, Cup, Cup")."""
    return _list_outcome(ctx, seen_entities(mask))


# -- count ------------------------------------------------------------------------------------------------
def count_args(ctx: EpisodeContext) -> list[QuerySpec]:
    kinds = sorted({e.kind for e in ctx.events})
    return [QuerySpec("count", "objects")] + [QuerySpec("count", "events", {"kind": k}) for k in kinds]


def _events_outcome(t: np.ndarray, ent: np.ndarray, hit: np.ndarray) -> Outcome | None:
    if not hit.any():
        return None
    ents = np.unique(ent[hit])
    last = np.array([t[hit & (ent == e)].max() for e in ents.tolist()], dtype=np.int64)  # its last counted event
    return Outcome(ents, str(int(hit.sum())), last)


def _no_events(query: QuerySpec) -> str | None:
    """Counting events, the agent may never have done it: "0" (kept only where the filters make the difference:
    where dropping some filter leaves the count at 0, the validity rules reject it). Counting objects seen: no
    answer."""
    return "0" if query.arg == "events" else None


@register_query(
    "count",
    args=count_args,
    applies=_everything,
    answer_type="number",
    categories=("spatial understanding", "counting"),
    observed=False,
    none_value=_no_events,
)
def count(ctx: EpisodeContext, query: QuerySpec, mask: np.ndarray) -> Outcome | None:
    """``objects``: distinct entities seen; ``events``: events of ``kind`` whose entity passes the mask at
    the event's step (what the agent did, seen or not)."""
    if query.arg == "objects":
        seen = mask & ctx.data
        ents = seen_entities(seen)
        return Outcome(ents, str(ents.size), last_step(seen, ents)) if ents.size else None
    t, ent = event_arrays(ctx, query.args["kind"])
    return _events_outcome(t, ent, mask[t, ent])


def event_arrays(ctx: EpisodeContext, kind: str) -> tuple[np.ndarray, np.ndarray]:
    """Steps and entities of the events of one kind."""
    evs = [e for e in ctx.events if e.kind == kind]
    return np.array([e.t for e in evs], dtype=np.int64), np.array([e.entity for e in evs], dtype=np.int64)


# -- getState ---------------------------------------------------------------------------------------------
def state_args(ctx: EpisodeContext) -> list[QuerySpec]:
    flags = [f for f in STATE_WORDS if f in ctx.episode.timeline.initial]
    return [QuerySpec("getState", f) for f in flags if (state_capable(ctx, f) & ctx.observed).any()]


def _state_outcome(ctx: EpisodeContext, query: QuerySpec, ents: np.ndarray, last: np.ndarray) -> Outcome:
    flags = ctx.flag(query.arg)[last, ents]
    return Outcome(ents, join_values([state_word(query.arg, bool(v)) for v in flags]), last)


@register_query(
    "getState",
    args=state_args,
    applies=lambda ctx, q: state_capable(ctx, q.arg),
    answer_type="state",
    categories=("object state recognition", "state"),
    max_targets=True,
    value_codes=lambda ctx, q: ctx.flag(q.arg).astype(np.int64),
)
def get_state(ctx: EpisodeContext, query: QuerySpec, mask: np.ndarray) -> Outcome | None:
    """The state of each entity the last time the agent saw it within the selection."""
    ents = seen_entities(mask)
    return _state_outcome(ctx, query, ents, last_step(mask, ents)) if ents.size else None


# -- getProperty ------------------------------------------------------------------------------------------
def property_args(ctx: EpisodeContext) -> list[QuerySpec]:
    names = sorted({k for i in np.flatnonzero(ctx.observed) for k in ctx.episode.entities.attributes[i]})
    return [QuerySpec("getProperty", n) for n in names]


def property_categories(query: QuerySpec) -> tuple[str, str]:
    if query.arg == "utility":
        return ("functional reasoning", "knowledge")
    return ("attribute recognition", "attribute")


def _property_outcome(ctx: EpisodeContext, query: QuerySpec, ents: np.ndarray) -> Outcome | None:
    return Outcome(ents, join_values([str(v) for v in ctx.attribute(query.arg)[ents]])) if ents.size else None


@register_query(
    "getProperty",
    args=property_args,
    applies=lambda ctx, q: np.array([v is not None for v in ctx.attribute(q.arg)], dtype=bool),
    answer_type=lambda q: q.arg,
    categories=property_categories,
    max_targets=True,
    value_codes=lambda ctx, q: attribute_codes(ctx, q.arg),
)
def get_property(ctx: EpisodeContext, query: QuerySpec, mask: np.ndarray) -> Outcome | None:
    return _property_outcome(ctx, query, seen_entities(mask))


def attribute_codes(ctx: EpisodeContext, name: str) -> np.ndarray:
    """Int ``[T, N]``: a code of each entity's attribute value (static: the same at every step)."""
    _, codes = np.unique(ctx.attribute(name).astype(str), return_inverse=True)
    return np.broadcast_to(codes.ravel(), (ctx.T, ctx.N))


def receptacle_type_codes(ctx: EpisodeContext) -> np.ndarray:
    """Int ``[T, N]``: a code of the type of each entity's receptacle (-1: none)."""
    padded = np.append(ctx.type_code, -1)  # parent -1 indexes the trailing -1
    return padded[ctx.parent]


# -- getLocation ------------------------------------------------------------------------------------------
def _location_outcome(ctx: EpisodeContext, ents: np.ndarray, last: np.ndarray) -> Outcome | None:
    parents = ctx.parent[last, ents]
    held = parents >= 0
    if not held.any():
        return None
    return Outcome(ents[held], join_values(ctx.types[parents[held]].tolist()), last[held])


@register_query(
    "getLocation",
    args=lambda ctx: [QuerySpec("getLocation")] if (ctx.parent[ctx.data] >= 0).any() else [],
    applies=_everything,
    answer_type="location",
    categories=("object localization", "location"),
    max_targets=True,
    value_codes=lambda ctx, q: receptacle_type_codes(ctx),
    seeds=lambda ctx, q: ctx.data & (ctx.parent >= 0),
    reports=lambda ctx, q: ctx.parent >= 0,
)
def get_location(ctx: EpisodeContext, query: QuerySpec, mask: np.ndarray) -> Outcome | None:
    """The receptacle type holding each entity the last time the agent saw it within the selection;
    entities held by nothing then are left out."""
    ents = seen_entities(mask)
    return _location_outcome(ctx, ents, last_step(mask, ents)) if ents.size else None
