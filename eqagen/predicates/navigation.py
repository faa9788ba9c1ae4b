"""What navigation episodes can be asked, registered in the question engine (``eqagen.predicates``).

Imported by the package (``eqagen/predicates/__init__.py``). Their words (phrases, questions, answers) are
in ``eqagen/templates/phrasing.yaml``.

Filter families:

- ``region:in_room`` ("in the bedroom"): objects of the rooms of one category. With two bedrooms the
  answer is grouped per room, each grounded by the room's centre (the region entity's position).
- ``view:final`` ("in view where you stopped"): the objects the final view shows (EXPRESS-Bench asks
  about that view).
- built-in ``property:color``, ``position`` (situated: to your left, in front of the sofa) and
  ``moment`` (before/after you entered the kitchen, passed the piano: events ``enter_region`` and
  ``pass``).

Queries, with their EXPRESS-Bench category:

- ``existsObject`` (existence): "are there any armchairs in the bedroom?"; the kind is one the agent saw
  in the house, in the selection or not, and the ask stage asks the question in houses where the kind
  was seen and where it was not, so the same question gets both answers across houses. ``yes`` with the
  matches, or ``no`` with what the selection holds instead (so a ``no`` is grounded too).
- ``count`` (counting, built-in): objects, or events ("how many times did you enter a bedroom?").
- ``getRoom`` (location): the room category each selected object stands in.
- ``nearestLandmark`` (location): the nearest other object to each selected one (centres within 1.5 m).
- ``getProperty color`` (attribute) and ``listObjects`` (object), built-in.
"""

from __future__ import annotations

import numpy as np

from eqagen.core import FilterSpec, QuerySpec
from eqagen.generators.navigation.palette import COLORS
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.queries import join_values, register_existence_query, seen_entities
from eqagen.predicates.registry import Anchored, Outcome, forbid_pair, register_filter, register_query
from eqagen.predicates.worlds import declare_world_family

LANDMARK_RADIUS = 1.5  # m between centres (floor plane) for "next to"
VOCABULARY = (
    "armchair", "bathtub", "bed", "bookshelf", "cabinet", "chair", "coffee table", "desk", "dining table",
    "dresser", "dryer", "kitchen counter", "lamp", "nightstand", "piano", "plant", "refrigerator", "shoe rack",
    "shower", "sink", "sofa", "stove", "toilet", "tv stand", "wardrobe", "washing machine",
)  # fmt: skip


def attribute_values(attribute: str, type_name: str) -> tuple[str, ...] | None:
    """The colours a category may have: the embedded houses paint any object any of ``COLORS`` (real HM3D
    scenes carry no colour, so no colour is asked there)."""
    return COLORS if attribute == "color" else None


def _broadcast(col: np.ndarray, ctx: EpisodeContext) -> np.ndarray:
    return np.broadcast_to(col, (ctx.T, ctx.N))


def is_object(ctx: EpisodeContext) -> np.ndarray:
    return ctx.attribute("kind") == "object"


def region_entities(ctx: EpisodeContext, category: str) -> np.ndarray:
    """Entity indices of the regions of one room category."""
    kind, cat = ctx.attribute("kind"), ctx.attribute("category")
    return np.flatnonzero((kind == "region") & (cat == category))


# -- region: in_room -----------------------------------------------------------------------------------
def in_room_values(ctx: EpisodeContext, key: str) -> list[FilterSpec]:
    rooms = {r for r in ctx.attribute("room")[ctx.observed & is_object(ctx)] if r and r != "unknown"}
    return [FilterSpec("region", key, r) for r in sorted(rooms)]


@register_filter(
    "region",
    ("in_room",),
    in_room_values,
    slot="post",
    labels={"in_room": "in the room"},
)
def in_room(ctx: EpisodeContext, spec: FilterSpec) -> Anchored:
    anchors = region_entities(ctx, spec.value)
    region_ids = ctx.attribute("region")
    objects = is_object(ctx)
    masks = [_broadcast(objects & (region_ids == region_ids[a]), ctx) for a in anchors.tolist()]
    return Anchored(anchors, np.stack(masks) if masks else np.zeros((0, ctx.T, ctx.N), dtype=bool))


# -- view: final -------------------------------------------------------------------------------------------
def final_view_values(ctx: EpisodeContext, key: str) -> list[FilterSpec]:
    return [FilterSpec("view", key, "final")] if (ctx.data[-1] & is_object(ctx)).any() else []


@register_filter(
    "view",
    ("final",),
    final_view_values,
    slot="post",
    labels={"final": "in the final view"},
)
def final_view(ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray:
    """Every observation of the objects the final view shows (EXPRESS-Bench asks about that view)."""
    return _broadcast(ctx.data[-1] & is_object(ctx), ctx)


# -- queries ----------------------------------------------------------------------------------------------


def exists_args(ctx: EpisodeContext) -> list[QuerySpec]:
    """The kinds of the vocabulary the agent saw: a question proposed about a kind seen somewhere in the house
    is ``yes`` or ``no`` as its filters choose, and asked in other houses where the kind was and was not seen
    (``asks_presence``) it gets both answers. (Asked about every kind, nine in ten questions were about a
    kind the house lacks, and almost no house answered them ``yes``.)"""
    seen = set(ctx.types[ctx.observed & is_object(ctx)].tolist())
    vocab = ctx.params.get("exists_kinds", VOCABULARY)
    return [QuerySpec("existsObject", k) for k in vocab if k in seen]


register_existence_query("existsObject", exists_args, lambda ctx, q: is_object(ctx))


def _has_room(ctx: EpisodeContext, _q: QuerySpec) -> np.ndarray:
    rooms = ctx.attribute("room")
    return is_object(ctx) & np.array([bool(r) and r != "unknown" for r in rooms], dtype=bool)


@register_query(
    "getRoom",
    args=lambda ctx: [QuerySpec("getRoom")] if (_has_room(ctx, None) & ctx.observed).any() else [],
    applies=_has_room,
    answer_type="room",
    categories=("object localization", "location"),
    max_targets=True,
)
def get_room(ctx: EpisodeContext, query: QuerySpec, mask: np.ndarray) -> Outcome | None:
    ents = seen_entities(mask)
    return Outcome(ents, join_values(ctx.attribute("room")[ents])) if ents.size else None


def nearest_landmarks(ctx: EpisodeContext) -> np.ndarray:
    """``[N]`` entity index of each object's nearest other object (centres within the radius, measured in
    the horizontal x-z plane), else -1."""
    objects = np.flatnonzero(is_object(ctx))
    out = np.full(ctx.N, -1, dtype=np.int64)
    pos = ctx.position[0][objects][:, [0, 2]]
    if objects.size > 1:
        gap = np.linalg.norm(pos[:, None] - pos[None], axis=-1)
        np.fill_diagonal(gap, np.inf)
        near = gap.argmin(axis=1)
        ok = gap[np.arange(len(objects)), near] <= ctx.params.get("landmark_radius", LANDMARK_RADIUS)
        out[objects[ok]] = objects[near[ok]]
    return out


@register_query(
    "nearestLandmark",
    args=lambda ctx: [QuerySpec("nearestLandmark")] if (nearest_landmarks(ctx)[ctx.observed] >= 0).any() else [],
    applies=lambda ctx, q: nearest_landmarks(ctx) >= 0,
    answer_type="object",
    categories=("spatial understanding", "location"),
    max_targets=True,
)
def nearest_landmark(ctx: EpisodeContext, query: QuerySpec, mask: np.ndarray) -> Outcome | None:
    ents = seen_entities(mask)
    if ents.size == 0:
        return None
    return Outcome(ents, join_values(ctx.types[nearest_landmarks(ctx)[ents]]))


forbid_pair("region", "in_room", "getRoom", "*")
forbid_pair("property", "*", "getProperty", "=")

declare_world_family(
    "navigation",
    filters={"region": ("in_room",), "view": ("final",), "property": ("color",), "position": None, "moment": None},
    queries={
        "existsObject": None,
        "count": None,
        "getRoom": None,
        "nearestLandmark": None,
        "getProperty": ("color",),
        "listObjects": None,
    },
    params={
        "exists_kinds": VOCABULARY,
        "landmark_radius": LANDMARK_RADIUS,
        # rooms are metres: situated relations between things up to 3 m apart
        "near_radius": 3.0,
        "side_margin": 0.3,
        "agent_side": 0.5,
        "moment_window": 4,
        # the object table a getProperty question is judged against (validity's constant_property)
        "attribute_values": attribute_values,
    },
)
