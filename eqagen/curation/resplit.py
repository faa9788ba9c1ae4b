"""Re-split an existing dataset folder: same questions and episodes, new ``split`` column.

The input is verified first (:func:`eqagen.outputs.dataset.open_dataset`: manifest, paths, checksums,
row counts, unique ids, stats.json), so a re-split never starts from damaged or edited shards, and
nothing is written before the split itself has succeeded. Questions are re-assigned by
:func:`eqagen.curation.splits.split` and written as new shards per split; episode shards are copied byte
for byte. The output folder is claimed and written like ``eqagen generate``'s
(:mod:`eqagen.outputs.folder`: locked, never over files eqagen did not write or another dataset unless
``overwrite``, staged and swapped in whole), so a killed re-split is simply run again. The new manifest
keeps the input's config (with the new ``split`` section), seed and config hash, and records the
re-split's seed and the input's rows in a ``derived`` entry; stats.json, the dataset card and the
report are rebuilt from the new tables (:func:`eqagen.outputs.derived.write_derived`).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pyarrow as pa

from eqagen.core import DataFileError, stable_hash
from eqagen.curation.config import SplitConfig
from eqagen.curation.partition import HELD_OUT, held_out_column, held_out_of, held_out_share, partitions_scenes
from eqagen.curation.splits import split
from eqagen.outputs.dataset import Dataset, open_dataset
from eqagen.outputs.derived import DerivedStage, write_derived
from eqagen.outputs.folder import claim_output
from eqagen.outputs.schemas import QUESTIONS_SCHEMA
from eqagen.outputs.shards import sha256_of


def resplit(
    in_dir: Path, out_dir: Path, config: SplitConfig, seed: int, report: bool = True, overwrite: bool = False
) -> dict[str, Any]:
    """Write ``in_dir``'s dataset to ``out_dir`` with a new split; returns the split statistics.
    ``report=False`` skips report.html (its plots are the slow part)."""
    in_dir, out_dir = Path(in_dir), Path(out_dir)
    if out_dir.resolve() == in_dir.resolve():
        raise DataFileError(out_dir, None, "--out is the input directory", "write the re-split to a new directory")
    source = open_dataset(in_dir)
    questions, stats = split_again(source.read_exact("questions", QUESTIONS_SCHEMA), config, seed)
    fingerprint = resplit_fingerprint(source, config, seed)
    stage_stats = {"implementation": "eqagen.curation.splits:split", **stats, "resplit": True}
    stage = DerivedStage("split", config.model_dump(mode="json"), seed, stage_stats)
    with claim_output(out_dir, fingerprint, overwrite, command="resplit"):
        write_derived(source, out_dir, questions, stage, fingerprint, report)
    return stats


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
        return out, {**stats, "held_out": note, "warnings": [*stats.get("warnings", []), note]}
    marked = questions.append_column(HELD_OUT, held_out_column(questions["scene_id"], held))
    out, stats = split(marked, config, seed)
    return out.drop_columns([HELD_OUT]), {**stats, "held_out": f"kept the input's {len(held)} held-out scenes"}


def resplit_fingerprint(source: Dataset, config: SplitConfig, seed: int) -> str:
    """What a re-split makes depends on: the input's shards, the split settings (a split file by its
    content) and the seed."""
    split_file = sha256_of(config.split_file) if config.split_file and config.split_file.is_file() else None
    shards = [s.sha256 for s in source.manifest.shards]
    return stable_hash("resplit", shards, config.model_dump(mode="json"), split_file, int(seed))
