"""The re-split stage: an existing dataset's questions, same rows, a new ``split`` column
(:func:`split_again`). ``eqagen resplit`` (:mod:`eqagen.commands.resplit`) runs it over a dataset folder.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from eqagen.curation.config import SplitConfig
from eqagen.curation.partition import HELD_OUT, held_out_column, held_out_of, held_out_share, partitions_scenes
from eqagen.curation.splits import split

# How far the held-out scenes' share of the records may be from the share the new split needs of them for
# the re-split to keep them held out as they are.
HELD_SHARE_TOLERANCE = 0.02


def split_again(questions: pa.Table, config: SplitConfig, seed: int) -> tuple[pa.Table, dict[str, Any]]:
    """The new split. Where the input holds scenes out of train (:func:`held_out_of`) and their records are the
    share the new split needs (``unseen_fraction`` of val and test), the same scenes stay held out: their
    balance groups are made among themselves, so they go to val and test whole and the split draws the rest
    anew. Elsewhere (other ratios or another unseen fraction) the split searches for scenes to hold out."""
    if not partitions_scenes(config):
        return split(questions, config, seed)
    held = held_out_of(questions)
    share = sum(s in held for s in questions["scene_id"].to_pylist()) / max(questions.num_rows, 1) if held else 0.0
    need = held_out_share(config.unseen_fraction, config.ratios)
    if held is None or abs(share - need) > HELD_SHARE_TOLERANCE:  # said, not silent: the search may miss
        out, stats = split(questions, config, seed)
        why = f"the input's held-out scenes hold {share:.3f} of the records, this split needs {need:.3f}"
        note = "searched for scenes to hold out: " + (why if held else "the input holds no scene out of train")
        return out, {**stats, "held_out": note, "input_held_out_share": round(share, 6) if held else None,
                     "warnings": [*stats.get("warnings", []), note]}  # fmt: skip
    marked = questions.append_column(HELD_OUT, held_out_column(questions["scene_id"], held))
    out, stats = split(marked, config, seed)
    kept = f"kept the input's {len(held)} held-out scenes"
    return out.drop_columns([HELD_OUT]), {**stats, "held_out": kept, "input_held_out_share": round(share, 6)}
