"""``manifest.json``: what was made, from what, and the checksum of every shard.

Holds the resolved config, the seed, the versions of eqagen and of the libraries that shape the bytes,
the row counts per table and split, and the sha256 of every shard. No timestamps or host names: two
runs of the same config and seed write the same manifest (timings go to stats.json, not here).
"""

from __future__ import annotations

import json
import os
import platform
from collections.abc import Iterable
from importlib import metadata
from pathlib import Path
from typing import Any

from eqagen.outputs.shards import ShardInfo

MANIFEST_NAME = "manifest.json"
VERSIONED_PACKAGES = ("eqagen", "numpy", "pyarrow", "pydantic", "jinja2", "scipy", "networkx", "prefect")


def package_versions(names: Iterable[str] = VERSIONED_PACKAGES) -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in names:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def row_counts(shards: list[ShardInfo]) -> dict[str, Any]:
    """``{"episodes": n, "questions": {"train": n, ...}, "questions_total": n}``."""
    counts: dict[str, Any] = {"episodes": 0, "questions": {}, "questions_total": 0}
    for s in shards:
        parts = s.path.split("/")
        if parts[0] == "episodes":
            counts["episodes"] += s.rows
        elif parts[0] == "questions":
            split = parts[1].removeprefix("split=")
            counts["questions"][split] = counts["questions"].get(split, 0) + s.rows
            counts["questions_total"] += s.rows
    counts["questions"] = dict(sorted(counts["questions"].items()))
    return counts


def build_manifest(config: dict[str, Any], seed: int, config_hash: str, shards: list[ShardInfo]) -> dict[str, Any]:
    return {
        "format": "eqagen-dataset",
        "format_version": 1,
        "seed": int(seed),
        "config_hash": config_hash,
        "config": config,
        "versions": package_versions(),
        "rows": row_counts(shards),
        "shards": [s.to_dict() for s in sorted(shards, key=lambda s: s.path)],
    }


def write_json_atomic(data: Any, path: Path) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        tmp.write_text(json.dumps(data, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        os.replace(tmp, path)
    except BaseException:  # no half-written file stays behind
        tmp.unlink(missing_ok=True)
        raise


def write_manifest(manifest: dict[str, Any], out_dir: Path) -> Path:
    path = Path(out_dir) / MANIFEST_NAME
    write_json_atomic(manifest, path)
    return path


def read_manifest(out_dir: Path) -> dict[str, Any]:
    return json.loads((Path(out_dir) / MANIFEST_NAME).read_text(encoding="utf-8"))
