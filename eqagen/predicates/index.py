"""What can be asked in one episode, precomputed once: satisfiable query specs and filter values.

The sampler works on *cells*: the ``(t, entity)`` pairs a question can be about (DATA, plus the cells of
events, which counting events looks at), sorted by entity then step. Every satisfiable filter spec is
evaluated once and stored as a row of ``holds`` (``[C, K]``: which cells it keeps), so proposing a filter
that holds at the seed observation and narrows the current selection is a few array operations.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field, replace

import numpy as np

from eqagen.core import FilterSpec, QuerySpec
from eqagen.predicates.bitsets import (
    BitView,
    CellLayout,
    Previewer,
    cell_layout,
    plane_rows,
    rows_to_ints,
)
from eqagen.predicates.context import EpisodeContext, query_key, spec_key
from eqagen.predicates.registry import REGISTRY, Anchored, KeyRows
from eqagen.predicates.vocabulary import load_vocabulary, priority, spec_text, table_memo


def event_cells(ctx: EpisodeContext, kind: str | None = None) -> np.ndarray:
    """Bool ``[T, N]``: the cells of the events (of one kind, or all; memoised, read-only)."""

    def compute() -> np.ndarray:
        cells = np.zeros((ctx.T, ctx.N), dtype=bool)
        for e in ctx.events:
            if kind is None or e.kind == kind:
                cells[e.t, e.entity] = True
        cells.setflags(write=False)
        return cells

    return ctx.memo(("event_mask", kind), compute)


def applies_to(ctx: EpisodeContext, q: QuerySpec) -> np.ndarray:
    """Bool ``[N]``: the query's ``applies`` (memoised per query content; the seeds and the view both read it)."""
    return ctx.memo(("applies", query_key(q)), lambda: REGISTRY.query(q.name).applies(ctx, q))


ORDINAL = re.compile(r"#(\d+)")


def shared_vocabulary(ctx: EpisodeContext) -> dict[str, float]:
    """The world family's vocabulary table (text key -> share of episodes), empty when it has none."""
    path = ctx.params.get("vocabulary")
    return load_vocabulary(str(path)) if path else {}


def spec_priorities(specs: list[FilterSpec], shares: dict[str, float]) -> list[float]:
    """Each spec's priority, lower: preferred. Listed values by how common they are; the others after them,
    one step further per ordinal and for naming two events ("the second time you opened the drawer" and
    pairs of events recur in fewer scenes). Memoised for the process per table and content (one memo lookup
    for all: an episode has a few hundred specs)."""
    memo = table_memo(shares)
    out = []
    for spec in specs:
        text = spec_text(spec)
        key = ("spec", text, spec.value, "event2" in spec.args)
        hit = memo.get(key)
        if hit is None:
            hit = memo[key] = _spec_priority(text, spec.value, key[3], shares)
        out.append(hit)
    return out


def _spec_priority(text: str, value: str, two_events: bool, shares: dict[str, float]) -> float:
    if text in shares:
        return priority(text, shares)
    ordinals = sum(int(k) for k in ORDINAL.findall(value))
    return priority(text, shares) + ordinals + (1.0 if two_events else 0.0)


def keys_forbidden(keys: tuple[tuple[str, str], ...], name: str, arg: str) -> np.ndarray:
    """Bool ``[len(keys)]``: which filter keys ``(family, key)`` the registry forbids with query ``name(arg)``.
    The rules read family, key, query name and arg only, so this is decided once per combination across
    episodes (episodes of a world family have much the same keys); the cache is dropped when the rules change."""
    rules = tuple(REGISTRY.forbidden)
    if _FORBIDDEN_RULES[0] != rules or len(_FORBIDDEN_KEYS) >= MAX_FORBIDDEN_KEYS:
        _FORBIDDEN_RULES[0] = rules
        _FORBIDDEN_KEYS.clear()
    hit = _FORBIDDEN_KEYS.get((keys, name, arg))
    if hit is None:
        query = QuerySpec(name, arg)
        hit = np.array([REGISTRY.is_forbidden(FilterSpec(family, key, ""), query) for family, key in keys], dtype=bool)
        hit.setflags(write=False)  # shared by the episodes that ask
        _FORBIDDEN_KEYS[(keys, name, arg)] = hit
    return hit


_FORBIDDEN_RULES: list[tuple] = [()]
_FORBIDDEN_KEYS: dict[tuple, np.ndarray] = {}
MAX_FORBIDDEN_KEYS = 4096


def counts_events(q: QuerySpec) -> bool:
    return q.name == "count" and q.arg == "events"


@dataclass(frozen=True)
class SpecLists:
    """The per-spec arrays as Python lists: the sampler reads a dozen entries at a time, where indexing a
    list is far cheaper than a numpy call."""

    ambiguous: list[bool]
    priority: list[float]
    family_of: list[int]
    key_id: list[int]


@dataclass
class EpisodeIndex:
    ctx: EpisodeContext
    queries: dict[str, list[QuerySpec]]  # query name -> satisfiable specs (without subject)
    specs: list[FilterSpec]  # C satisfiable filter specs
    families: list[str]  # filter families with at least one spec
    family_of: np.ndarray  # int [C] index into families
    key_id: np.ndarray  # int [C]: which of ``keys`` each spec has
    keys: list[tuple[str, str]]  # the (family, key) pairs with at least one spec
    holds: np.ndarray  # bool [C, K]
    ambiguous: np.ndarray  # bool [C]: names an object with several observed instances
    priority: np.ndarray  # float [C]: ``spec_priorities`` (lower: preferred, shared by more scenes)
    cell_t: np.ndarray  # int [K]
    cell_e: np.ndarray  # int [K], sorted
    ent_starts: np.ndarray  # int: first cell of each distinct entity (for reduceat)
    _memo: dict = field(default_factory=dict)

    @property
    def n_cells(self) -> int:
        return int(self.cell_t.shape[0])

    def __post_init__(self) -> None:
        self.lists = SpecLists(
            self.ambiguous.tolist(), self.priority.tolist(), self.family_of.tolist(), self.key_id.tolist()
        )

    def spec_ids(self) -> dict[tuple, int]:
        """``spec_key`` -> position in ``specs`` (memoised)."""
        hit = self._memo.get(("spec_ids",))
        if hit is None:
            hit = self._memo[("spec_ids",)] = {spec_key(s): i for i, s in enumerate(self.specs)}
        return hit

    def positions(self, specs) -> list[int | None]:
        """Each spec's position in ``specs`` (None: not a spec of this index): by identity first (the
        sampler's programs hold the index's own spec objects, which the index keeps alive), else by content."""
        by_id = self._memo.get(("spec_by_id",))
        if by_id is None:
            by_id = self._memo[("spec_by_id",)] = {id(s): i for i, s in enumerate(self.specs)}
        out = []
        for spec in specs:
            i = by_id.get(id(spec))
            out.append(i if i is not None and self.specs[i] is spec else self.spec_ids().get(spec_key(spec)))
        return out

    def holding_at(self, cell: int, q: QuerySpec) -> list[int]:
        """Specs (ascending) that keep ``cell`` and are not forbidden with the query (memoised)."""
        key = ("holding_at", cell, q.name, q.arg)
        hit = self._memo.get(key)
        if hit is None:
            allowed = self._memo.get(("allowed", q.name, q.arg))
            if allowed is None:
                allowed = self._memo[("allowed", q.name, q.arg)] = (~self.forbidden_for(q)).tolist()
            hit = self._memo[key] = [j for j in self.specs_at(cell) if allowed[j]]
        return hit

    def specs_at(self, cell: int) -> list[int]:
        """Specs (ascending) that keep ``cell`` (memoised; read from the transposed ``holds``)."""
        hit = self._memo.get(("specs_at", cell))
        if hit is None:
            by_cell = self._memo.get(("holds_by_cell",))
            if by_cell is None:
                by_cell = self._memo[("holds_by_cell",)] = np.ascontiguousarray(self.holds.T)
            hit = self._memo[("specs_at", cell)] = by_cell[cell].nonzero()[0].tolist()
        return hit

    def anchor_rows(self, i: int) -> tuple[np.ndarray, np.ndarray]:
        """An ambiguous spec's anchors and each anchor's cells (bool ``[G, K]``), in the filter's anchor
        order (memoised; the registry's shortcut where there is one, else gathered from the masks)."""
        key = ("anchor_rows", i)
        if key not in self._memo:
            spec, ctx = self.specs[i], self.ctx
            shortcut = REGISTRY.filter(spec.family, spec.key).anchors_at_cells
            if shortcut is not None:
                self._memo[key] = shortcut(ctx, spec)
            else:
                sel = ctx.selection(spec)
                self._memo[key] = sel.anchors, sel.rows_at(ctx.flat_cells())
        return self._memo[key]

    def forbidden_for(self, q: QuerySpec) -> np.ndarray:
        """Bool ``[C]``: specs that may not go with this query (memoised per query name and arg)."""
        key = ("forbidden", q.name, q.arg)
        if key not in self._memo:
            # the rules look at a spec's family and key only: decide once per key
            per_key = keys_forbidden(tuple(self.keys), q.name, q.arg)
            self._memo[key] = per_key[self.key_id] if per_key.size else np.zeros(0, dtype=bool)
        return self._memo[key]

    def query_cells(self, q: QuerySpec) -> np.ndarray:
        """Bool ``[K]``: where the query looks before any filter (its subject's observations or events)."""
        key = ("cells", q.name, q.arg, q.args.get("kind"), q.args.get("subject"))
        if key not in self._memo:
            ctx = self.ctx
            cols = applies_to(ctx, q)
            if q.args.get("subject"):
                cols = cols & ctx.of_type(q.args["subject"])
            cells = event_cells(ctx, q.args["kind"]) if counts_events(q) else ctx.data
            self._memo[key] = ctx.at_cells(cells) & cols[self.cell_e]
        return self._memo[key]

    def time_values(self, q: QuerySpec) -> np.ndarray | None:
        """Int ``[K]`` codes of what a time-reading query sees at each cell, or None."""
        key = ("time", q.name, q.arg)
        if key not in self._memo:
            fn = REGISTRY.query(q.name).time_value
            self._memo[key] = None if fn is None else self.ctx.at_cells(fn(self.ctx, q))
        return self._memo[key]

    def cell_bits(self) -> tuple[CellLayout, list[int]]:
        """The cells' bit layout and every spec's cells as an int (``bitsets``), built on first use."""
        if ("bits",) not in self._memo:
            layout = cell_layout(self.cell_e, self.ent_starts)
            self._memo[("bits",)] = layout, rows_to_ints(self.holds, layout)
        return self._memo[("bits",)]

    def bit_view(self, q: QuerySpec) -> tuple[BitView, Previewer]:
        """The query's view as ints, with its previewer (memoised like ``view``): the view without a subject,
        built once per query, ANDed with the subject type's cells."""
        key = ("bit_view", q.name, q.arg, q.args.get("kind"), q.args.get("subject"))
        hit = self._memo.get(key)
        if hit is None:
            subject = q.args.get("subject")
            bits = self._base_bit_view(q)
            if subject:  # with its own memos of first filters: they narrow other cells
                cells = bits.cells & self.type_bits(subject)
                bits = replace(bits, cells=cells, first={}, first_lists={}, wider_first=bits.first)
            hit = self._memo[key] = bits, Previewer(self.cell_bits()[0], bits)
        return hit

    def _base_bit_view(self, q: QuerySpec) -> BitView:
        """The query's view as ints, whatever its subject (memoised per query name, arg and event kind; the
        first one asked builds those of every satisfiable query with it)."""
        key = ("base_bit_view", q.name, q.arg, q.args.get("kind"))
        hit = self._memo.get(key)
        if hit is None:
            self._build_base_views([q, *(s for specs in self.queries.values() for s in specs)])
            hit = self._memo[key]
        return hit

    def _build_base_views(self, queries: list[QuerySpec]) -> None:
        """The base views of ``queries`` not built yet: each one's cells, reported cells and value planes as
        rows, all made ints by one ``rows_to_ints`` call (an episode asks about a dozen views: one call each
        cost more than the rows)."""
        rows: list[np.ndarray] = []
        todo: dict[tuple, tuple[int, bool, int | None, bool]] = {}
        for q in queries:
            key = ("base_bit_view", q.name, q.arg, q.args.get("kind"))
            if key in self._memo or key in todo:
                continue
            qdef, events = REGISTRY.query(q.name), counts_events(q)
            anyone = QuerySpec(q.name, q.arg, {k: v for k, v in q.args.items() if k != "subject"})
            reported = qdef.reports is not None and not events
            planes = plane_rows(self.time_values(q)) if qdef.time_value is not None and not events else None
            todo[key] = (len(rows), reported, None if planes is None else len(planes), events)
            rows.append(self.query_cells(anyone))
            if reported:
                rows.append(self.ctx.at_cells(qdef.reports(self.ctx, q)))
            if planes is not None:
                rows.extend(planes)
        ints = rows_to_ints(np.array(rows, dtype=bool).reshape(len(rows), self.n_cells), self.cell_bits()[0])
        for key, (at, reported, n_planes, events) in todo.items():
            first_plane = at + 1 + reported
            planes = None if n_planes is None else ints[first_plane : first_plane + n_planes]
            self._memo[key] = BitView(ints[at], planes, events, ints[at + 1] if reported else None)

    def type_bits(self, type_name: str) -> int:
        """The cells of the entities of one type, as a ``bitsets`` int (those of every type of the episode
        made at the first one asked, by one ``rows_to_ints`` call)."""
        by_type = self._memo.get(("type_bits",))
        if by_type is None:
            names, codes = self.ctx.type_codes()
            rows = codes[self.cell_e][None, :] == np.arange(len(names))[:, None]
            by_type = self._memo[("type_bits",)] = dict(zip(names.tolist(), rows_to_ints(rows, self.cell_bits()[0])))
        return by_type.get(type_name, 0)

    def seed_cells(self, q: QuerySpec) -> tuple[np.ndarray, np.ndarray]:
        """(cells a question with this query can be built around, start of each entity's run among them)."""
        key = ("seeds", q.name, q.arg, q.args.get("kind"))
        if key not in self._memo:
            ctx, qdef = self.ctx, REGISTRY.query(q.name)
            if counts_events(q):
                cells = event_cells(ctx, q.args["kind"])
            else:
                cells = qdef.seeds(ctx, q) if qdef.seeds else ctx.data
            ok = ctx.at_cells(cells) & applies_to(ctx, q)[self.cell_e]
            ks = ok.nonzero()[0]
            es = self.cell_e[ks]
            starts = run_starts(es) if ks.size else ks
            self._memo[key] = (ks, starts)
        return self._memo[key]


def run_starts(values: np.ndarray) -> np.ndarray:
    """Where each run of equal values starts in a non-empty sorted array."""
    starts = np.ones(values.size, dtype=bool)
    np.not_equal(values[1:], values[:-1], out=starts[1:])
    return starts.nonzero()[0]


def satisfiable_queries(ctx: EpisodeContext) -> dict[str, list[QuerySpec]]:
    support = ctx.support
    out = {}
    for name in support.queries:
        specs = [q for q in REGISTRY.query(name).args(ctx) if support.allows_query(q)]
        if specs:
            out[name] = specs
    return out


def filter_keys(ctx: EpisodeContext) -> list[tuple[str, str]]:
    """The (family, key) pairs the episode's world family supports, in the registry's order."""
    support = ctx.support
    return [(family, key) for family in support.filters for key in support.filter_keys(family)]


def key_rows_at_cells(ctx: EpisodeContext, family: str, key: str) -> KeyRows:
    """One key's satisfiable specs with their rows at ``ctx.cells`` (union over anchors) and ambiguity: the
    registry's bulk shortcut where there is one, else each spec's selection read from its masks."""
    fdef = REGISTRY.filter(family, key)
    if fdef.rows_at_cells is not None:
        return fdef.rows_at_cells(ctx, key)
    specs = list(fdef.values(ctx, key))
    rows, ambiguous = [], []
    for spec in specs:
        sel = ctx.selection(spec)
        anchored = isinstance(sel, Anchored)
        rows.append(sel.rows_at(ctx.flat_cells()).any(axis=0) if anchored else ctx.at_cells(np.asarray(sel)))
        ambiguous.append(anchored and len(sel) >= 2)
    return KeyRows.build(ctx, specs, rows, ambiguous)


def build_index(ctx: EpisodeContext) -> EpisodeIndex:
    cell_t, cell_e = ctx.cells
    starts = run_starts(cell_e) if cell_e.size else cell_e
    pairs = filter_keys(ctx)
    parts = [key_rows_at_cells(ctx, family, key) for family, key in pairs]
    specs_all = [s for p in parts for s in p.specs]
    holds = np.concatenate([p.rows for p in parts]) if parts else np.zeros((0, cell_t.size), dtype=bool)
    keep = np.flatnonzero(holds.any(axis=1))
    part_of = np.repeat(np.arange(len(parts)), [len(p.specs) for p in parts])[keep]
    specs = [specs_all[i] for i in keep.tolist()]
    kept_pairs = sorted({pairs[i] for i in set(part_of.tolist())})
    families = sorted({f for f, _ in kept_pairs})
    pair_code = np.array([kept_pairs.index(p) if p in kept_pairs else -1 for p in pairs], dtype=np.int64)
    family_code = np.array([families.index(f) if f in families else -1 for f, _ in pairs], dtype=np.int64)
    shares = shared_vocabulary(ctx)
    return EpisodeIndex(
        ctx=ctx,
        queries=satisfiable_queries(ctx),
        specs=specs,
        families=families,
        family_of=family_code[part_of],
        key_id=pair_code[part_of],
        keys=kept_pairs,
        holds=holds[keep],
        ambiguous=np.concatenate([p.ambiguous for p in parts])[keep] if parts else np.zeros(0, dtype=bool),
        priority=np.array(spec_priorities(specs, shares), dtype=np.float64),
        cell_t=cell_t,
        cell_e=cell_e,
        ent_starts=starts,
    )
