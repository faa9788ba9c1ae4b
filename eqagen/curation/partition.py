"""Held-out scenes, drawn before balancing (TAG-EQA: half of val and test from scenes unseen in train).

The scenes are partitioned first, with a seeded draw; a question proposed in a scene is asked and balanced
only among scenes of its own partition (``eqagen.flows.ask``), so a held-out scene's questions form groups of
held-out scenes alone and can go to val and test whole, without any train question touching those scenes.
"""

from __future__ import annotations

from collections.abc import Iterable

import numpy as np
import pyarrow as pa

from eqagen.core import derive_rng
from eqagen.curation.columns import encode

HELD_OUT = "held_out"  # the key table's bool column: the row's scene is held out


def held_out_share(unseen_fraction: float, ratios: tuple[float, float, float]) -> float:
    """The share of records the held-out scenes must supply: ``unseen_fraction`` of val and of test."""
    return unseen_fraction * (ratios[1] + ratios[2])


# Held-out scenes are drawn this much more than their share of the records: the held-out partition loses the
# groups whose text the seen partition keeps too (``compose``), and small partitions balance fewer questions.
SCENE_MARGIN = 1.6


def held_out_scene_share(unseen_fraction: float, ratios: tuple[float, float, float]) -> float:
    """The share of scenes to hold out: the records' share with its margin, at most a half."""
    return min(0.5, SCENE_MARGIN * held_out_share(unseen_fraction, ratios))


def held_out_scenes(scene_ids: Iterable[str], share: float, seed: int) -> set[str]:
    """``share`` of the distinct scenes (rounded, at least one when ``share > 0`` and there are two or more
    scenes), drawn with the seed's own generator in the order of the sorted scene ids (so the draw depends
    on the scenes and the seed alone)."""
    scenes = sorted(set(scene_ids))
    if share <= 0 or len(scenes) < 2:
        return set()
    n = min(len(scenes) - 1, max(1, round(share * len(scenes))))
    order = derive_rng(seed, "curation", "held-out-scenes").permutation(len(scenes))
    return {scenes[i] for i in order[:n]}


def held_out_column(scene_column: pa.ChunkedArray | pa.Array, held_out: set[str]) -> pa.Array:
    """Per row: whether its scene is held out."""
    code, values = encode(scene_column)
    return pa.array(np.array([v in held_out for v in values], dtype=bool)[code], pa.bool_())


def held_out_rows(column: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """The :data:`HELD_OUT` column as a bool array."""
    code, values = encode(column, numeric=True)
    return np.array([bool(v) for v in values], dtype=bool)[code] if len(code) else np.zeros(0, dtype=bool)


def held_out_of(questions: pa.Table) -> set[str] | None:
    """The held-out partition of a split dataset: the scenes that no train question uses (None where that is
    no partition: no such scene, or no train question at all). A dataset made by ``eqagen generate`` holds
    out such scenes by construction, and its balance groups never mix them with others."""
    scenes, splits = questions["scene_id"].to_pylist(), questions["split"].to_pylist()
    in_train = {s for s, sp in zip(scenes, splits) if sp == "train"}
    held = set(scenes) - in_train
    return held if held and in_train else None


def partitions_scenes(split: object) -> bool:
    """Whether a split config holds scenes out by partition (a split by question, no split file, some unseen
    share)."""
    return split.by == "question" and split.split_file is None and split.unseen_fraction > 0
