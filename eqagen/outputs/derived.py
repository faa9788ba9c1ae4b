"""A dataset derived from another by one dataset-level stage (``eqagen resplit``, ``eqagen paraphrase``).

The command verifies its input (:func:`eqagen.outputs.dataset.open_dataset`), runs its stage on the
questions, claims the output folder (:func:`eqagen.outputs.folder.claim_output`) and calls
:func:`write_derived`, which writes the new questions, the input's episode shards byte for byte, the
manifest, stats.json, the card and the report into staging and swaps them in: one writer for every
derived dataset, the same as ``eqagen generate``'s.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import ValidationError

from eqagen.config import OutputConfig
from eqagen.core import DataFileError
from eqagen.curation.audit import EPISODE_COLUMNS
from eqagen.outputs.audit_files import inherited_stats, write_audit_files
from eqagen.outputs.dataset import Dataset
from eqagen.outputs.folder import DatasetWriter
from eqagen.outputs.manifest import DATASET_FILES, build_manifest
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
    """The stage that made a derived dataset: its config section's name and settings, its seed and its
    statistics (for stats.json)."""

    name: str
    settings: dict[str, Any]
    seed: int
    stats: dict[str, Any]


def write_derived(
    source: Dataset, out_dir: Path, questions: pa.Table, stage: DerivedStage, fingerprint: str, report: bool = True
) -> dict[str, Any]:
    """Write the derived dataset into ``out_dir`` (claimed by the caller); returns its manifest.

    The manifest's config is the input's with ``stage.name``'s section set to ``stage.settings``; its
    ``derived`` list is the input's with an entry for this stage (its name, its seed and the input's rows)
    appended, so a paraphrase of a re-split still records the re-split's seed; stats.json keeps the input's
    funnel and stage statistics with ``stage.name``'s replaced."""
    writer = DatasetWriter(out_dir, rows_per_shard(source))
    writer.add_questions(sort_rows(questions, "question_id"))
    writer.copy_episode_shards(episode_sources(source))
    config = {**source.manifest.config, stage.name: stage.settings}
    files = DATASET_FILES if report else ("README.md", "stats.json")
    manifest = build_manifest(
        config, source.manifest.seed, source.manifest.config_hash, writer.close(), files, fingerprint
    )
    entry = {"stage": stage.name, "seed": int(stage.seed), "source_rows": source.raw_manifest["rows"]}
    manifest["derived"] = [*derivation(source.raw_manifest), entry]  # every stage since generate, in order
    funnel, stages = inherited_stats(source.stats())
    stages[stage.name] = stage.stats
    episodes = source.iter_tables("episodes", EPISODE_COLUMNS)
    write_audit_files(writer.staging, questions, episodes, funnel, stages, manifest, report)
    writer.commit(manifest)
    return manifest


def derivation(manifest: dict[str, Any]) -> list[dict[str, Any]]:
    """The ``derived`` entries of a manifest, oldest first: none for ``generate``'s output (a manifest of
    format 2 written before the list held one entry as a mapping)."""
    derived = manifest.get("derived", [])
    return [derived] if isinstance(derived, dict) else list(derived)
