"""What blockworld episodes can be asked, registered in the question engine (``eqagen.predicates``).

Filter family ``region``: ``quadrant`` (the entity lies in the northwest, northeast, southwest or
southeast quarter of the world) and ``in_structure`` (inside a house, garden, ... ; an object with
several instances is anchored per instance). The built-in ``property:material``, ``position``
(situated: left of you, in front of the wagon) and ``moment`` (after you entered the house: events
``enter``/``exit`` of a structure) families apply as they are.

Queries:

- ``existsKind`` (arg: a kind from the world family's vocabulary, present or not): "are there pigs in
  the southwest?". The answer is ``yes`` with the matching entities, or ``no`` with what the selection
  holds instead (so the filter stays effective and a ``no`` is grounded). Kinds are proposed whether or
  not the episode has them, so the same question text gets both answers across environments.
- ``getMaterial``: a structure's or plant's material (the fence around a garden, a house's walls, a
  tree's wood).
- ``getBiome``: the biome the selected things are in.
- ``getRegion`` (arg ``quadrant`` or ``structure``): where the selected things are.
- the built-in ``count`` ("how many cacti ...") and ``listObjects``.

Everything is read from the entities' static attributes, written from world data by
:mod:`eqagen.generators.blockworld.record`. The words (phrases, questions, answers) are in
``eqagen/templates/phrasing.yaml``.
"""

from __future__ import annotations

import numpy as np

from eqagen.core import FilterSpec, QuerySpec
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.queries import join_values, register_existence_query, seen_entities
from eqagen.predicates.registry import Anchored, Outcome, forbid_pair, register_filter, register_query
from eqagen.predicates.worlds import declare_world_family

QUADRANT_NAMES = ("northwest", "northeast", "southwest", "southeast")
MOB_KINDS = ("bat", "chicken", "cow", "pig", "polar_bear", "rabbit", "sheep", "strider", "villager", "wolf")
PLANT_KINDS = ("cactus", "fungus", "tree")
STRUCTURE_KINDS = ("garden", "house", "wagon", "wall", "well")
CATEGORY_OF = (
    {k: "mob" for k in MOB_KINDS} | {k: "plant" for k in PLANT_KINDS} | {k: "structure" for k in STRUCTURE_KINDS}
)
CATEGORY_OF["chest"] = "container"


def _broadcast(col: np.ndarray, ctx: EpisodeContext) -> np.ndarray:
    return np.broadcast_to(col, (ctx.T, ctx.N))


# -- region: quadrant --------------------------------------------------------------------------------
def quadrant_values(ctx: EpisodeContext, key: str) -> list[FilterSpec]:
    seen = {v for v in ctx.attribute("quadrant")[ctx.observed] if v}
    return [FilterSpec("region", key, q) for q in QUADRANT_NAMES if q in seen]


@register_filter(
    "region",
    ("quadrant",),
    quadrant_values,
    slot="post",
    labels={"quadrant": "in the quadrant"},
)
def in_quadrant(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray:
    return _broadcast(ctx.attribute("quadrant") == spec.value, ctx)


# -- region: inside a structure ------------------------------------------------------------------------
def _structure_of(ctx: EpisodeContext) -> np.ndarray:
    """``[N]`` entity index of the structure each entity is inside (-1: none or not an entity here)."""
    ids = {
        nid: i
        for i, nid in enumerate(ctx.episode.entities.native_id)
        if ctx.episode.entities.attributes[i].get("category") == "structure"
    }
    return np.array([ids.get(v or "", -1) for v in ctx.attribute("inside")], dtype=np.int64)


def in_structure_values(ctx: EpisodeContext, key: str) -> list[FilterSpec]:
    owner = _structure_of(ctx)[ctx.observed]
    kinds = {str(ctx.types[o]) for o in owner if o >= 0 and ctx.observed[o]}
    return [FilterSpec("region", key, k) for k in sorted(kinds)]


@register_filter(
    "region",
    ("in_structure",),
    in_structure_values,
    slot="post",
    labels={"in_structure": "inside the structure"},
)
def in_structure(ctx: EpisodeContext, spec: FilterSpec) -> Anchored:
    anchors = ctx.instances(spec.value)
    owner = _structure_of(ctx)
    masks = (
        np.stack([_broadcast(owner == a, ctx) for a in anchors.tolist()])
        if anchors.size
        else np.zeros((0, ctx.T, ctx.N), dtype=bool)
    )
    return Anchored(anchors, masks)


# -- queries ----------------------------------------------------------------------------------------------


def _category_mask(ctx: EpisodeContext, category: str) -> np.ndarray:
    return ctx.attribute("category") == category


def exists_args(ctx: EpisodeContext) -> list[QuerySpec]:
    """Every kind of the vocabulary whose category the agent saw something of (present or not)."""
    seen_categories = {c for c in ctx.attribute("category")[ctx.observed] if c}
    vocab = ctx.params.get("exists_kinds", tuple(CATEGORY_OF))
    return [QuerySpec("existsKind", k) for k in vocab if CATEGORY_OF.get(k) in seen_categories]


register_existence_query("existsKind", exists_args, lambda ctx, q: _category_mask(ctx, CATEGORY_OF.get(q.arg, "")))


def _has_material(ctx: EpisodeContext, _q: QuerySpec) -> np.ndarray:
    cat = ctx.attribute("category")
    return np.array([bool(m) for m in ctx.attribute("material")]) & ((cat == "structure") | (cat == "plant"))


@register_query(
    "getMaterial",
    args=lambda ctx: [QuerySpec("getMaterial")] if (_has_material(ctx, None) & ctx.observed).any() else [],
    applies=_has_material,
    answer_type="material",
    categories=("attribute recognition", "attribute"),
    max_targets=True,
)
def get_material(ctx: EpisodeContext, query: QuerySpec, mask: np.ndarray) -> Outcome | None:
    ents = seen_entities(mask)
    return Outcome(ents, join_values(ctx.attribute("material")[ents])) if ents.size else None


@register_query(
    "getBiome",
    args=lambda ctx: [QuerySpec("getBiome")] if ctx.observed.any() else [],
    applies=lambda ctx, q: np.array([bool(b) for b in ctx.attribute("biome")], dtype=bool),
    answer_type="biome",
    categories=("world knowledge", "knowledge"),
)
def get_biome(ctx: EpisodeContext, query: QuerySpec, mask: np.ndarray) -> Outcome | None:
    ents = seen_entities(mask)
    return Outcome(ents, join_values(ctx.attribute("biome")[ents])) if ents.size else None


def region_args(ctx: EpisodeContext) -> list[QuerySpec]:
    out = [QuerySpec("getRegion", "quadrant")]
    if (_structure_of(ctx)[ctx.observed] >= 0).any():
        out.append(QuerySpec("getRegion", "structure"))
    return out if ctx.observed.any() else []


@register_query(
    "getRegion",
    args=region_args,
    applies=lambda ctx, q: ctx.attribute("category") != "structure" if q.arg == "structure" else np.ones(ctx.N, bool),
    answer_type=lambda q: "quadrant" if q.arg == "quadrant" else "structure",
    categories=("object localization", "location"),
    max_targets=True,
)
def get_region(ctx: EpisodeContext, query: QuerySpec, mask: np.ndarray) -> Outcome | None:
    """The quadrant of each selected entity, or the kind of structure it is in ("outside" if none)."""
    ents = seen_entities(mask)
    if ents.size == 0:
        return None
    if query.arg == "quadrant":
        return Outcome(ents, join_values(ctx.attribute("quadrant")[ents]))
    owner = _structure_of(ctx)[ents]
    return Outcome(ents, join_values(str(ctx.types[o]) if o >= 0 else "outside" for o in owner.tolist()))


forbid_pair("property", "material", "getMaterial", "*")
forbid_pair("region", "quadrant", "getRegion", "quadrant")
forbid_pair("region", "in_structure", "getRegion", "structure")

declare_world_family(
    "blockworld",
    filters={"region": ("quadrant", "in_structure"), "property": ("material",), "position": None, "moment": None},
    queries={
        "existsKind": None,
        "count": None,
        "getMaterial": None,
        "getBiome": None,
        "getRegion": None,
        "listObjects": None,
    },
    params={
        "exists_kinds": tuple(CATEGORY_OF),
        # blocks are metres: situated relations between things up to 8 blocks apart, 1 block margins
        "near_radius": 8.0,
        "side_margin": 0.5,
        "agent_side": 1.0,
        "moment_window": 4,
    },
)
