"""Re-split an existing output directory: same questions and episodes, new ``split`` column.

The input's manifest checksums are verified first, so a re-split never starts from damaged or edited
shards. Questions are re-assigned by :func:`eqagen.curation.splits.split` and written as new shards
per split with the project's writer; episode shards are copied byte for byte. The new manifest keeps
the input's config (with the new ``split`` section), seed and config hash, and records the re-split
in a ``resplit`` entry; stats.json, the dataset card and the report are rebuilt from the new tables.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pyarrow as pa

from eqagen.core import DataFileError
from eqagen.curation.config import SplitConfig
from eqagen.curation.splits import split
from eqagen.outputs.audit_files import previous_stats, write_audit_files
from eqagen.outputs.manifest import build_manifest, read_manifest, write_manifest
from eqagen.outputs.readers import read_shards
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA
from eqagen.outputs.shards import ShardInfo, sha256_of, write_shards

DEFAULT_ROWS_PER_SHARD = 5000


def resplit(in_dir: Path, out_dir: Path, config: SplitConfig, seed: int, report: bool = True) -> dict[str, Any]:
    """Write ``in_dir``'s dataset to ``out_dir`` with a new split; returns the split statistics.
    ``report=False`` skips report.html (its plots are the slow part)."""
    in_dir, out_dir = Path(in_dir), Path(out_dir)
    _check_out_dir(in_dir, out_dir)
    manifest = read_input_manifest(in_dir)
    shards = [ShardInfo(**s) for s in manifest["shards"]]
    verify_checksums(in_dir, shards)
    questions = read_shards([in_dir / s.path for s in shards if s.path.startswith("questions/")], QUESTIONS_SCHEMA)
    questions, stats = split(questions, config, seed)
    rows_per_shard = _rows_per_shard(manifest)
    written = write_question_shards(questions, out_dir, rows_per_shard)
    written += copy_shards(in_dir, out_dir, [s for s in shards if s.path.startswith("episodes/")])
    new_config = dict(manifest.get("config", {}))
    new_config["split"] = config.model_dump(mode="json")
    new_manifest = build_manifest(new_config, manifest["seed"], manifest["config_hash"], written)
    new_manifest["resplit"] = {"seed": int(seed), "split": new_config["split"], "source_rows": manifest["rows"]}
    write_manifest(new_manifest, out_dir)
    episodes = read_shards([out_dir / s.path for s in written if s.path.startswith("episodes/")], EPISODES_SCHEMA)
    old = previous_stats(in_dir)
    split_stats = {"implementation": "eqagen.curation.splits:split", **stats, "resplit": True}
    stages = {**old.get("stages", {}), "split": split_stats}
    write_audit_files(out_dir, questions, episodes, old.get("funnel", {}), stages, new_manifest, report)
    return stats


def _check_out_dir(in_dir: Path, out_dir: Path) -> None:
    if out_dir.resolve() == in_dir.resolve():
        raise DataFileError(out_dir, None, "--out is the input directory", "write the re-split to a new directory")
    if out_dir.exists() and any(out_dir.iterdir()):
        raise DataFileError(out_dir, None, "output directory is not empty", "pass a new or empty directory")


def read_input_manifest(in_dir: Path) -> dict[str, Any]:
    path = in_dir / "manifest.json"
    if not path.is_file():
        raise DataFileError(path, None, "no manifest.json", "pass a directory written by `eqagen generate`")
    try:
        manifest = read_manifest(in_dir)
    except json.JSONDecodeError as err:
        raise DataFileError(path, None, f"not valid JSON ({err})", "regenerate the dataset") from err
    for key in ("shards", "seed", "config_hash", "rows"):
        if key not in manifest:
            raise DataFileError(path, key, "missing from the manifest", "regenerate the dataset")
    return manifest


def verify_checksums(in_dir: Path, shards: list[ShardInfo]) -> None:
    """Every shard the manifest lists exists and has its recorded sha256."""
    for shard in shards:
        path = in_dir / shard.path
        if not path.is_file():
            raise DataFileError(path, "sha256", "shard listed in manifest.json is missing", "restore the file")
        actual = sha256_of(path)
        if actual != shard.sha256:
            raise DataFileError(
                path,
                "sha256",
                f"checksum {actual[:12]}... differs from the manifest's {shard.sha256[:12]}...",
                "the shard was changed or damaged; restore it or regenerate the dataset",
            )


def _rows_per_shard(manifest: dict[str, Any]) -> int:
    output = manifest.get("config", {}).get("output", {})
    return int(output.get("rows_per_shard", DEFAULT_ROWS_PER_SHARD)) if isinstance(output, dict) else 5000


def write_question_shards(questions: pa.Table, out_dir: Path, rows_per_shard: int) -> list[ShardInfo]:
    """One directory per split (train, val, test), every split present even when empty."""
    import pyarrow.compute as pc

    shards: list[ShardInfo] = []
    for name in ("train", "val", "test"):
        part = questions.filter(pc.equal(questions["split"], name))
        shards += write_shards(part, out_dir, f"questions/split={name}", "question_id", rows_per_shard)
    return shards


def copy_shards(in_dir: Path, out_dir: Path, shards: list[ShardInfo]) -> list[ShardInfo]:
    for shard in shards:
        target = out_dir / shard.path
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(in_dir / shard.path, target)
    return list(shards)
