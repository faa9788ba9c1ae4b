"""Questions that break a validity rule, built from a real episode's own content (for the tests of the
rules and of the checker on the shards). Each is planted only where the episode has what it needs, and
each states why it breaks its rule in a way the test can verify."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np

from eqagen.core import FilterSpec, Program, QuerySpec
from eqagen.predicates import REGISTRY
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.filters import AGENT, state_capable
from eqagen.predicates.queries import STATE_WORDS


@dataclass(frozen=True)
class Planted:
    reason: str
    program: Program
    anchor: tuple[float, float, float] | None = None


def property_specs(ctx: EpisodeContext) -> list[FilterSpec]:
    """The world family's satisfiable property filters."""
    fdefs = [REGISTRY.filter("property", k) for k in REGISTRY.filter_keys(ctx.support, "property")]
    return [s for fd in fdefs for s in fd.values(ctx, fd.key)]


def instances_with(ctx: EpisodeContext, spec: FilterSpec) -> tuple[str, np.ndarray, np.ndarray]:
    """For a property spec held by some observed entity: that entity's type, the type's observed instances
    and which of them hold the spec."""
    holds = ctx.attribute(spec.key) == spec.value
    entity = int(np.flatnonzero(holds & ctx.observed)[0])
    kind = str(ctx.types[entity])
    instances = ctx.instances(kind)
    return kind, instances, holds[instances]


def duplicated_filter(ctx: EpisodeContext) -> Iterator[Planted]:
    """The same filter twice: dropping either copy changes nothing."""
    for spec in property_specs(ctx)[:1]:
        yield Planted("ineffective_filter", Program((spec, spec), QuerySpec("listObjects")))


def listing_of_the_named_type(ctx: EpisodeContext) -> Iterator[Planted]:
    """Which <value> <type>s did you see? The answer only repeats the subject's type (trivial); where every
    instance of the type holds the value, the filter also changes nothing (same as unfiltered)."""
    trivial = same = False
    for spec in property_specs(ctx):
        kind, _, holds = instances_with(ctx, spec)
        program = Program((spec,), QuerySpec("listObjects", "", {"subject": kind}))
        if not trivial:
            trivial = True
            yield Planted("trivial_answer", program)
        if holds.all() and not same:
            same = True
            yield Planted("same_as_unfiltered", program)


def side_changes(ctx: EpisodeContext, window: np.ndarray) -> tuple[str, int] | None:
    """A side key and an entity that, within the steps of ``window``, the agent saw on that side of it at
    one step and on the other side at another (by the filters' own masks), or None."""
    left, right = (REGISTRY.filter("position", k).fn(ctx, FilterSpec("position", k, AGENT)) for k in ("left", "right"))
    both = (left & window[:, None]).any(axis=0) & (right & window[:, None]).any(axis=0)
    hits = np.flatnonzero(both)
    return ("left", int(hits[0])) if hits.size else None


def indefinite_sides(ctx: EpisodeContext) -> Iterator[Planted]:
    """Which objects to your left did you see? About an object also seen to your right; and the same with a
    moment named, where it was on both sides after that moment."""
    if side_changes(ctx, np.ones(ctx.T, dtype=bool)):
        yield Planted("indefinite_moment", Program((FilterSpec("position", "left", AGENT),), QuerySpec("listObjects")))
    fdef = REGISTRY.filter("moment", "after")
    for moment in fdef.values(ctx, "after"):
        window = fdef.fn(ctx, moment)[:, 0]
        if side_changes(ctx, window):
            filters = (FilterSpec("position", "left", AGENT), moment)
            yield Planted("indefinite_moment", Program(filters, QuerySpec("listObjects")))
            return


def state_after_its_own_event(ctx: EpisodeContext) -> Iterator[Planted]:
    """Was the fridge open or closed after you opened the fridge? The fridge seen after it."""
    if not ctx.support.allows_query(QuerySpec("getState", "open")):
        return
    for ev in ctx.events:
        flags = [f for f in STATE_WORDS if f in ctx.episode.timeline.initial and state_capable(ctx, f)[ev.entity]]
        if flags and ctx.data[ev.t :, ev.entity].any():
            moment = FilterSpec("moment", "after", ev.name, {"event": ev.index})
            query = QuerySpec("getState", flags[0], {"subject": ev.type})
            yield Planted("answer_given_by_event", Program((moment,), query))
            return


def use_of_a_type(ctx: EpisodeContext) -> Iterator[Planted]:
    """What was the <color> <type> used for? One utility per type in the object catalogue."""
    if not ctx.support.allows_query(QuerySpec("getProperty", "utility")):
        return
    for spec in property_specs(ctx):
        if spec.key != "utility":
            kind, _, _ = instances_with(ctx, spec)
            yield Planted("constant_property", Program((spec,), QuerySpec("getProperty", "utility", {"subject": kind})))
            return


PLANTERS = (duplicated_filter, listing_of_the_named_type, indefinite_sides, state_after_its_own_event, use_of_a_type)


def planted_questions(ctx: EpisodeContext) -> list[Planted]:
    return [p for planter in PLANTERS for p in planter(ctx)]
