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

``bbox_extent`` is nominal: the episodes hold positions, not shapes, so an extent comes from the object's
size class (household), its region's footprint (a room, a Minecraft structure) or one block (Minecraft).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eqagen.core import ConfigError, Episode, Region
from eqagen.outputs.history import is_area, object_caption, short_floats
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.filters import encloses, vertical_relation

# metres per side of a nominal box, by the household object table's size classes
SIZE_EXTENT = {"small": 0.15, "medium": 0.5, "large": 1.0}
BLOCK_EXTENT = 1.0  # a Minecraft entity is drawn as one block
DEFAULT_EXTENT = 0.5


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


def nominal_extent(episode: Episode, e: int) -> list[float]:
    """The box side lengths ``[x, y, z]`` of entity ``e`` (nominal: see the module docstring)."""
    region = area_region(episode, e)
    if region is not None:
        f = np.asarray(region.footprint, dtype=np.float64)
        return [round(float(v), 3) for v in f[3:] - f[:3]]
    if episode.family == "blockworld":
        return [BLOCK_EXTENT] * 3
    return [SIZE_EXTENT.get(episode.entities.attributes[e].get("size", ""), DEFAULT_EXTENT)] * 3


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
    objects = [
        {
            "id": i,
            "instance_id": ents.instance_id[e],
            "object_tag": ents.type[e],
            "caption": object_caption(
                ents.attributes[e], ents.type[e], [f for f in ctx.flags if f != "exists" and ctx.flags[f][t, e]]
            ),
            "bbox_center": short_floats(episode.timeline.field("position")[t, e]),
            "bbox_extent": nominal_extent(episode, e),
        }
        for i, e in enumerate(listed.tolist())
    ]
    edges = receptacle_edges(ctx, t, listed) + vertical_edges(ctx, t, listed)
    return {"episode_id": episode.episode_id, "step": t, "objects": objects, "edges": sorted(edges)}
