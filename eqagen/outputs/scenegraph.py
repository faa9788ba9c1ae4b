"""A ground-truth scene graph of an episode at one step, in ConceptGraphs' layout (TAG-EQA's LLM + ConceptGraphs
baseline reads it).

::

    {"episode_id", "step", "objects": [{"id", "instance_id", "object_tag", "caption", "bbox_center",
     "bbox_extent"}], "edges": [[i, j, relation]]}

The objects are those the agent had seen by ``step`` (and that still exist then), at their true state at
that step; ``id`` is the object's index in the list, as ConceptGraphs numbers its objects. An edge ``[i, j,
"on" | "in"]`` says object i rests on or inside object j (its receptacle then; "in" where j encloses its
contents, a fridge or a drawer); ``[i, j, "above" | "under"]`` is the predicates' own vertical rule
(:func:`eqagen.predicates.filters.vertical_relation`), between objects of different units.

``bbox_center`` and ``bbox_extent`` are the box the above/under relation reads, so that a reader can check an
edge against the boxes: a household object's per-type box (``EpisodeContext.half_width``, ``box_bottom``,
``box_top``: eqagen/predicates/extents.py; its footprint square and axis-aligned), an area's footprint (a
room, a Minecraft structure), one block (Minecraft). Where the world family knows no box for a type, the
extent is nominal (0.5 m), centred on the position.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eqagen.core import ConfigError, Episode, Region
from eqagen.outputs.history import is_area, object_caption, short_floats
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.filters import encloses, vertical_relation

BLOCK_EXTENT = 1.0  # a Minecraft entity is drawn as one block
DEFAULT_EXTENT = 0.5  # m per side where the world family knows no box for the type


def check_step(episode: Episode, step: int | None) -> int:
    """``step`` (default: the last) as a valid step index of ``episode``."""
    last = episode.n_steps - 1
    if step is None:
        return last
    if not 0 <= step <= last:
        raise ConfigError("--at-step", f"step {step} is outside episode {episode.episode_id}", f"0..{last}")
    return step


def area_region(episode: Episode, e: int) -> Region | None:
    """The region an area entity stands for: a room names it as ``region``, a structure as ``name``."""
    attrs = episode.entities.attributes[e]
    if not is_area(attrs):
        return None
    wanted = attrs.get("region") if attrs.get("kind") == "region" else attrs.get("name")
    return next((r for r in episode.regions if r.region_id == wanted), None)


def entity_box(ctx: EpisodeContext, e: int, t: int) -> tuple[list[float], list[float]]:
    """The centre and side lengths ``[x, y, z]`` of entity ``e``'s box at step ``t`` (see the module
    docstring)."""
    position = ctx.position[t, e]
    region = area_region(ctx.episode, e)
    if region is not None:
        f = np.asarray(region.footprint, dtype=np.float64)
        return short_floats(position), [round(float(v), 3) for v in f[3:] - f[:3]]
    if ctx.episode.family == "blockworld":
        return short_floats(position), [BLOCK_EXTENT] * 3
    half, bottom, top = float(ctx.half_width[e]), float(ctx.box_bottom[e]), float(ctx.box_top[e])
    if half == 0.0 and top == bottom:  # no box known for the type
        return short_floats(position), [DEFAULT_EXTENT] * 3
    centre = position + np.array([0.0, (bottom + top) / 2, 0.0])  # to the millimetre, as the extents
    return [round(float(v), 3) for v in centre], [round(2 * half, 3), round(top - bottom, 3), round(2 * half, 3)]


def graph_objects(ctx: EpisodeContext, step: int) -> np.ndarray:
    """The entities seen by ``step`` that exist at ``step``, in entity order."""
    exists = ctx.flag("exists")[step] if "exists" in ctx.flags else np.ones(ctx.N, dtype=bool)
    return np.flatnonzero(ctx.data[: step + 1].any(axis=0) & exists)


def receptacle_edges(ctx: EpisodeContext, step: int, listed: np.ndarray) -> list[list]:
    slot = {int(e): i for i, e in enumerate(listed.tolist())}
    inside = encloses(ctx)
    edges = []
    for e in listed.tolist():
        p = int(ctx.parent[step, e])
        if p in slot:
            edges.append([slot[e], slot[p], "in" if inside[p] else "on"])
    return edges


def vertical_edges(ctx: EpisodeContext, step: int, listed: np.ndarray) -> list[list]:
    """``above``/``under`` between listed objects at ``step``, by the predicates' vertical rule."""
    edges = []
    for key in ("above", "under"):
        i, j = np.nonzero(vertical_relation(ctx, key, np.int64(step), listed[:, None], listed[None, :]))
        edges += [[int(a), int(b), key] for a, b in zip(i.tolist(), j.tolist())]
    return edges


def scene_graph(episode: Episode, step: int | None = None) -> dict[str, Any]:
    """The scene graph of ``episode`` at ``step`` (default: its last step)."""
    t = check_step(episode, step)
    ctx = EpisodeContext(episode)
    listed = graph_objects(ctx, t)
    ents = episode.entities
    objects = []
    for i, e in enumerate(listed.tolist()):
        centre, extent = entity_box(ctx, e, t)
        flags = [f for f in ctx.flags if f != "exists" and ctx.flags[f][t, e]]
        objects.append(
            {
                "id": i,
                "instance_id": ents.instance_id[e],
                "object_tag": ents.type[e],
                "caption": object_caption(ents.attributes[e], ents.type[e], flags),
                "bbox_center": centre,
                "bbox_extent": extent,
            }
        )
    edges = receptacle_edges(ctx, t, listed) + vertical_edges(ctx, t, listed)
    return {"episode_id": episode.episode_id, "step": t, "objects": objects, "edges": sorted(edges)}
