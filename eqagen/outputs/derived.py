"""A dataset derived from another by one dataset-level stage (``eqagen resplit``, ``eqagen paraphrase``).

:func:`derive` is the whole command, whatever the stage: it verifies the input
(:func:`eqagen.outputs.dataset.open_dataset`), claims the output folder
(:func:`eqagen.outputs.folder.claim_output`), runs the stage on the questions and writes the new questions,
the input's episode shards byte for byte, the manifest, stats.json, the card and the report into staging
and swaps them in (:meth:`eqagen.outputs.folder.DatasetWriter.seal`, the same writer as ``eqagen
generate``'s).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import ValidationError

from eqagen.config import OutputConfig
from eqagen.core import DataFileError
from eqagen.core.stages import StageLog, StageReport
from eqagen.outputs.dataset import Dataset, open_dataset
from eqagen.outputs.folder import DatasetWriter, claim_output, refuse_inside_inputs
from eqagen.outputs.manifest import DatasetIdentity
from eqagen.outputs.schemas import QUESTIONS_SCHEMA
from eqagen.outputs.shards import ShardInfo, sort_rows


def rows_per_shard(source: Dataset) -> int:
    """The input's ``output.rows_per_shard`` (its config's ``output`` section, checked as any config's is)."""
    try:
        return OutputConfig.model_validate(source.manifest.config.get("output", {})).rows_per_shard
    except ValidationError as err:
        problem = err.errors()[0]["msg"]
        raise DataFileError(source.root / "manifest.json", "config.output", problem, "regenerate the dataset") from err


def episode_sources(source: Dataset) -> list[tuple[Path, ShardInfo]]:
    """The input's episode shards with what its (verified) manifest says of them, in path order."""
    info = {s.path: ShardInfo(s.path, s.rows, s.sha256, s.bytes) for s in source.manifest.shards}
    return [(path, info[rel]) for rel, path in sorted(source.shard_paths.items()) if rel.startswith("episodes/")]


@dataclass(frozen=True)
class DerivedStage:
    """The stage that makes a derived dataset: its config section's name and saved settings, its seed, the
    fingerprint of what it makes (its input's shards and its settings), the command that runs it, and the
    stage itself on the input's questions (``run(questions) -> StageReport-able (table, stats)``)."""

    name: str
    settings: dict[str, Any]
    seed: int
    fingerprint: str
    command: str
    implementation: str
    run: Callable[[pa.Table], tuple[pa.Table, dict[str, Any]]]


def derive(
    in_dir: Path,
    out_dir: Path,
    stage_for: Callable[[Dataset], DerivedStage],
    overwrite: bool = False,
    report: bool = True,
) -> dict[str, Any]:
    """Write ``in_dir``'s dataset to ``out_dir`` with ``stage_for(input)`` run on its questions; returns the
    stage's statistics. Nothing is read before the input is verified, nothing written before the output
    folder is claimed, and the folder changes only once the whole dataset is staged."""
    in_dir, out_dir = Path(in_dir), Path(out_dir)
    refuse_inside_inputs(out_dir, [in_dir], "--out")
    source = open_dataset(in_dir)
    stage = stage_for(source)
    questions = source.read_exact("questions", QUESTIONS_SCHEMA)
    with claim_output(out_dir, stage.fingerprint, overwrite, command=stage.command):
        out, stats = stage.run(questions)
        write_derived(source, out_dir, out, stage, stats, report)
    return stats


def write_derived(
    source: Dataset,
    out_dir: Path,
    questions: pa.Table,
    stage: DerivedStage,
    stats: dict[str, Any],
    report: bool = True,
) -> dict[str, Any]:
    """Write the derived dataset into ``out_dir`` (claimed by the caller); returns its manifest.

    The manifest's config is the input's with ``stage.name``'s section set to ``stage.settings``; its
    ``derived`` list is the input's with an entry for this stage (its name, its seed and the input's rows)
    appended, so a paraphrase of a re-split still records the re-split's seed; stats.json keeps the input's
    funnel and stage statistics with ``stage.name``'s recorded anew."""
    writer = DatasetWriter(out_dir, rows_per_shard(source))
    writer.add_questions(sort_rows(questions, "question_id"))
    writer.copy_episode_shards(episode_sources(source))
    entry = {"stage": stage.name, "seed": int(stage.seed), "source_rows": source.raw_manifest["rows"]}
    config = {**source.manifest.config, stage.name: stage.settings}
    identity = DatasetIdentity(
        config, source.manifest.seed, source.manifest.config_hash, stage.fingerprint,
        (*derivation(source.raw_manifest), entry),  # every stage since generate, in order
    )  # fmt: skip
    log = StageLog.inherited(source.stats())
    log.record(StageReport(stage.name, stage.implementation, questions.num_rows, questions.num_rows, stats))
    manifest, _ = writer.seal(identity, log, report)
    return manifest


def derivation(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``derived`` entries of a manifest, oldest first: none for ``generate``'s output (a manifest of
    format 2 written before the list held one entry as a mapping)."""
    derived = manifest.get("derived", [])
    return [derived] if isinstance(derived, dict) else list(derived)
