"""The per-episode evaluation context: the episode's ``[t, entity]`` arrays, built once and shared.

Filters and queries read only this object. DATA, the set of observations, is ``ctx.data``: the
``(t, entity)`` pairs the agent saw (visible) while the entity existed. Every field is computed when the
context is built (an episode's arrays are small: about 100 steps by 30 entities in a household), so
nothing is memoised behind the predicates' backs: a filter's selection is its definition, called.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np

from eqagen.core import Episode, FilterSpec, QuerySpec, number_events, to_egocentric
from eqagen.predicates.extents import enclosed_parts, entity_boxes, fixed_hosts, units
from eqagen.predicates.worlds import WorldSupport, world_support


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
        self.flags: dict[str, np.ndarray] = {f: tl.field(f).astype(bool) for f in tl.flags}
        entities = episode.entities
        names = sorted({k for a in entities.attributes for k in a})
        self.attributes: dict[str, np.ndarray] = {k: np.asarray(entities.attribute(k), dtype=object) for k in names}
        self.capabilities: dict[str, np.ndarray] = capability_masks(entities.capabilities)
        # the distinct type names, sorted, and each entity's index among them
        self.type_names, self.type_code = np.unique(self.types.astype(str), return_inverse=True)
        # [T, N, 3] positions in the agent's frame at each step (x right, y up, z forward)
        self.ego: np.ndarray = to_egocentric(self.position, self.pose[:, None, :3], self.pose[:, None, 3])
        # every observation (t, e), in step order, and where it was in the agent's frame ([O, 3]): what the
        # relations to you read
        self.obs_t, self.obs_e = np.nonzero(self.data)
        flat_ego = self.ego.reshape(-1, 3)  # gathering rows by flat index is cheaper than [ts, es]
        self.obs_ego: np.ndarray = flat_ego[self.obs_t * self.N + self.obs_e]
        # every ordered pair of distinct entities seen at the same step t, and e's offset from a in the
        # agent's frame at t ([P, 3]): what the situated relations read
        self.pair_t, self.pair_e, self.pair_a = covisible_pairs(self.obs_t, self.obs_e, self.T)
        self.pair_offset: np.ndarray = (
            flat_ego[self.pair_t * self.N + self.pair_e] - flat_ego[self.pair_t * self.N + self.pair_a]
        )
        # (t, e) of every observation and of every event's (step, entity), sorted by entity then step: the
        # cells the sampler's index works on
        self.cell_t, self.cell_e = observation_and_event_cells(self.data, self.events)
        self.flat_cells: np.ndarray = self.cell_t * self.N + self.cell_e  # each cell's index in a flat [T, N]
        # each entity's box ([N]: half the footprint's side, bottom and top relative to its position's height)
        # and unit at each step ([T, N]): what above/under read (eqagen/predicates/extents.py)
        self.half_width, self.box_bottom, self.box_top, mount = entity_boxes(
            self.type_names, self.type_code, self.params.get("extent")
        )
        start = self.position[0] if self.T else np.zeros((self.N, 3))
        host = fixed_hosts(start, self.half_width, self.box_bottom, self.box_top, mount)
        self.unit: np.ndarray = units(self.parent, host)
        self.enclosed: np.ndarray = enclosed_parts(start, self.box_bottom, self.box_top, host)

    def flag(self, name: str) -> np.ndarray:
        """Bool ``[T, N]`` of a state flag (all False when the episode has no such flag)."""
        hit = self.flags.get(name)
        return hit if hit is not None else np.zeros((self.T, self.N), dtype=bool)

    def attribute(self, name: str) -> np.ndarray:
        """Object ``[N]`` array of a static attribute (None where an entity lacks it)."""
        hit = self.attributes.get(name)
        return hit if hit is not None else np.full(self.N, None, dtype=object)

    def capable(self, capability: str) -> np.ndarray:
        """Bool ``[N]``: entities with a capability (openable, toggleable, ...)."""
        hit = self.capabilities.get(capability)
        return hit if hit is not None else np.zeros(self.N, dtype=bool)

    def of_type(self, type_name: str) -> np.ndarray:
        """Bool ``[N]``: entities of one type."""
        return self.types == type_name

    def instances(self, type_name: str) -> np.ndarray:
        """Observed entities of one type (int array): the candidate anchors of a named object."""
        return np.flatnonzero(self.of_type(type_name) & self.observed)

    def observed_types(self) -> list[str]:
        return sorted(set(self.types[self.observed].tolist()))

    def at_cells(self, arr: np.ndarray) -> np.ndarray:
        """``arr[t, e]`` at every cell, for a ``[T, N, ...]`` array."""
        return arr[self.cell_t, self.cell_e]

    def cell_index(self, t: np.ndarray, e: np.ndarray) -> np.ndarray:
        """The index among the cells of each (t, e), which must be cells (observations or events): cells are
        sorted by entity then step, so their keys ``e * T + t`` ascend."""
        return np.searchsorted(self.cell_e * self.T + self.cell_t, e * self.T + t)

    def anchor_position(self, entity: int) -> tuple[float, float, float]:
        """Where an anchor is named: its position when the agent first saw it, in metres rounded to the
        centimetre."""
        t = int(self.first_seen[entity]) if self.first_seen[entity] >= 0 else 0
        x, y, z = self.position[t, entity].tolist()
        return (round(x, 2), round(y, 2), round(z, 2))

    def where_named(self, anchors: np.ndarray) -> np.ndarray:
        """``[G, T]``: the steps at which each anchor stands where a question names it (``anchor_position``:
        where the agent first saw it)."""
        named = self.position[np.maximum(self.first_seen[anchors], 0), anchors]  # [G, 3]
        return (self.position[:, anchors, :] == named[None, :, :]).all(axis=2).T


def capability_masks(capabilities: list[tuple[str, ...]]) -> dict[str, np.ndarray]:
    """Per capability any entity has (sorted): bool ``[N]``, the entities that have it (one pass over them)."""
    out: dict[str, np.ndarray] = {}
    for i, caps in enumerate(capabilities):
        for c in caps:
            if c not in out:
                out[c] = np.zeros(len(capabilities), dtype=bool)
            out[c][i] = True
    return dict(sorted(out.items()))


def covisible_pairs(ts: np.ndarray, es: np.ndarray, n_steps: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(t, e, a)`` for every ordered pair of distinct entities seen at the same step (vectorised), from the
    observations ``(ts, es)`` sorted by step."""
    counts = np.bincount(ts, minlength=n_steps)
    first = np.cumsum(counts) - counts
    partners = counts[ts]
    i = np.repeat(np.arange(ts.size), partners)
    offset = np.arange(i.size) - np.repeat(np.cumsum(partners) - partners, partners)
    j = first[ts[i]] + offset
    keep = es[i] != es[j]
    return ts[i][keep], es[i][keep], es[j][keep]


def observation_and_event_cells(data: np.ndarray, events: list[NamedEvent]) -> tuple[np.ndarray, np.ndarray]:
    """``(cell_t, cell_e)``: the observations and the events' (step, entity), sorted by entity then step."""
    cells = data.copy()
    for e in events:
        cells[e.t, e.entity] = True
    cell_e, cell_t = np.nonzero(cells.T)
    return cell_t, cell_e


def context_for(episode: Episode) -> EpisodeContext:
    """The evaluation context of an episode (built anew: callers keep it for as long as they need it)."""
    return EpisodeContext(episode)
