"""What can be asked in one episode, computed once and eagerly: satisfiable queries and filter specs.

The sampler works on *cells*: the ``(t, entity)`` pairs a question can be about (DATA, plus the cells of
events, which counting events looks at), sorted by entity then step. Every filter spec its key's ``values``
lists gets its row of ``holds`` (``[C, K]``: which cells it keeps, the union over its anchors), so proposing
a filter that holds at the seed observation and narrows the current selection is a few integer operations
(``bitsets``). A spec's selection (what the evaluator ANDs) is its definition's: computed with the row
where the key has no ``cells`` form, else the first time a program uses the spec (about one spec in ten is
used; ``EpisodeSelections`` keeps it for the episode).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from eqagen.core import FilterSpec, QuerySpec
from eqagen.predicates.bitsets import BitView, CellLayout, Previewer, cell_layout, plane_rows, rows_to_ints
from eqagen.predicates.context import EpisodeContext, spec_key
from eqagen.predicates.registry import REGISTRY, Anchored, CellRow, EpisodeSelections, cell_rows
from eqagen.predicates.validity import event_entities, opposite_spec, single_value
from eqagen.predicates.vocabulary import load_vocabulary, priority, spec_text, type_text

Selection = np.ndarray | Anchored
ORDINAL = re.compile(r"#(\d+)")


def counts_events(q: QuerySpec) -> bool:
    return q.name == "count" and q.arg == "events"


def view_key(q: QuerySpec) -> tuple[str, str, str]:
    """What a query's view depends on, its subject aside: name, arg and (counting events) the event kind."""
    return (q.name, q.arg, q.args.get("kind", ""))


@dataclass(frozen=True)
class SeedCells:
    """The cells a question with one query can be built around, grouped for drawing a type, then an entity
    of it, then one of its cells: ``cells`` (ascending cell indices), ``starts`` (where each entity's run
    begins among them) and ``runs_by_type`` (per type, in the order of the types' priority, the positions
    in ``starts`` of its entities)."""

    cells: list[int]
    starts: list[int]
    runs_by_type: list[list[int]]


@dataclass(frozen=True)
class EpisodeIndex:
    ctx: EpisodeContext
    queries: dict[str, list[QuerySpec]]  # query name -> satisfiable specs (without subject)
    specs: list[FilterSpec]  # C satisfiable filter specs
    selected: EpisodeSelections  # what each spec's definition selects, computed once, when first needed
    holds: np.ndarray  # bool [C, K]: the cells each spec keeps (union over its anchors)
    ambiguous: list[bool]  # names an object with several observed instances
    priority: list[float]  # lower: preferred (values shared by more scenes)
    families: list[str]  # filter families with at least one spec, sorted
    family_of: list[int]  # index into ``families``
    keys: list[tuple[str, str]]  # the (family, key) pairs with at least one spec, sorted
    key_of: list[int]  # index into ``keys``
    layout: CellLayout
    rows: list[int]  # ``holds`` as ``bitsets`` ints
    type_cells: dict[str, int]  # per type: the cells of its entities, as an int
    entity_cells: list[int]  # per entity: its cells, as an int
    opposite: list[int]  # per position spec naming one anchor: its ``validity.opposite_spec``'s index, else -1
    views: dict[tuple[str, str, str], BitView]  # per ``view_key``: the query's cells and previews
    seeds: dict[tuple[str, str, str], SeedCells]  # per ``view_key``
    allowed: dict[tuple[str, str], list[bool]]  # per (query name, arg): the specs with no forbidden pair
    event_entities: list[set[int]]  # per spec: the entities of the events it names (``validity.event_entities``)

    @property
    def n_cells(self) -> int:
        return int(self.ctx.cell_t.shape[0])

    def selection(self, spec: FilterSpec) -> Selection:
        """The spec's selection: its definition's, kept for the episode (``EpisodeSelections``)."""
        return self.selected(spec)

    def holding_at(self, cell: int, allowed: list[bool]) -> list[int]:
        """Specs (ascending) that keep ``cell`` and are ``allowed``."""
        # a column of ``holds`` read when asked: a proposal reads one cell, and listing every cell's specs
        # up front took 5% of the programs stage's instructions (callgrind, 20 tag-eqa episodes)
        return [j for j in np.flatnonzero(self.holds[:, cell]).tolist() if allowed[j]]

    def seen_opposite(self, spec: int, cell: int) -> bool:
        """Whether the entity of ``cell`` stood in the relation opposite to position spec ``spec`` at some cell,
        where the spec names one anchor (you, or an object with one instance): a question about it with that
        filter would read it on both sides (``validity.indefinite_moment``, unless another filter leaves out
        those steps). Where the spec names several instances, a row (their union) cannot tell whether the
        object stood on both sides of the same one: False."""
        opposite = self.opposite[spec]
        return opposite >= 0 and bool(self.rows[opposite] & self.entity_cells[int(self.ctx.cell_e[cell])])

    def view(self, q: QuerySpec) -> tuple[BitView, Previewer]:
        """The query's view (its subject's cells only, where it has one) and its previewer."""
        view = self.views[view_key(q)]
        subject = q.args.get("subject")
        if subject:  # the subject's cells, and only the value planes they touch
            cells = view.cells & self.type_cells.get(subject, 0)
            planes = None if view.planes is None else tuple(p for p in view.planes if p & cells)
            view = BitView(cells, planes, view.events, view.reported)
        return view, Previewer(self.layout, view)


def satisfiable_queries(ctx: EpisodeContext) -> dict[str, list[QuerySpec]]:
    """The query specs the world family allows and the episode can ask; a property no observed type can
    differ in (``validity.single_value`` for every one) is not asked: its answer would be the type's."""
    support = ctx.support
    varying = ctx.observed_types()
    out = {}
    for name in support.queries:
        specs = [
            q
            for q in REGISTRY.query(name).args(ctx)
            if support.allows_query(q)
            and not (name == "getProperty" and all(single_value(ctx, q.arg, t) for t in varying))
        ]
        if specs:
            out[name] = specs
    return out


def filter_keys(ctx: EpisodeContext) -> list[tuple[str, str]]:
    """The (family, key) pairs the episode's world family supports, in the registry's order."""
    support = ctx.support
    return [(family, key) for family in support.filters for key in REGISTRY.filter_keys(support, family)]


def satisfiable_specs(
    ctx: EpisodeContext, kept: EpisodeSelections
) -> tuple[list[tuple[FilterSpec, CellRow]], np.ndarray]:
    """Every spec the world family's ``values`` lists that keeps some cell, with its anchors and row
    (``registry.cell_rows``: the selections it computes are ``kept``), and those rows stacked (bool ``[C, K]``,
    the index's ``holds``): every row stacked once, and tested in one call."""
    listed: list[tuple[FilterSpec, CellRow]] = []
    for family, key in filter_keys(ctx):
        specs = list(REGISTRY.filter(family, key).values(ctx, key))
        listed += zip(specs, cell_rows(ctx, family, key, specs, kept))
    rows = np.array([row for _, (_, row) in listed], dtype=bool).reshape(len(listed), ctx.cell_t.size)
    keep = rows.any(axis=1)
    return [found for found, k in zip(listed, keep.tolist()) if k], rows[keep]


def allowed_keys(probes: list[FilterSpec], q: QuerySpec) -> tuple[bool, ...]:
    """Per (family, key), given as a spec of it with no value (the rules read family and key only): whether
    its specs may go with the query (no forbidden pair)."""
    query = QuerySpec(q.name, q.arg)
    return tuple(not REGISTRY.is_forbidden(probe, query) for probe in probes)


def allowed_specs(by_key: tuple[bool, ...], key_of: list[int]) -> list[bool]:
    """Per spec: whether its key is allowed (``allowed_keys``)."""
    return [by_key[k] for k in key_of]


def shared_vocabulary(ctx: EpisodeContext) -> dict[str, float]:
    """The world family's vocabulary table (text key -> share of episodes), empty when it has none."""
    path = ctx.params.get("vocabulary")
    return load_vocabulary(str(path)) if path else {}


def spec_priority(spec: FilterSpec, shares: dict[str, float]) -> float:
    """Lower: preferred. Listed values by how common they are; the others after them, one step further per
    ordinal and for naming two events ("the second time you opened the drawer" and pairs of events recur
    in fewer scenes)."""
    text = spec_text(spec)
    if text in shares:
        return priority(text, shares)
    ordinals = sum(int(k) for k in ORDINAL.findall(spec.value))
    return priority(text, shares) + ordinals + (1.0 if "event2" in spec.args else 0.0)


def query_cells(ctx: EpisodeContext, q: QuerySpec) -> np.ndarray:
    """Bool ``[K]``: where the query looks before any filter (its observations, or its kind's events)."""
    cols = REGISTRY.query(q.name).applies(ctx, q)
    if counts_events(q):
        cells = np.zeros((ctx.T, ctx.N), dtype=bool)
        for e in ctx.events:
            if e.kind == q.args["kind"]:
                cells[e.t, e.entity] = True
    else:
        cells = ctx.data
    return ctx.at_cells(cells) & cols[ctx.cell_e]


def build_views(ctx: EpisodeContext, queries: list[QuerySpec], layout: CellLayout) -> dict[tuple, BitView]:
    """Each query's view as ints: its cells, the cells it reports and its value planes, all made ints by
    one ``rows_to_ints`` call."""
    rows: list[np.ndarray] = []
    parts: dict[tuple, tuple[int, bool, int | None]] = {}
    for q in queries:
        key = view_key(q)
        if key in parts:
            continue
        qdef, events = REGISTRY.query(q.name), counts_events(q)
        reported = qdef.reports is not None and not events
        planes = plane_rows(ctx.at_cells(qdef.value_codes(ctx, q))) if qdef.value_codes and not events else None
        parts[key] = (len(rows), reported, None if planes is None else len(planes))
        rows.append(query_cells(ctx, q))
        if reported:
            rows.append(ctx.at_cells(qdef.reports(ctx, q)))
        if planes is not None:
            rows.extend(planes)
    ints = rows_to_ints(np.array(rows, dtype=bool).reshape(len(rows), ctx.cell_t.size), layout)
    views = {}
    for key, (at, reported, n_planes) in parts.items():
        first_plane = at + 1 + reported
        planes = None if n_planes is None else tuple(ints[first_plane : first_plane + n_planes])
        events = key[0] == "count" and key[1] == "events"
        views[key] = BitView(ints[at], planes, events, ints[at + 1] if reported else None)
    return views


def seed_cells(ctx: EpisodeContext, q: QuerySpec, shares: dict[str, float]) -> SeedCells:
    """The cells a question with this query can be built around (``SeedCells``)."""
    qdef = REGISTRY.query(q.name)
    if counts_events(q):
        ok = query_cells(ctx, q)
    else:
        cells = qdef.seeds(ctx, q) if qdef.seeds else ctx.data
        ok = ctx.at_cells(cells) & qdef.applies(ctx, q)[ctx.cell_e]
    if q.name == "getProperty":  # the seed is in the answer: of a type whose value the question can ask
        varying = np.array([not single_value(ctx, q.arg, t) for t in ctx.type_names.tolist()], dtype=bool)
        ok &= varying[ctx.type_code[ctx.cell_e]]  # asked once per type, not per entity
    ks = ok.nonzero()[0]
    es = ctx.cell_e[ks]
    starts = run_starts(es) if ks.size else ks
    names = ctx.types[es[starts]].tolist()
    ranked = sorted({t: priority(type_text(t), shares) for t in set(names)}.items(), key=lambda kv: (kv[1], kv[0]))
    code = {t: i for i, (t, _) in enumerate(ranked)}
    runs: list[list[int]] = [[] for _ in ranked]
    for j, t in enumerate(names):
        runs[code[t]].append(j)
    return SeedCells(ks.tolist(), starts.tolist(), runs)


def run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal values starts in a non-empty sorted array."""
    starts = np.ones(values.size, dtype=bool)
    np.not_equal(values[1:], values[:-1], out=starts[1:])
    return starts.nonzero()[0]


def allowed_by_query(
    keys: list[tuple[str, str]], key_of: list[int], query_args: list[tuple[str, str]]
) -> dict[tuple[str, str], list[bool]]:
    """``allowed_specs`` per (query name, arg); queries that allow the same keys share one list."""
    probes = [FilterSpec(f, k, "") for f, k in keys]
    by_keys = {qa: allowed_keys(probes, QuerySpec(*qa)) for qa in query_args}
    lists = {k: allowed_specs(k, key_of) for k in set(by_keys.values())}
    return {qa: lists[k] for qa, k in by_keys.items()}


def opposite_specs(specs: list[FilterSpec], ambiguous: list[bool]) -> list[int]:
    """Per spec: the index of its ``validity.opposite_spec`` among ``specs``, for position specs naming one
    anchor (``EpisodeIndex.seen_opposite``); -1 for the others, or where the opposite holds nowhere."""
    where = {spec_key(s): j for j, s in enumerate(specs)}
    out = []
    for s, several in zip(specs, ambiguous):
        opposite = opposite_spec(s) if s.family == "position" and not several else None
        out.append(-1 if opposite is None else where.get(spec_key(opposite), -1))
    return out


def build_index(ctx: EpisodeContext) -> EpisodeIndex:
    selected = EpisodeSelections(ctx)
    found, holds = satisfiable_specs(ctx, selected)
    specs = [s for s, _ in found]
    keys = sorted({(s.family, s.key) for s in specs})
    families = sorted({f for f, _ in keys})
    shares = shared_vocabulary(ctx)
    starts = run_starts(ctx.cell_e) if ctx.cell_e.size else ctx.cell_e
    layout = cell_layout(ctx.cell_e, starts)
    queries = satisfiable_queries(ctx)
    all_queries = [q for qs in queries.values() for q in qs]
    type_rows = ctx.type_code[ctx.cell_e][None, :] == np.arange(len(ctx.type_names))[:, None]
    entity_rows = ctx.cell_e[None, :] == np.arange(ctx.N)[:, None]
    key_code = {k: i for i, k in enumerate(keys)}
    key_of = [key_code[(s.family, s.key)] for s in specs]
    query_args = sorted({(q.name, q.arg) for q in all_queries})  # counting events: one per kind, alike here
    ambiguous = [anchors is not None and len(anchors) >= 2 for _, (anchors, _) in found]
    return EpisodeIndex(
        ctx=ctx,
        queries=queries,
        specs=specs,
        selected=selected,
        holds=holds,
        ambiguous=ambiguous,
        priority=[spec_priority(s, shares) for s in specs],
        families=families,
        family_of=[families.index(s.family) for s in specs],
        keys=keys,
        key_of=key_of,
        layout=layout,
        rows=rows_to_ints(holds, layout),
        type_cells=dict(zip(ctx.type_names.tolist(), rows_to_ints(type_rows, layout))),
        entity_cells=rows_to_ints(entity_rows, layout),
        opposite=opposite_specs(specs, ambiguous),
        views=build_views(ctx, all_queries, layout),
        seeds={view_key(q): seed_cells(ctx, q, shares) for q in all_queries},
        allowed=allowed_by_query(keys, key_of, query_args),
        event_entities=[event_entities(ctx, [s]) for s in specs],
    )
