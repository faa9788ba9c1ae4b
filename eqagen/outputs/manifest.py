"""``manifest.json``: what was made, from what, and the checksum of every shard.

Holds the resolved config, the seed, the versions of eqagen and of the libraries that shape the bytes,
the row counts per table and split, the sha256 of every shard, the other files the dataset owns
(``files``) and the ``fingerprint`` of what made it (the config hash for ``eqagen generate``; a
derived dataset's command hashes its input and settings). No timestamps or host names: two runs of the
same config and seed write the same manifest (timings go to stats.json, not here).

:func:`load_manifest` reads one back checked field by field, so a damaged or hand-edited manifest is a
:class:`~eqagen.core.DataFileError` naming the field, never a traceback.
"""

from __future__ import annotations

import json
import platform
from collections.abc import Iterable
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from eqagen.core import DataFileError
from eqagen.core.limits import load_json
from eqagen.outputs.atomic import write_text_atomic
from eqagen.outputs.shards import ShardInfo, shard_prefix

MANIFEST_NAME = "manifest.json"
FORMAT_VERSION = 2  # 2: questions/<split>-NNNNN-of-MMMMM.parquet; 1: questions/split=<split>/part-NNNNN.parquet
# The files beside the shards that a dataset folder may own (listed in the manifest's ``files``).
DATASET_FILES = ("README.md", "report.html", "stats.json")
VERSIONED_PACKAGES = ("eqagen", "numpy", "pyarrow", "pydantic", "jinja2", "scipy", "networkx", "prefect")
REGENERATE = "regenerate the dataset with the command that made it"


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
        table = s.path.split("/")[0]
        if table == "episodes":
            counts["episodes"] += s.rows
        elif table == "questions":
            split = shard_prefix(s.path)
            counts["questions"][split] = counts["questions"].get(split, 0) + s.rows
            counts["questions_total"] += s.rows
    counts["questions"] = dict(sorted(counts["questions"].items()))
    return counts


def build_manifest(
    config: dict[str, Any],
    seed: int,
    config_hash: str,
    shards: list[ShardInfo],
    files: Iterable[str] = DATASET_FILES,
    fingerprint: str | None = None,
) -> dict[str, Any]:
    return {
        "format": "eqagen-dataset",
        "format_version": FORMAT_VERSION,
        "seed": int(seed),
        "config_hash": config_hash,
        "fingerprint": fingerprint or config_hash,
        "config": config,
        "versions": package_versions(),
        "rows": row_counts(shards),
        "shards": [s.to_dict() for s in sorted(shards, key=lambda s: s.path)],
        "files": sorted(files),
    }


@dataclass(frozen=True)
class DatasetIdentity:
    """What a dataset's manifest says made it: the resolved config, the seed, the config hash, the
    fingerprint (None: the config hash) and, for a derived dataset, every stage since generate, in order."""

    config: dict[str, Any]
    seed: int
    config_hash: str
    fingerprint: str | None = None
    derived: tuple[dict[str, Any], ...] = ()

    def manifest(self, shards: list[ShardInfo], files: Iterable[str] = DATASET_FILES) -> dict[str, Any]:
        manifest = build_manifest(self.config, self.seed, self.config_hash, shards, files, self.fingerprint)
        if self.derived:
            manifest["derived"] = list(self.derived)
        return manifest


def write_json_atomic(data: Any, path: Path) -> None:
    write_text_atomic(Path(path), json.dumps(data, indent=2, sort_keys=True) + "\n")


def write_manifest(manifest: dict[str, Any], out_dir: Path) -> Path:
    path = Path(out_dir) / MANIFEST_NAME
    write_json_atomic(manifest, path)
    return path


def read_manifest(out_dir: Path) -> dict[str, Any]:
    """The manifest as it is on disk, unchecked (see :func:`load_manifest`)."""
    return load_json(Path(out_dir) / MANIFEST_NAME, REGENERATE)


# --- the manifest checked ---------------------------------------------------------------------------


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class ShardEntry(_Strict):
    path: str = Field(min_length=1)
    rows: int = Field(ge=0)
    sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    bytes: int = Field(ge=0)


class RowCounts(_Strict):
    episodes: int = Field(ge=0)
    questions: dict[str, int]
    questions_total: int = Field(ge=0)


class Manifest(_Strict):
    """The fields eqagen relies on; other keys (``versions``, ``resplit``, ...) are kept, unchecked."""

    model_config = ConfigDict(extra="allow", strict=True, frozen=True)
    format: Literal["eqagen-dataset"]
    format_version: int = Field(ge=1, le=FORMAT_VERSION)
    seed: int
    config_hash: str
    fingerprint: str | None = None  # format 1 had none: its config hash stands in
    config: dict[str, Any]
    rows: RowCounts
    shards: list[ShardEntry]
    files: list[Literal["README.md", "report.html", "stats.json"]] = list(DATASET_FILES)

    @property
    def made_by(self) -> str:
        return self.fingerprint or self.config_hash


def load_manifest(out_dir: Path) -> Manifest:
    """``out_dir``'s manifest, every field eqagen uses checked; a DataFileError naming the field otherwise."""
    path = Path(out_dir) / MANIFEST_NAME
    if not path.is_file():
        raise DataFileError(path, None, "no manifest.json", "pass a dataset folder written by eqagen")
    data = load_json(path, REGENERATE)
    if not isinstance(data, dict):
        raise DataFileError(path, None, f"a JSON object expected, got {type(data).__name__}", REGENERATE)
    try:
        return Manifest.model_validate(data)
    except ValidationError as err:
        first = err.errors()[0]
        field = ".".join(str(p) for p in first["loc"]) or None
        more = f" (and {err.error_count() - 1} more problem(s))" if err.error_count() > 1 else ""
        raise DataFileError(path, field, f"{first['msg']}{more}", REGENERATE) from None
