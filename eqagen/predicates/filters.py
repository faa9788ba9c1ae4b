"""The built-in filter families: property, location, state, position (situated) and moment.

Each filter is a pure function of the episode context and a FilterSpec returning a ``[T, N]`` bool mask
or an :class:`Anchored` stack (one mask per instance of the object it names). Each family also has a
``values`` function: the specs satisfiable somewhere in the episode, which the sampler indexes so that it
proposes only filters that can hold.

Thresholds come from ``ctx.params`` (declared per world family), with the defaults below.
"""

from __future__ import annotations

from collections.abc import Iterator
from functools import lru_cache

import numpy as np

from eqagen.core import FilterSpec
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.registry import Anchored, KeyRows, register_filter

DEFAULTS = {
    "above_radius": 0.6,  # m: horizontal distance within which one thing is above/under another
    "above_min_dy": 0.05,  # m: vertical gap that counts as above/under
    "above_max_dy": 2.0,
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
    return [plain_spec(family, key, str(v)) for v in sorted(set(values))]


@lru_cache(maxsize=65536)
def plain_spec(family: str, key: str, value: str) -> FilterSpec:
    """A spec without args, one object per content for the process: the same values recur in every episode
    of a world family, and specs are immutable (nothing writes to their ``args``)."""
    return FilterSpec(family, key, value)


# -- property --------------------------------------------------------------------------------------
def property_values(ctx: EpisodeContext, key: str) -> list[FilterSpec]:
    col = ctx.attribute(key)[ctx.observed]
    return _specs("property", key, (v for v in col if v))


def attribute_is(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray:
    """Entities whose static attribute ``key`` equals ``value`` (at every step)."""
    return _broadcast(ctx.attribute(spec.key) == spec.value, ctx)


def attribute_rows_at_cells(ctx: EpisodeContext, key: str) -> KeyRows:
    """The sampler's shortcut: ``attribute_is`` at ``ctx.cells`` for every value, one comparison of codes."""
    specs = property_values(ctx, key)
    codes, by_value = attribute_codes_at_cells(ctx, key)
    wanted = np.array([by_value.get(s.value, -1) for s in specs], dtype=np.int64)
    return KeyRows.build(ctx, specs, codes[None, :] == wanted[:, None])


def attribute_codes_at_cells(ctx: EpisodeContext, key: str) -> tuple[np.ndarray, dict]:
    """Per cell of ``ctx.cells``: a code of its entity's attribute value, and the codes by value (memoised)."""

    def compute() -> tuple[np.ndarray, dict]:
        by_value: dict = {}
        codes = np.array([by_value.setdefault(v, len(by_value)) for v in ctx.attribute(key).tolist()], dtype=np.int64)
        return codes[ctx.cells[1]], by_value

    return ctx.memo(("attribute_codes_at_cells", key), compute)


register_filter("property", ("color", "material"), property_values, slot="pre", rows_at_cells=attribute_rows_at_cells)(
    attribute_is
)
register_filter("property", ("utility",), property_values, slot="post", rows_at_cells=attribute_rows_at_cells)(
    attribute_is
)


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


def state_rows_at_cells(ctx: EpisodeContext, key: str) -> KeyRows:
    """The sampler's shortcut: ``state_is`` at ``ctx.cells`` (both values of a key read one gather)."""
    specs = state_values(ctx, key)
    es = ctx.cells[1]
    flag, capable = ctx.at_cells(ctx.flag(key)), state_capable(ctx, key)[es]
    return KeyRows.build(ctx, specs, [(flag if s.value == "true" else ~flag) & capable for s in specs])


@register_filter(
    "state",
    ("open", "toggled", "broken", "sliced", "filled"),
    state_values,
    slot="pre",
    rows_at_cells=state_rows_at_cells,
)
def state_is(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray:
    """Entities in (value "true") or out of (value "false") state ``key`` at each step."""
    flag = ctx.flag(spec.key)
    held = flag if spec.value == "true" else ~flag
    return held & state_capable(ctx, spec.key)[None, :]


# -- location -----------------------------------------------------------------------------------------
def encloses(ctx: EpisodeContext) -> np.ndarray:
    """Bool ``[N]``: receptacles whose contents are "inside" (fridge, drawer) rather than "on" them."""

    def compute() -> np.ndarray:
        inside = ctx.capable(param(ctx, "enclosing_capability"))
        return inside | np.isin(ctx.types, list(param(ctx, "inside_types")))

    return ctx.memo(("encloses",), compute)


def _anchors(ctx: EpisodeContext, type_name: str) -> np.ndarray:
    return ctx.instances(type_name)


def on_receptacle(ctx: EpisodeContext, spec: FilterSpec) -> Anchored:
    """``on``/``inside`` <type>: held by that receptacle instance; one group per observed instance."""
    anchors = _anchors(ctx, spec.value)
    masks = ctx.parent[None, :, :] == anchors[:, None, None]
    return Anchored(anchors, masks)


def same_receptacle(ctx: EpisodeContext, spec: FilterSpec) -> Anchored:
    """``on_same``/``inside_same`` <receptacle type> as <value>: held by the receptacle that holds the
    anchor (an observed instance of ``value``) at that step, while the agent saw the anchor."""
    anchors = _anchors(ctx, spec.value)
    rec_type = spec.args["receptacle"]
    ap = ctx.parent[:, anchors].T  # [G, T] the anchor's receptacle
    ok = (ap >= 0) & ctx.data[:, anchors].T
    ok &= ctx.of_type(rec_type)[np.maximum(ap, 0)]
    masks = (ctx.parent[None, :, :] == ap[:, :, None]) & ok[:, :, None]
    masks[np.arange(len(anchors)), :, anchors] = False
    return Anchored(anchors, masks)


def same_receptacle_rows(ctx: EpisodeContext, spec: FilterSpec) -> tuple[np.ndarray, np.ndarray]:
    """``same_receptacle``'s anchors and masks at ``ctx.cells`` only (``[G, K]``), by the same rule."""
    ts, es = ctx.cells
    anchors = _anchors(ctx, spec.value)
    ap = ctx.parent[ts[None, :], anchors[:, None]]  # [G, K] the anchor's receptacle at the cell's step
    ok = (ap >= 0) & ctx.data[ts[None, :], anchors[:, None]] & ctx.of_type(spec.args["receptacle"])[np.maximum(ap, 0)]
    return anchors, (ctx.parent_at_cells()[None, :] == ap) & ok & (es[None, :] != anchors[:, None])


def receptacle_codes_at_cells(ctx: EpisodeContext) -> tuple[np.ndarray, dict[str, int]]:
    """Per cell of ``ctx.cells``: a code of the type of the observed receptacle holding the entity (-1: none,
    or one never seen), and the codes by type name (memoised)."""

    def compute() -> tuple[np.ndarray, dict[str, int]]:
        names, codes = ctx.type_codes()
        observed_codes = np.where(ctx.observed, codes, -1)
        return np.append(observed_codes, -1)[ctx.parent_at_cells()], {n: i for i, n in enumerate(names.tolist())}

    return ctx.memo(("receptacle_codes_at_cells",), compute)


def observed_anchor_rows(ctx: EpisodeContext, type_name: str) -> np.ndarray:
    """Rows of the type's instances among all observed entities (the row order of the relation tables)."""
    return ctx.memo(
        ("anchor_rows", type_name), lambda: np.searchsorted(np.flatnonzero(ctx.observed), ctx.instances(type_name))
    )


def _vertical(ctx: EpisodeContext, d: np.ndarray, parent: np.ndarray, itself: np.ndarray) -> dict[str, np.ndarray]:
    """The above/under rule on offsets ``d = pos(e) - pos(anchor)`` (``[..., 3]``), given whether e rests
    on the anchor (``parent``) or is the anchor (``itself``)."""
    lo, hi, r = param(ctx, "above_min_dy"), param(ctx, "above_max_dy"), param(ctx, "above_radius")
    base = d[..., 0] ** 2 + d[..., 2] ** 2 <= r * r
    base &= ~parent & ~itself
    dy = d[..., 1]
    return {"above": base & (dy > lo) & (dy <= hi), "under": base & (-dy > lo) & (-dy <= hi)}


def vertical_relations(ctx: EpisodeContext, type_name: str) -> dict[str, np.ndarray]:
    """``{"above": [G, T, N], "under": [G, T, N]}`` against the observed instances of one type (memoised):
    e within ``above_radius`` horizontally of anchor a and higher (lower) by a gap in (``above_min_dy``,
    ``above_max_dy``], excluding a itself and what rests directly on a ("on", not "above")."""

    def compute() -> dict[str, np.ndarray]:
        anchors = ctx.instances(type_name)
        pos = ctx.position
        d = pos[None, :, :, :] - pos[:, anchors, :].transpose(1, 0, 2)[:, :, None, :]  # [G, T, N, 3]
        itself = np.zeros((anchors.size, 1, ctx.N), dtype=bool)
        itself[np.arange(anchors.size), 0, anchors] = True
        return _vertical(ctx, d, ctx.parent[None, :, :] == anchors[:, None, None], itself)

    return ctx.memo(("vertical_relations", type_name), compute)


def vertical_at_cells(ctx: EpisodeContext) -> dict[str, np.ndarray]:
    """The same relations at the sampler's cells (``ctx.cells``) against every observed entity as anchor:
    ``[A, K]`` each, computed once per episode (rows: ``observed_anchor_rows``)."""

    def compute() -> dict[str, np.ndarray]:
        ts, es = ctx.cells
        anchors = np.flatnonzero(ctx.observed)
        at_anchors = ctx.position[:, anchors].take(ts, axis=0)  # [K, A, 3]: one take, not a 2-D gather
        d = (ctx.at_cells(ctx.position)[:, None, :] - at_anchors).transpose(1, 0, 2)  # [A, K, 3]
        parent = ctx.parent_at_cells()[None, :] == anchors[:, None]
        return _vertical(ctx, d, parent, es[None, :] == anchors[:, None])

    return ctx.memo(("vertical_at_cells",), compute)


def relation_rows(ctx: EpisodeContext, table: dict[str, np.ndarray], key: str, specs: list[FilterSpec]) -> KeyRows:
    """A relation key's specs at ``ctx.cells``: each the union over its anchors, ambiguous with several
    anchors (``table`` holds the relations at ``ctx.cells``); the agent's own spec from its mask."""
    position, unions, counts = unions_by_type(ctx, table, key)
    rows = np.zeros((len(specs), unions.shape[1]), dtype=bool)
    anchored = [i for i, s in enumerate(specs) if s.value != AGENT]
    if anchored:
        rows[anchored] = unions[[position[specs[i].value] for i in anchored]]
    if len(anchored) < len(specs):
        rows[[i for i, s in enumerate(specs) if s.value == AGENT]] = ctx.at_cells(_agent_mask(ctx, key))
    return KeyRows.build(ctx, specs, rows, [s.value != AGENT and counts[s.value] >= 2 for s in specs])


def unions_by_type(ctx: EpisodeContext, table: dict[str, np.ndarray], key: str) -> tuple[dict, np.ndarray, dict]:
    """Per anchor type: the union of ``table[key]``'s rows over the type's observed instances (a row of
    ``[types, K]``, at the type's position), and how many instances it has; one ``reduceat`` per key
    instead of one gather per filter value."""

    def compute() -> tuple[dict, np.ndarray, dict]:
        order, starts, names, counts = observed_type_groups(ctx)
        if not starts:
            return {}, np.zeros((0, table[key].shape[1]), dtype=bool), {}
        # OR over each type's rows on packed bits: logical_or.reduceat on bools is several times slower
        packed = np.bitwise_or.reduceat(np.packbits(table[key][order], axis=1), starts, axis=0)
        unions = np.unpackbits(packed, axis=1, count=table[key].shape[1]).astype(bool)
        return {name: i for i, name in enumerate(names)}, unions, counts

    return ctx.memo(("unions_by_type", id(table), key), compute)


def observed_type_groups(ctx: EpisodeContext) -> tuple[np.ndarray, list[int], list[str], dict[str, int]]:
    """The observed entities grouped by type (the rows of the relation tables): their order sorted by type
    name, where each type's run starts, the type names and their numbers of instances (memoised)."""

    def compute() -> tuple[np.ndarray, list[int], list[str], dict[str, int]]:
        types = ctx.types[np.flatnonzero(ctx.observed)]
        order = np.argsort(types.astype(str), kind="stable")
        ordered = types[order].tolist()
        starts = [i for i in range(len(ordered)) if i == 0 or ordered[i] != ordered[i - 1]]
        ends = [*starts[1:], len(ordered)]
        names = [ordered[i] for i in starts]
        return order, starts, names, {t: b - a for t, a, b in zip(names, starts, ends)}

    return ctx.memo(("observed_type_groups",), compute)


def relation_anchors_at_cells(ctx: EpisodeContext, table: dict[str, np.ndarray], spec: FilterSpec):
    """A relation filter's anchors and each anchor's mask at ``ctx.cells``, read from ``table``."""
    return ctx.instances(spec.value), table[spec.key][observed_anchor_rows(ctx, spec.value)]


def location_anchors_at_cells(ctx: EpisodeContext, spec: FilterSpec) -> tuple[np.ndarray, np.ndarray]:
    """The sampler's shortcut for ambiguous location filters (same rules as the masks)."""
    if spec.key in ("above", "under"):
        return relation_anchors_at_cells(ctx, vertical_at_cells(ctx), spec)
    if spec.key in ("on", "inside"):
        anchors = ctx.instances(spec.value)
        return anchors, ctx.parent_at_cells()[None, :] == anchors[:, None]
    return same_receptacle_rows(ctx, spec)


def location_rows_at_cells(ctx: EpisodeContext, key: str) -> KeyRows:
    """The sampler's shortcut: one location key's specs at ``ctx.cells`` (same rules as the masks)."""
    specs = location_values(ctx, key)
    if key in ("above", "under"):
        return relation_rows(ctx, vertical_at_cells(ctx), key, specs)
    if key in ("on", "inside"):
        codes, by_name = receptacle_codes_at_cells(ctx)
        wanted = np.array([by_name.get(s.value, -2) for s in specs], dtype=np.int64)
        ambiguous = [ctx.instances(s.value).size >= 2 for s in specs]
        return KeyRows.build(ctx, specs, codes[None, :] == wanted[:, None], ambiguous)
    pairs = [same_receptacle_rows(ctx, s) for s in specs]
    return KeyRows.build(ctx, specs, [rows.any(axis=0) for _, rows in pairs], [a.size >= 2 for a, _ in pairs])


def above_under(ctx: EpisodeContext, spec: FilterSpec) -> Anchored:
    """``above``/``under`` <type>: within ``above_radius`` horizontally and higher/lower than an instance."""
    return Anchored(ctx.instances(spec.value), vertical_relations(ctx, spec.value)[spec.key])


LOCATION_FNS = {
    "on": on_receptacle,
    "inside": on_receptacle,
    "on_same": same_receptacle,
    "inside_same": same_receptacle,
    "above": above_under,
    "under": above_under,
}


def held_observations(ctx: EpisodeContext) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The observations of held entities: steps, entities, holders, and whether each holder encloses what it
    holds (memoised: the four location keys that read receptacles share them)."""

    def compute() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
        ts, es = np.nonzero(ctx.data)
        ps = ctx.parent[ts, es]
        held = ps >= 0
        ts, es, ps = ts[held], es[held], ps[held]
        return ts, es, ps, encloses(ctx)[ps]

    return ctx.memo(("held_observations",), compute)


def location_values(ctx: EpisodeContext, key: str) -> list[FilterSpec]:
    """Location specs that hold for some observation, computed over all observations at once."""
    if key in ("above", "under"):
        seen = (vertical_at_cells(ctx)[key] & ctx.data_at_cells()[None, :]).any(axis=1)
        return _specs("location", key, ctx.types[np.flatnonzero(ctx.observed)[seen]].tolist())
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


register_filter(
    "location",
    tuple(LOCATION_FNS),
    location_values,
    slot="post",
    labels={
        "on": "on the object",
        "inside": "inside the object",
        "on_same": "on the same object as",
        "inside_same": "inside the same object as",
        "above": "above the object",
        "under": "under the object",
    },
    rows_at_cells=location_rows_at_cells,
    anchors_at_cells=location_anchors_at_cells,
)(location_filter)


# -- position (situated) ------------------------------------------------------------------------------
POSITION_KEYS = ("front", "behind", "left", "right")
AGENT = "you"


def covisible_pairs(ctx: EpisodeContext) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t, e, a)`` for every ordered pair of distinct entities seen at the same step (vectorised)."""
    ts, es = np.nonzero(ctx.data)  # sorted by step
    counts = np.bincount(ts, minlength=ctx.T)
    first = np.cumsum(counts) - counts
    partners = counts[ts]
    i = np.repeat(np.arange(ts.size), partners)
    offset = np.arange(i.size) - np.repeat(np.cumsum(partners) - partners, partners)
    j = first[ts[i]] + offset
    keep = es[i] != es[j]
    return ts[i][keep], es[i][keep], es[j][keep]


def relative_pairs(ctx: EpisodeContext) -> tuple[np.ndarray, np.ndarray, np.ndarray, dict[str, np.ndarray]]:
    """The co-visible pairs ``(t, e, a)`` and, per key, which of them hold: at step t, both seen, e is left
    of / right of / in front of (nearer) / behind (farther than) anchor a in the agent's view by more than
    ``side_margin``, within ``near_radius`` of it (computed once per episode)."""

    def compute():
        t, e, a = covisible_pairs(ctx)
        ego = ctx.ego.reshape(ctx.T * ctx.N, 3)  # gathers at flat indices: faster than by two index arrays
        d = ego[t * ctx.N + e] - ego[t * ctx.N + a]  # [P, 3]
        near = d[:, 0] ** 2 + d[:, 2] ** 2 <= param(ctx, "near_radius") ** 2
        m = param(ctx, "side_margin")
        holds = {"left": -d[:, 0] > m, "right": d[:, 0] > m, "front": -d[:, 2] > m, "behind": d[:, 2] > m}
        return t, e, a, {key: near & h for key, h in holds.items()}

    return ctx.memo(("relative_pairs",), compute)


def relative_relations(ctx: EpisodeContext, type_name: str, key: str) -> np.ndarray:
    """``[G, T, N]``: the relation ``key`` against the observed instances of one type (memoised)."""

    def compute() -> np.ndarray:
        t, e, a, hits = relative_pairs(ctx)
        anchors = ctx.instances(type_name)
        hit = hits[key] & np.isin(a, anchors)
        stack = np.zeros((anchors.size, ctx.T, ctx.N), dtype=bool)
        stack[np.searchsorted(anchors, a[hit]), t[hit], e[hit]] = True
        return stack

    return ctx.memo(("relative_relations", type_name, key), compute)


def relative_at_cells(ctx: EpisodeContext) -> dict[str, np.ndarray]:
    """The relations at the sampler's cells (``ctx.cells``, which hold every co-visible pair) against every
    observed entity as anchor: ``[A, K]`` per key (rows: ``observed_anchor_rows``)."""

    def compute() -> dict[str, np.ndarray]:
        t, e, a, hits = relative_pairs(ctx)
        ts, es = ctx.cells
        cell_of = np.full((ctx.T, ctx.N), -1)
        cell_of[ts, es] = np.arange(ts.size)
        row = np.full(ctx.N, -1)
        n_observed = int(ctx.observed.sum())
        row[np.flatnonzero(ctx.observed)] = np.arange(n_observed)
        flat = row[a] * ts.size + cell_of[t, e]  # every pair's place in a table, computed once for the keys
        out = {}
        for key, hit in hits.items():
            table = np.zeros(n_observed * ts.size, dtype=bool)
            table[flat[hit]] = True
            out[key] = table.reshape(n_observed, ts.size)
        return out

    return ctx.memo(("relative_at_cells",), compute)


def _agent_mask(ctx: EpisodeContext, key: str) -> np.ndarray:
    """``[T, N]``: e is to your left/right or in front of you (ahead, within ``agent_side``), as seen."""

    def compute() -> np.ndarray:
        x, z = ctx.ego[..., 0], ctx.ego[..., 2]
        side = param(ctx, "agent_side")
        rel = {"left": lambda: x < -side, "right": lambda: x > side, "front": lambda: (np.abs(x) <= side) & (z > 0)}
        return rel[key]() & ctx.data

    return ctx.memo(("agent_mask", key), compute)


def position_filter(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray | Anchored:
    if spec.value == AGENT:
        return _agent_mask(ctx, spec.key)
    return Anchored(ctx.instances(spec.value), relative_relations(ctx, spec.value, spec.key))


def position_rows_at_cells(ctx: EpisodeContext, key: str) -> KeyRows:
    """The sampler's shortcut: one position key's specs at ``ctx.cells`` (same rules as the masks)."""
    return relation_rows(ctx, relative_at_cells(ctx), key, position_values(ctx, key))


def position_values(ctx: EpisodeContext, key: str) -> list[FilterSpec]:
    out = [AGENT] if key != "behind" and _agent_mask(ctx, key).any() else []
    seen = relative_at_cells(ctx)[key].any(axis=1)
    out.extend(ctx.types[np.flatnonzero(ctx.observed)[seen]].tolist())
    return _specs("position", key, out)


register_filter(
    "position",
    POSITION_KEYS,
    position_values,
    slot="post",
    labels={"front": "in front of", "behind": "behind", "left": "left of", "right": "right of"},
    rows_at_cells=position_rows_at_cells,
    anchors_at_cells=lambda ctx, spec: relation_anchors_at_cells(ctx, relative_at_cells(ctx), spec),
)(position_filter)


# -- moment (temporal) --------------------------------------------------------------------------------
MOMENT_KEYS = ("before", "after", "right_before", "right_after", "between")


def moment_window(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray:
    """Bool ``[T]``: the steps the moment filter keeps. Step t holds the state after action t, so the
    step of an event already counts as after it."""
    t = np.arange(ctx.T)
    a, b = moment_bounds(ctx, spec)
    return (t >= a) & (t < b)


def moment_rows_at_cells(ctx: EpisodeContext, key: str) -> KeyRows:
    """The sampler's shortcut: every moment spec's window at the steps of ``ctx.cells``, from the windows'
    bounds at once."""
    specs = list(moment_specs(ctx, key))
    bounds = np.array([moment_bounds(ctx, s) for s in specs], dtype=np.int64).reshape(-1, 2)
    ts = ctx.cells[0][None, :]
    return KeyRows.build(ctx, specs, (ts >= bounds[:, :1]) & (ts < bounds[:, 1:]))


@register_filter(
    "moment",
    MOMENT_KEYS,
    lambda ctx, key: list(moment_specs(ctx, key)),
    slot="when",
    rows_at_cells=moment_rows_at_cells,
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
