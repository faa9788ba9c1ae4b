"""The built-in filter families: property, location, state, position (situated) and moment.

Each filter is a pure function of the episode context and a FilterSpec returning a ``[T, N]`` bool mask
or an :class:`Anchored` stack (one mask per instance of the object it names). Each family also has a
``values`` function: the specs satisfiable somewhere in the episode, which the sampler indexes so that it
proposes only filters that can hold.

Thresholds come from ``ctx.params`` (declared per world family), with the defaults below.
"""

from __future__ import annotations

from collections.abc import Iterator

import numpy as np

from eqagen.core import FilterSpec
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.registry import Anchored, CellRow, register_filter

DEFAULTS = {
    "above_margin": 0.05,  # m: footprints this far apart still count as one over the other
    "above_max_gap": 1.0,  # m: the most open air between two boxes that a person still calls above/under
    "side_margin": 0.15,  # m: egocentric offset that counts as left/right/in front/behind of an object
    "near_radius": 2.0,  # m: how far apart two objects may be for a situated relation between them
    "agent_side": 0.3,  # m: |x| beyond which a thing is to your left/right; within it, in front of you
    "moment_window": 3,  # steps: "right before/after" an event
    "between_span": 3,  # events: "between E1 and E2" pairs E1 with the next few events only
    "state_capability": {
        "open": "openable",
        "toggled": "toggleable",
        "broken": "breakable",
        "sliced": "sliceable",
        "filled": "fillable",
    },
    "enclosing_capability": "enclosing",  # receptacles whose contents are "inside" rather than "on"
    "inside_types": (),
}


def param(ctx: EpisodeContext, name: str):
    return ctx.params.get(name, DEFAULTS[name])


def _broadcast(col: np.ndarray, ctx: EpisodeContext) -> np.ndarray:
    return np.broadcast_to(col, (ctx.T, ctx.N))


def _specs(family: str, key: str, values) -> list[FilterSpec]:
    return [FilterSpec(family, key, str(v)) for v in sorted(set(values))]


# -- property --------------------------------------------------------------------------------------
def property_values(ctx: EpisodeContext, key: str) -> list[FilterSpec]:
    col = ctx.attribute(key)[ctx.observed]
    return _specs("property", key, (v for v in col if v))


def attribute_is(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray:
    """Entities whose static attribute ``key`` equals ``value`` (at every step)."""
    return _broadcast(ctx.attribute(spec.key) == spec.value, ctx)


register_filter("property", ("color", "material"), property_values, slot="pre")(attribute_is)
register_filter("property", ("utility",), property_values, slot="post")(attribute_is)


# -- state -------------------------------------------------------------------------------------------
def state_capable(ctx: EpisodeContext, key: str) -> np.ndarray:
    """Bool ``[N]``: entities that can be in state ``key`` at all (a cup is neither open nor closed)."""
    cap = param(ctx, "state_capability").get(key)
    return ctx.capable(cap) if cap else np.ones(ctx.N, dtype=bool)


def state_values(ctx: EpisodeContext, key: str) -> list[FilterSpec]:
    seen = ctx.data & state_capable(ctx, key)[None, :]
    flag = ctx.flag(key)
    vals = [v for v, m in (("true", flag), ("false", ~flag)) if (seen & m).any()]
    return _specs("state", key, vals)


@register_filter(
    "state",
    ("open", "toggled", "broken", "sliced", "filled"),
    state_values,
    slot="pre",
)
def state_is(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray:
    """Entities in (value "true") or out of (value "false") state ``key`` at each step."""
    flag = ctx.flag(spec.key)
    held = flag if spec.value == "true" else ~flag
    return held & state_capable(ctx, spec.key)[None, :]


# -- location -----------------------------------------------------------------------------------------
def encloses(ctx: EpisodeContext) -> np.ndarray:
    """Bool ``[N]``: receptacles whose contents are "inside" (fridge, drawer) rather than "on" them."""
    inside_types = set(param(ctx, "inside_types"))  # a set test per entity: np.isin sorts object arrays
    by_type = np.array([t in inside_types for t in ctx.types.tolist()], dtype=bool)
    return ctx.capable(param(ctx, "enclosing_capability")) | by_type


def on_receptacle(ctx: EpisodeContext, spec: FilterSpec) -> Anchored:
    """``on``/``inside`` <type>: held by that receptacle instance; one group per observed instance."""
    anchors = ctx.instances(spec.value)
    return Anchored(anchors, ctx.parent[None, :, :] == anchors[:, None, None])


def same_receptacle(ctx: EpisodeContext, spec: FilterSpec) -> Anchored:
    """``on_same``/``inside_same`` <receptacle type> as <value>: held by the receptacle that holds the
    anchor (an observed instance of ``value``) at that step, while the agent saw the anchor."""
    anchors = ctx.instances(spec.value)
    ap = ctx.parent[:, anchors].T  # [G, T] the anchor's receptacle
    ok = (ap >= 0) & ctx.data[:, anchors].T
    ok &= ctx.of_type(spec.args["receptacle"])[np.maximum(ap, 0)]
    masks = (ctx.parent[None, :, :] == ap[:, :, None]) & ok[:, :, None]
    masks[np.arange(len(anchors)), :, anchors] = False
    return Anchored(anchors, masks)


def vertical_relation(ctx: EpisodeContext, key: str, t: np.ndarray, e: np.ndarray, a: np.ndarray) -> np.ndarray:
    """Whether entity e is ``above`` (``under``) entity a at step t (index arrays, broadcast together): their
    boxes' footprints overlap in the x-z plane (to ``above_margin``), e's bottom is higher than a's top (e's
    top lower than a's bottom) by at most ``above_max_gap``, they are different units (neither rests in or on
    the other or on the furniture the other belongs to, nor is part of it: ``EpisodeContext.unit``), and neither
    is a part enclosed by its furniture (``EpisodeContext.enclosed``: a cabinet under a counter)."""
    pe, pa = ctx.position[t, e], ctx.position[t, a]
    reach = ctx.half_width[e] + ctx.half_width[a] + param(ctx, "above_margin")
    over = (np.abs(pe[..., 0] - pa[..., 0]) <= reach) & (np.abs(pe[..., 2] - pa[..., 2]) <= reach)
    if key == "above":
        gap = (pe[..., 1] + ctx.box_bottom[e]) - (pa[..., 1] + ctx.box_top[a])
    else:
        gap = (pa[..., 1] + ctx.box_bottom[a]) - (pe[..., 1] + ctx.box_top[e])
    apart = (ctx.unit[t, e] != ctx.unit[t, a]) & ~ctx.enclosed[e] & ~ctx.enclosed[a]
    return over & (gap > 0) & (gap <= param(ctx, "above_max_gap")) & apart


def above_under(ctx: EpisodeContext, spec: FilterSpec) -> Anchored:
    """``above``/``under`` <type>: ``vertical_relation`` against each instance, at every step and entity, at
    the steps the instance stands where the question names it (``EpisodeContext.where_named``: "the objects
    under the pencil at (x, y, z)" are under it there, not where the agent later carried it)."""
    anchors = ctx.instances(spec.value)
    t, e, a = np.arange(ctx.T)[None, :, None], np.arange(ctx.N)[None, None, :], anchors[:, None, None]
    return Anchored(anchors, vertical_relation(ctx, spec.key, t, e, a) & ctx.where_named(anchors)[:, :, None])


def vertical_cells(ctx: EpisodeContext, key: str, specs: list[FilterSpec]) -> list[CellRow]:
    """``cell_row`` of ``above_under`` for many specs of one key (the index's accelerator): the relation is read
    at the cells only, against each spec's anchors, rather than at every step and entity."""
    out: list[CellRow] = []
    t, e = ctx.cell_t[:, None], ctx.cell_e[:, None]
    for spec in specs:
        anchors = ctx.instances(spec.value)
        held = vertical_relation(ctx, key, t, e, anchors[None, :]) & ctx.where_named(anchors).T[ctx.cell_t]
        out.append((anchors, held.any(axis=1)))
    return out


def vertical_values(ctx: EpisodeContext, key: str) -> list[FilterSpec]:
    """``above``/``under`` specs: the types of the observed entities that some observation is above (under),
    by ``above_under``'s rule at the observations only."""
    anchors = np.flatnonzero(ctx.observed)
    t, e = ctx.obs_t, ctx.obs_e
    held = vertical_relation(ctx, key, t[:, None], e[:, None], anchors[None, :]) & ctx.where_named(anchors).T[t]
    return _specs("location", key, ctx.types[anchors[held.any(axis=0)]].tolist())


LOCATION_FNS = {
    "on": on_receptacle,
    "inside": on_receptacle,
    "on_same": same_receptacle,
    "inside_same": same_receptacle,
    "above": above_under,
    "under": above_under,
}
VERTICAL_KEYS = ("above", "under")


def held_observations(ctx: EpisodeContext) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The observations of held entities: steps, entities, holders, and whether each holder encloses what it
    holds."""
    ts, es = ctx.obs_t, ctx.obs_e
    ps = ctx.parent[ts, es]
    held = ps >= 0
    ts, es, ps = ts[held], es[held], ps[held]
    return ts, es, ps, encloses(ctx)[ps]


def location_values(ctx: EpisodeContext, key: str) -> list[FilterSpec]:
    """Location specs that hold for some observation, computed over all observations at once."""
    if key in ("above", "under"):
        return vertical_values(ctx, key)
    ts, es, ps, enclosing = held_observations(ctx)
    if key in ("on", "inside"):
        ok = ctx.observed[ps] & (enclosing == (key == "inside"))
        return _specs("location", key, ctx.types[ps[ok]].tolist())
    ok = enclosing == (key == "inside_same")
    ts, es, ps = ts[ok], es[ok], ps[ok]
    slot = ts * ctx.N + ps
    _, inverse, counts = np.unique(slot, return_inverse=True, return_counts=True)
    shared = counts[inverse] >= 2  # another seen entity shares the receptacle at that step
    pairs = set(zip(ctx.types[es[shared]].tolist(), ctx.types[ps[shared]].tolist()))
    return [FilterSpec("location", key, a, {"receptacle": r}) for a, r in sorted(pairs)]


def location_filter(ctx: EpisodeContext, spec: FilterSpec) -> Anchored:
    return LOCATION_FNS[spec.key](ctx, spec)


LOCATION_LABELS = {
    "on": "on the object",
    "inside": "inside the object",
    "on_same": "on the same object as",
    "inside_same": "inside the same object as",
    "above": "above the object",
    "under": "under the object",
}
register_filter(
    "location", tuple(k for k in LOCATION_FNS if k not in VERTICAL_KEYS), location_values, labels=LOCATION_LABELS
)(location_filter)
register_filter("location", VERTICAL_KEYS, location_values, labels=LOCATION_LABELS, cells=vertical_cells)(
    location_filter
)


# -- position (situated) ------------------------------------------------------------------------------
POSITION_KEYS = ("front", "behind", "left", "right")
OPPOSITE = {"left": "right", "right": "left", "front": "behind", "behind": "front"}
AGENT = "you"


def relative_holds(ctx: EpisodeContext, key: str, pairs: np.ndarray | slice) -> np.ndarray:
    """Bool per co-visible pair (indices into ``ctx.pair_t, pair_e, pair_a``, or a slice of them): at step t, e
    is within ``near_radius`` of a horizontally (x-z plane), and left of / right of / in front of (nearer along
    the view) / behind (farther along it) a in the agent's view at t by more than ``side_margin``."""
    d = ctx.pair_offset[pairs]
    near = d[:, 0] ** 2 + d[:, 2] ** 2 <= param(ctx, "near_radius") ** 2
    side = {"left": lambda: -d[:, 0], "right": lambda: d[:, 0], "front": lambda: -d[:, 2], "behind": lambda: d[:, 2]}
    return near & (side[key]() > param(ctx, "side_margin"))


def relative_relations(ctx: EpisodeContext, anchors: np.ndarray, key: str) -> np.ndarray:
    """``[G, T, N]``: relation ``key`` against each of ``anchors`` (sorted entity indices), step by step."""
    pairs = np.flatnonzero(entity_mask(ctx, anchors)[ctx.pair_a])
    return pair_stack(ctx, anchors, pairs[relative_holds(ctx, key, pairs)])


def entity_mask(ctx: EpisodeContext, entities: np.ndarray) -> np.ndarray:
    out = np.zeros(ctx.N, dtype=bool)
    out[entities] = True
    return out


def pair_stack(ctx: EpisodeContext, anchors: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """``[G, T, N]``: each of ``pairs`` (co-visible pairs whose anchor is among ``anchors``) set at its
    anchor's group, step and entity."""
    stack = np.zeros((anchors.size, ctx.T, ctx.N), dtype=bool)
    stack[np.searchsorted(anchors, ctx.pair_a[pairs]), ctx.pair_t[pairs], ctx.pair_e[pairs]] = True
    return stack


def holding_pairs(ctx: EpisodeContext, key: str) -> np.ndarray:
    """The co-visible pairs (ascending indices) in relation ``key``: ``relative_holds`` over every pair."""
    return np.flatnonzero(relative_holds(ctx, key, slice(None)))  # a slice reads the offsets without copying them


def instances_of(ctx: EpisodeContext, codes: np.ndarray) -> list[np.ndarray]:
    """``ctx.instances`` of the types of many ``codes`` (``type_codes_of``) at once."""
    observed = np.flatnonzero(ctx.observed)
    order = np.argsort(ctx.type_code[observed], kind="stable")
    bounds = np.searchsorted(ctx.type_code[observed][order], [codes, codes + 1])
    entities = observed[order]
    return [entities[a:b] if code >= 0 else entities[:0] for code, a, b in zip(codes.tolist(), *bounds.tolist())]


def type_codes_of(ctx: EpisodeContext, type_names: list[str]) -> np.ndarray:
    """The index of each of ``type_names`` among the episode's type names; -1 where no entity has it."""
    names, wanted = ctx.type_names, np.array(type_names, dtype=str)
    if not names.size or not wanted.size:
        return np.full(wanted.size, -1, dtype=np.int64)
    found = np.minimum(np.searchsorted(names, wanted), names.size - 1)
    return np.where(names[found] == wanted, found, -1)


def agent_relation(ctx: EpisodeContext, key: str) -> np.ndarray:
    """``[T, N]``: e is seen at that step and to your left/right (egocentric x beyond ``agent_side``) or in
    front of you (ahead, within ``agent_side`` of your line of sight)."""
    x, z = ctx.obs_ego[:, 0], ctx.obs_ego[:, 2]  # at the observations only: the relation is read nowhere else
    side = param(ctx, "agent_side")
    rel = {"left": lambda: x < -side, "right": lambda: x > side, "front": lambda: (np.abs(x) <= side) & (z > 0)}
    out = np.zeros((ctx.T, ctx.N), dtype=bool)
    out[ctx.obs_t, ctx.obs_e] = rel[key]()
    return out


def position_filter(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray | Anchored:
    if spec.value == AGENT:
        return agent_relation(ctx, spec.key)
    anchors = ctx.instances(spec.value)
    return Anchored(anchors, relative_relations(ctx, anchors, spec.key))


def position_cells(ctx: EpisodeContext, key: str, specs: list[FilterSpec]) -> list[CellRow]:
    """``cell_row`` of ``position_filter`` for many specs of one key (the index's accelerator): ``relative_holds``
    is read once over every co-visible pair, and each pair marks its (step, entity) cell in the row of its
    anchor's type (the anchors of a spec are the observed instances of its type, and a pair's anchor is seen)."""
    held = holding_pairs(ctx, key)
    by_type = np.zeros((ctx.type_names.size + 1, ctx.cell_t.size), dtype=bool)  # the last row: no such type
    by_type[ctx.type_code[ctx.pair_a[held]], ctx.cell_index(ctx.pair_t[held], ctx.pair_e[held])] = True
    codes = type_codes_of(ctx, [spec.value for spec in specs])
    you = ctx.at_cells(agent_relation(ctx, key)) if any(spec.value == AGENT for spec in specs) else None
    return [
        (None, you) if spec.value == AGENT else (anchors, row)
        for spec, row, anchors in zip(specs, by_type[codes], instances_of(ctx, codes))
    ]


def position_values(ctx: EpisodeContext, key: str) -> list[FilterSpec]:
    out = [AGENT] if key != "behind" and agent_relation(ctx, key).any() else []
    out.extend(ctx.types[ctx.pair_a[holding_pairs(ctx, key)]].tolist())
    return _specs("position", key, out)


register_filter(
    "position",
    POSITION_KEYS,
    position_values,
    slot="post",
    labels={"front": "in front of", "behind": "behind", "left": "left of", "right": "right of"},
    cells=position_cells,
)(position_filter)


# -- moment (temporal) --------------------------------------------------------------------------------
MOMENT_KEYS = ("before", "after", "right_before", "right_after", "between")


def moment_window(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray:
    """Bool ``[T]``: the steps the moment filter keeps. Step t holds the state after action t, so the
    step of an event already counts as after it."""
    t = np.arange(ctx.T)
    a, b = moment_bounds(ctx, spec)
    return (t >= a) & (t < b)


@register_filter(
    "moment",
    MOMENT_KEYS,
    lambda ctx, key: list(moment_specs(ctx, key)),
    slot="when",
)
def moment_filter(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray:
    return _broadcast(moment_window(ctx, spec)[:, None], ctx)


def moment_bounds(ctx: EpisodeContext, spec: FilterSpec) -> tuple[int, int]:
    """``moment_window`` as the half-open step range ``[a, b)`` it keeps."""
    t1 = ctx.events[spec.args["event"]].t
    w = param(ctx, "moment_window")
    if spec.key == "between":
        return t1, ctx.events[spec.args["event2"]].t
    return {"before": (0, t1), "after": (t1, ctx.T), "right_before": (t1 - w, t1), "right_after": (t1, t1 + w)}[
        spec.key
    ]


# the args of a moment spec that name its events by their index in the episode (the only args of a built-in
# filter that hold for one episode alone: the value names the events, so another episode can find its own)
EVENT_ARGS = ("event", "event2")


def event_names(spec: FilterSpec) -> list[str]:
    """The canonical names of the events a moment spec's value names (``between``: two, comma-separated)."""
    return spec.value.split(", ") if spec.key == "between" else [spec.value]


def moment_spec_in(ctx: EpisodeContext, spec: FilterSpec) -> FilterSpec | None:
    """The same moment (the events of the same names) in the episode of ``ctx``, with that episode's event
    indices; None where it has no event of one of the names."""
    index = {ev.name: ev.index for ev in ctx.events}
    found = [index.get(name) for name in event_names(spec)]
    if None in found:
        return None
    return FilterSpec(spec.family, spec.key, spec.value, dict(zip(EVENT_ARGS, found)))


def moment_specs(ctx: EpisodeContext, key: str) -> Iterator[FilterSpec]:
    """Every event-named moment whose window holds at least one observation (counted with prefix sums of
    the steps with an observation, rather than one window mask per event)."""
    seen_before = np.concatenate([[0], np.cumsum(ctx.data.any(axis=1))]).tolist()  # observed steps before t

    def seen_in(spec: FilterSpec) -> bool:
        a, b = moment_bounds(ctx, spec)
        a, b = min(max(a, 0), ctx.T), min(max(b, 0), ctx.T)
        return b > a and seen_before[b] > seen_before[a]

    events = ctx.events
    for ev in events:
        if key != "between":
            spec = FilterSpec("moment", key, ev.name, {"event": ev.index})
            if seen_in(spec):
                yield spec
            continue
        for other in events[ev.index + 1 : ev.index + 1 + param(ctx, "between_span")]:
            if other.t > ev.t:
                spec = FilterSpec("moment", key, f"{ev.name}, {other.name}", {"event": ev.index, "event2": other.index})
                if seen_in(spec):
                    yield spec
