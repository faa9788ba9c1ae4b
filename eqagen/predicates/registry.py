"""The registry of filters, queries, forbidden pairs and world-family support.

A question is ``DATA -> FILTER_1 -> ... -> FILTER_n -> QUERY`` over one episode. Everything a program
can say is registered here by decorator, so that a world family (navigation, blockworld) adds its own
filter families and queries from its own module without editing this package:

- a *filter* is a pure function ``fn(ctx, spec) -> Selection`` over the episode context's ``[t, entity]``
  arrays: a bool ``[T, N]`` mask, or an :class:`Anchored` stack ``[G, T, N]`` with one mask per instance
  of the object the filter names (two countertops -> two groups);
- its *values* function ``values(ctx, key) -> Iterable[FilterSpec]`` lists the filter specs that can
  hold in this episode (the sampler proposes only these);
- a *query* is a pure function ``fn(ctx, query, mask) -> Outcome | None`` that aggregates one group's
  ``[T, N]`` mask into the entities it answers with and the answer value (a string);
- a world family declares which filter families (and keys) and which queries (and args) it supports
  (:mod:`eqagen.predicates.worlds`).

See docs/questions.md ("Registering a filter family or a query") for a worked example.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np

from eqagen.core import FilterSpec, QuerySpec, UnknownNameError
from eqagen.predicates.context import EpisodeContext, spec_key

# World support is declared in worlds.py (the context reads it, so it sits below this registry); the
# registry's users find it here too.
from eqagen.predicates.worlds import WorldSupport as WorldSupport
from eqagen.predicates.worlds import declare_world_family as declare_world_family
from eqagen.predicates.worlds import extend_world_family as extend_world_family
from eqagen.predicates.worlds import world_support as world_support

SLOTS = ("pre", "post", "when")  # where a filter's phrase goes: before the noun, after it, as a time clause


@dataclass(frozen=True)
class Anchored:
    """A selection grouped per instance of the object a filter names.

    ``anchors[g]`` is the entity index of group ``g``'s instance (e.g. ``CounterTop#2``) and
    ``masks[g]`` the ``[T, N]`` mask of what the filter keeps for that instance.
    """

    anchors: np.ndarray  # int [G]
    masks: np.ndarray  # bool [G, T, N]

    def __len__(self) -> int:
        return int(self.anchors.shape[0])

    def union(self) -> np.ndarray:
        return self.masks.any(axis=0)

    def rows_at(self, flat_cells: np.ndarray) -> np.ndarray:
        """Bool ``[G, K]``: each anchor's mask at cells given by their flat ``[T, N]`` indices
        (``EpisodeContext.flat_cells``): gathering flat indices is cheaper than ``[:, ts, es]``."""
        return self.masks.reshape(len(self), -1)[:, flat_cells]


Selection = "np.ndarray | Anchored"


@dataclass(frozen=True)
class Outcome:
    """What a query says about one group: the entities it answers with and the answer value."""

    entities: np.ndarray  # int [k], sorted, distinct
    value: str
    steps: np.ndarray | None = None  # int [k]: where each entity is reported; None: its last selected step


FilterFn = Callable[["EpisodeContext", FilterSpec], "np.ndarray | Anchored"]
ValuesFn = Callable[["EpisodeContext", str], Iterable[FilterSpec]]
QueryFn = Callable[["EpisodeContext", QuerySpec, np.ndarray], "Outcome | None"]
QueryArgsFn = Callable[["EpisodeContext"], Iterable[QuerySpec]]
AppliesFn = Callable[["EpisodeContext", QuerySpec], np.ndarray]
CategoryFn = Callable[[QuerySpec], tuple[str, str]]
SeedsFn = Callable[["EpisodeContext", QuerySpec], np.ndarray]
CellRow = tuple["np.ndarray | None", np.ndarray]  # a selection's anchors (None: a plain mask) and its row
CellsFn = Callable[["EpisodeContext", str, list[FilterSpec]], list[CellRow]]


@dataclass(frozen=True)
class FilterDef:
    """One registered filter key: ``family`` (property, location, ...), ``key`` (color, on, ...)."""

    family: str
    key: str
    fn: FilterFn
    values: ValuesFn
    slot: str = "post"
    phrase: str | None = None  # jinja2 source for the natural phrase; None: macro in templates/filters.j2
    label: str = ""  # TAG-EQA's key text in the structured question ("on the object"); default: key
    # the ``cell_row`` of many specs of one key at once, equal to that of ``fn`` of each (the index's
    # accelerator, for keys with many specs whose relation is cheaper read at the cells than built as whole
    # masks); None: ``fn`` per spec
    cells: CellsFn | None = None


@dataclass(frozen=True)
class QueryDef:
    """One registered query: ``name`` (listObjects, count, ...)."""

    name: str
    fn: QueryFn
    args: QueryArgsFn  # the query specs this episode can ask
    applies: AppliesFn  # bool [N]: entities the query can say something about (e.g. openable ones)
    answer_type: Callable[[QuerySpec], str]
    categories: CategoryFn  # (OpenEQA category, EXPRESS-Bench category)
    observed: bool = True  # True: the group mask is restricted to DATA (what the agent saw)
    max_targets: bool = False  # True: at most QuestionConfig.max_query_targets entities per group
    # [T, N] int codes of the value the query reports for an entity seen at a step (its state, its
    # receptacle's type, its attribute); None when the answer is made of the entities alone (list, count)
    value_codes: Callable[[EpisodeContext, QuerySpec], np.ndarray] | None = None
    template: str | None = None  # jinja2 source of the question; None: templates/questions/<name>.j2
    seeds: SeedsFn | None = None  # bool [T, N]: observations a question can be built around (default DATA)
    # bool [T, N]: where an entity's last selected step must be for the query to name it (getLocation: held
    # by something); None: the query names every entity it sees
    reports: SeedsFn | None = None
    # True: the answer turns on whether the type named by the query's arg was seen (an existence query);
    # the ask stage then asks the question where that type was seen and where it was not, alike
    asks_presence: bool = False
    # the value of a program's one answer group where the query finds nothing (counting events: "0", the
    # agent never did it); None, or no function: such a group says nothing and is dropped
    none_value: Callable[[QuerySpec], str | None] | None = None


@dataclass(frozen=True)
class ForbiddenPair:
    """A filter/query pair that gives the answer away. ``"*"`` matches anything; a query arg of ``"="``
    matches when it equals the filter's key (property color + getProperty color)."""

    family: str
    key: str
    query: str
    arg: str

    def matches(self, f: FilterSpec, q: QuerySpec) -> bool:
        if self.family != f.family or self.query != q.name:
            return False
        if self.key not in ("*", f.key):
            return False
        return self.arg == "*" or (self.arg == "=" and q.arg == f.key) or self.arg == q.arg


class Registry:
    """Holds every registered filter, query, forbidden pair and world family."""

    def __init__(self) -> None:
        self.filters: dict[tuple[str, str], FilterDef] = {}
        self.queries: dict[str, QueryDef] = {}
        self.forbidden: list[ForbiddenPair] = []

    def filter(self, family: str, key: str) -> FilterDef:
        if (family, key) not in self.filters:
            raise UnknownNameError("filter", f"{family}:{key}", [f"{f}:{k}" for f, k in self.filters])
        return self.filters[(family, key)]

    def query(self, name: str) -> QueryDef:
        if name not in self.queries:
            raise UnknownNameError("query", name, self.queries)
        return self.queries[name]

    def filter_keys(self, support: WorldSupport, family: str) -> list[str]:
        """The registered keys of filter family ``family`` that ``support`` allows, in registration order."""
        registered = [k for (f, k) in self.filters if f == family]
        allowed = support.filters.get(family)
        return registered if allowed is None else [k for k in registered if k in allowed]

    def families(self) -> list[str]:
        return sorted({f for f, _ in self.filters})

    def is_forbidden(self, f: FilterSpec, q: QuerySpec) -> bool:
        return any(rule.matches(f, q) for rule in self.forbidden)


REGISTRY = Registry()


def selection(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray | Anchored:
    """The filter's selection in an episode: its registered definition, called."""
    return REGISTRY.filter(spec.family, spec.key).fn(ctx, spec)


def cell_row(ctx: EpisodeContext, sel: np.ndarray | Anchored) -> CellRow:
    """A selection's anchors (None for a plain mask) and its row: bool ``[K]``, the cells it keeps
    (``EpisodeContext.cell_t``, ``cell_e``; for an anchored selection, under any of its anchors)."""
    if isinstance(sel, Anchored):
        return sel.anchors, sel.rows_at(ctx.flat_cells).any(axis=0)
    return None, ctx.at_cells(sel if sel.shape == (ctx.T, ctx.N) else np.broadcast_to(sel, (ctx.T, ctx.N)))


class EpisodeSelections:
    """The selections of the filter specs one episode is asked about, each computed by its definition the
    first time a program needs it and looked up by the spec's content after that: the ask stage's unit asks
    hundreds of programs of one episode, and they share their filters (about half of the evaluations of a
    round); the sampler's index keeps one per episode too. Made per episode by whoever evaluates there, and
    dropped with it; a ``Select`` (``evaluator``)."""

    def __init__(self, ctx: EpisodeContext):
        self.ctx = ctx
        self.by_spec: dict[tuple, np.ndarray | Anchored] = {}

    def __call__(self, spec: FilterSpec) -> np.ndarray | Anchored:
        key = spec_key(spec)
        found = self.by_spec.get(key)
        if found is None:
            found = self.by_spec[key] = selection(self.ctx, spec)
        return found

    def keep(self, spec: FilterSpec, sel: np.ndarray | Anchored) -> None:
        """Hold a selection already computed by the spec's definition."""
        self.by_spec[spec_key(spec)] = sel


def cell_rows(
    ctx: EpisodeContext, family: str, key: str, specs: list[FilterSpec], kept: EpisodeSelections
) -> list[CellRow]:
    """The ``cell_row`` of many specs of one filter key: its ``cells`` form where it has one (their
    selections are left to be computed when a program needs them), else each spec's definition, called (the
    selection is then ``kept``)."""
    fdef = REGISTRY.filter(family, key)
    if fdef.cells:
        return fdef.cells(ctx, key, specs)
    out = []
    for spec in specs:
        sel = fdef.fn(ctx, spec)
        kept.keep(spec, sel)
        out.append(cell_row(ctx, sel))
    return out


def register_filter(
    family: str,
    keys: Iterable[str],
    values: ValuesFn,
    slot: str = "post",
    phrases: dict[str, str] | None = None,
    labels: dict[str, str] | None = None,
    cells: CellsFn | None = None,
) -> Callable[[FilterFn], FilterFn]:
    """Decorator: register ``fn(ctx, spec) -> Selection`` as filter family ``family`` with ``keys``.

    ``values(ctx, key)`` yields the satisfiable :class:`FilterSpec` of one key in one episode.
    ``slot`` places the phrase in the natural question: ``pre`` (an adjective before the noun: "green"),
    ``post`` (after the noun: "on the countertop") or ``when`` (a time clause). ``phrases`` maps a key to
    jinja2 source rendered with ``f`` (the FilterSpec), ``value`` (its readable value), ``anchor``
    (the grounding text, "" when ungrounded) and ``ctx``; keys without a phrase use the macro
    ``<family>_<key>`` of ``eqagen/templates/filters.j2``. ``fn`` is the filter's one definition: the
    sampler's index evaluates it once per satisfiable spec and episode, and reads everything else from
    its selections. ``cells(ctx, key, specs)`` (optional) gives the same ``cell_row`` as ``fn`` for many
    specs of one key at once; the index calls it instead, and evaluates ``fn`` only for the specs a program
    uses (a test holds the two equal).
    """
    if slot not in SLOTS:
        raise ValueError(f"slot '{slot}' is not one of {SLOTS}")

    def wrap(fn: FilterFn) -> FilterFn:
        for key in keys:
            REGISTRY.filters[(family, key)] = FilterDef(
                family=family,
                key=key,
                fn=fn,
                values=values,
                slot=slot,
                phrase=(phrases or {}).get(key),
                label=(labels or {}).get(key, key),
                cells=cells,
            )
        return fn

    return wrap


def register_query(
    name: str,
    args: QueryArgsFn,
    applies: AppliesFn,
    answer_type: str | Callable[[QuerySpec], str],
    categories: tuple[str, str] | CategoryFn,
    observed: bool = True,
    max_targets: bool = False,
    value_codes: Callable[[EpisodeContext, QuerySpec], np.ndarray] | None = None,
    template: str | None = None,
    seeds: SeedsFn | None = None,
    reports: SeedsFn | None = None,
    asks_presence: bool = False,
    none_value: Callable[[QuerySpec], str | None] | None = None,
) -> Callable[[QueryFn], QueryFn]:
    """Decorator: register ``fn(ctx, query, mask) -> Outcome | None`` as query ``name``.

    ``mask`` is one group's ``[T, N]`` selection (filters AND subject AND ``applies``; also AND DATA
    when ``observed``). Return None when the group says nothing (it is then dropped). ``seeds(ctx, query)``
    (optional) gives the bool ``[T, N]`` observations the sampler may build a question around (default:
    DATA of the entities the query applies to). ``value_codes(ctx, query)`` (for queries whose answer is
    the distinct values of what they report: a state, a property, a receptacle) gives int ``[T, N]`` codes of
    the value reported for an entity at its last selected step, so the sampler can preview whether a filter
    changes the answer's values and not only its entities. ``reports(ctx,
    query)`` (optional) gives the bool ``[T, N]`` cells where an entity's last selected step must be for
    the query to name it (getLocation: held by something), so the sampler's preview names the same
    entities as the answer. ``fn`` is the query's one definition; ``value_codes`` and ``reports`` only
    describe it to the sampler's preview (``bitsets``), which a test holds equal to ``fn``.
    ``asks_presence``: the answer is whether the type the query's arg names is in the selection
    (existence), so the ask stage asks it where that type was seen and where it was not. ``none_value(query)``
    (optional): the answer of a program without an ambiguous filter where ``fn`` finds nothing (counting
    events: "0"); None: there is no answer (the program is not asked there).
    """
    a_type = answer_type if callable(answer_type) else (lambda _q, _t=answer_type: _t)
    cats = categories if callable(categories) else (lambda _q, _c=categories: _c)

    def wrap(fn: QueryFn) -> QueryFn:
        REGISTRY.queries[name] = QueryDef(
            name=name,
            fn=fn,
            args=args,
            applies=applies,
            answer_type=a_type,
            categories=cats,
            observed=observed,
            max_targets=max_targets,
            value_codes=value_codes,
            template=template,
            seeds=seeds,
            reports=reports,
            asks_presence=asks_presence,
            none_value=none_value,
        )
        return fn

    return wrap


def forbid_pair(family: str, key: str, query: str, arg: str) -> None:
    """Add a forbidden filter/query pair (see :class:`ForbiddenPair` for ``"*"`` and ``"="``)."""
    rule = ForbiddenPair(family, key, query, arg)
    if rule not in REGISTRY.forbidden:
        REGISTRY.forbidden.append(rule)
