"""The per-episode evaluation context: the episode's ``[t, entity]`` arrays, built once and shared.

Filters and queries read only this object. DATA, the set of observations, is ``ctx.data``: the
``(t, entity)`` pairs the agent saw (visible) while the entity existed. Derived arrays (egocentric
coordinates, attribute columns) are computed on first use and memoised, as are filter selections.
"""

from __future__ import annotations

import json
import weakref
from collections import Counter, OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from eqagen.core import Episode, FilterSpec, QuerySpec, number_events, to_egocentric
from eqagen.predicates.registry import REGISTRY, Anchored, WorldSupport, world_support


@dataclass(frozen=True)
class NamedEvent:
    """An event named uniquely by (kind, entity type, ordinal).

    ``ordinal`` is :func:`eqagen.core.number_events`' count, per entity *type*, not per instance, so "the
    second time you opened a fridge" is unique even with two fridges; ``n_same`` is how many such events
    the episode has (1: no ordinal needed in the text).
    """

    index: int
    t: int
    kind: str
    entity: int
    target: int
    type: str
    ordinal: int
    n_same: int

    @property
    def name(self) -> str:
        """Canonical text: ``open Fridge`` or, when repeated, ``open Fridge #2``."""
        base = f"{self.kind} {self.type}"
        return base if self.n_same == 1 else f"{base} #{self.ordinal}"


def name_events(episode: Episode) -> list[NamedEvent]:
    """Events with an entity, in time order, numbered as the generators number them (``number_events``)."""
    types = episode.entities.type
    numbered = number_events(((e.t, e.kind, e.entity, e.target) for e in episode.events if e.entity >= 0), types)
    totals = Counter((e.kind, types[e.entity]) for e in numbered)
    return [
        NamedEvent(i, e.t, e.kind, e.entity, e.target, types[e.entity], e.ordinal, totals[(e.kind, types[e.entity])])
        for i, e in enumerate(numbered)
    ]


def args_key(args: dict[str, Any]) -> tuple | str:
    """A hashable form of a spec's args: its sorted items, or their JSON where a value is not hashable (a
    list) or the keys do not sort."""
    try:
        key = tuple(sorted(args.items()))
        hash(key)
        return key
    except TypeError:
        return json.dumps(args, sort_keys=True, default=str)


def spec_key(spec: FilterSpec) -> tuple:
    """A hashable key of a FilterSpec's content (its args dict is not hashable)."""
    return (spec.family, spec.key, spec.value, args_key(spec.args))


def query_key(query: QuerySpec) -> tuple:
    """A hashable key of a QuerySpec's content, like ``spec_key``."""
    return (query.name, query.arg, args_key(query.args))


class EpisodeContext:
    """Arrays of one episode for the predicates: ``data``, ``position``, ``parent``, flags, attributes."""

    def __init__(self, episode: Episode, support: WorldSupport | None = None):
        self.episode = episode
        self.support = support or world_support(episode.family)
        self.params: dict[str, Any] = self.support.params
        tl = episode.timeline
        self.T, self.N = tl.n_steps, tl.n_entities
        exists = tl.field("exists").astype(bool) if "exists" in tl.initial else True
        self.data: np.ndarray = tl.field("visible").astype(bool) & exists
        self.position: np.ndarray = tl.field("position").astype(np.float64)
        self.parent: np.ndarray = tl.field("parent").astype(np.int64)
        self.types: np.ndarray = np.asarray(episode.entities.type, dtype=object)
        self.observed: np.ndarray = self.data.any(axis=0)
        self.first_seen: np.ndarray = np.where(self.observed, self.data.argmax(axis=0), -1)
        self.pose: np.ndarray = episode.steps.pose.astype(np.float64)
        self.events: list[NamedEvent] = name_events(episode)
        self._memo: dict[Any, Any] = {}
        self._selections: dict[tuple, np.ndarray | Anchored] = {}
        self._per_spec: dict[tuple, tuple[FilterSpec, Any]] = {}

    # -- cached derived arrays -------------------------------------------------------------------
    def memo(self, key: Any, compute: Callable[[], Any]) -> Any:
        """Compute once per episode (extensions use this for their own derived arrays)."""
        if key not in self._memo:
            self._memo[key] = compute()
        return self._memo[key]

    def per_spec(self, kind: str, spec: FilterSpec, extra: Any, compute: Callable[[], Any]) -> Any:
        """``compute()`` memoised per spec *object* and ``extra`` (hashable): the sampler's programs hold the
        index's own spec objects, so a filter's selection or text is found again without hashing the spec's
        content. The entry holds the spec, so its id is not reused meanwhile."""
        key = (kind, id(spec), extra)
        hit = self._per_spec.get(key)
        if hit is not None and hit[0] is spec:
            return hit[1]
        value = compute()
        self._per_spec[key] = (spec, value)
        return value

    def flag(self, name: str) -> np.ndarray:
        """Bool ``[T, N]`` of a state flag (all False when the episode has no such flag)."""
        tl = self.episode.timeline
        if name not in tl.initial:
            return self.memo(("noflag",), lambda: np.zeros((self.T, self.N), dtype=bool))
        return self.memo(("flag", name), lambda: tl.field(name).astype(bool))

    def attribute(self, name: str) -> np.ndarray:
        """Object ``[N]`` array of a static attribute (None where an entity lacks it)."""
        return self.memo(("attr", name), lambda: np.asarray(self.episode.entities.attribute(name), dtype=object))

    def capable(self, capability: str) -> np.ndarray:
        return self.memo(("cap", capability), lambda: self.episode.entities.has_capability(capability))

    def of_type(self, type_name: str) -> np.ndarray:
        """Bool ``[N]``: entities of one type."""
        return self.memo(("type", type_name), lambda: self.types == type_name)

    def instances(self, type_name: str) -> np.ndarray:
        """Observed entities of one type (int array): the candidate anchors of a named object."""
        return self.memo(("inst", type_name), lambda: np.flatnonzero(self.of_type(type_name) & self.observed))

    def type_codes(self) -> tuple[np.ndarray, np.ndarray]:
        """The distinct type names, sorted, and each entity's index among them (memoised)."""
        return self.memo(("type_codes",), lambda: np.unique(self.types.astype(str), return_inverse=True))

    def observed_types(self) -> list[str]:
        return self.memo(("otypes",), lambda: sorted(set(self.types[self.observed].tolist())))

    @property
    def ego(self) -> np.ndarray:
        """``[T, N, 3]`` positions in the agent's frame at each step (x right, y up, z forward)."""
        return self.memo(("ego",), lambda: to_egocentric(self.position, self.pose[:, None, :3], self.pose[:, None, 3]))

    @property
    def cells(self) -> tuple[np.ndarray, np.ndarray]:
        """``(t, e)`` of every observation and of every event's (step, entity), sorted by entity then step:
        the cells the sampler works on (``build_index``)."""

        def compute() -> tuple[np.ndarray, np.ndarray]:
            cells = self.data.copy()
            for e in self.events:
                cells[e.t, e.entity] = True
            cell_e, cell_t = np.nonzero(cells.T)
            return cell_t, cell_e

        return self.memo(("cells",), compute)

    def flat_cells(self) -> np.ndarray:
        """Int ``[K]``: each of ``cells``' index in a flattened ``[T, N]`` array (memoised)."""
        return self.memo(("flat_cells",), lambda: self.cells[0] * self.N + self.cells[1])

    def at_cells(self, arr: np.ndarray) -> np.ndarray:
        """``arr[ts, es]`` at ``self.cells`` for a ``[T, N, ...]`` array: one gather at flat indices where the
        array is contiguous (numpy's indexing by two index arrays takes several times as long)."""
        if not arr.flags.c_contiguous:
            return arr[self.cells]
        return arr.reshape(self.T * self.N, *arr.shape[2:])[self.flat_cells()]

    def data_at_cells(self) -> np.ndarray:
        """Bool ``[K]``: which of ``cells`` are observations (the others are events only; memoised)."""
        return self.memo(("data_at_cells",), lambda: self.at_cells(self.data))

    def parent_at_cells(self) -> np.ndarray:
        """Int ``[K]``: what holds each cell's entity at its step (-1: nothing; memoised)."""
        return self.memo(("parent_at_cells",), lambda: self.at_cells(self.parent))

    def anchor_position(self, entity: int) -> tuple[float, float, float]:
        """Where an anchor is named: its position when the agent first saw it, rounded to centimetres
        (memoised per entity)."""
        cache = self.memo(("anchor_positions",), dict)
        hit = cache.get(entity)
        if hit is None:
            t = int(self.first_seen[entity]) if self.first_seen[entity] >= 0 else 0
            x, y, z = self.position[t, entity]
            hit = cache[entity] = (round(float(x), 2), round(float(y), 2), round(float(z), 2))
        return hit

    # -- filter selections ------------------------------------------------------------------------
    def selection(self, spec: FilterSpec) -> np.ndarray | Anchored:
        """The filter's selection, memoised per spec (filters are pure); looked up by the spec object first
        (the sampler passes the same objects again and again), then by its content."""
        return self.per_spec("selection", spec, None, lambda: self._selection_by_content(spec))

    def _selection_by_content(self, spec: FilterSpec) -> np.ndarray | Anchored:
        key = spec_key(spec)
        sel = self._selections.get(key)
        if sel is None:
            sel = self._selections[key] = REGISTRY.filter(spec.family, spec.key).fn(self, spec)
        return sel


_CONTEXTS: OrderedDict[int, tuple[weakref.ref, EpisodeContext]] = OrderedDict()
_MAX_CONTEXTS = 8  # a few recent episodes; a context refers to its episode, so the cache is bounded


def context_for(episode: Episode) -> EpisodeContext:
    """The shared context of an episode (built on first use; the last few are kept)."""
    hit = _CONTEXTS.get(id(episode))
    if hit is not None and hit[0]() is episode:
        _CONTEXTS.move_to_end(id(episode))
        return hit[1]
    ctx = EpisodeContext(episode)
    _CONTEXTS[id(episode)] = (weakref.ref(episode), ctx)
    while len(_CONTEXTS) > _MAX_CONTEXTS:
        _CONTEXTS.popitem(last=False)
    return ctx
