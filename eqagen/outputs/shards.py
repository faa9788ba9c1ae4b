"""The shard writer: sorted rows, fixed writer options, temporary name then rename.

Determinism: rows are sorted by a unique key before they are cut into shards, the table is combined
into one chunk per shard (so no multi-threaded writer can interleave chunks), and every writer option
that could vary is fixed here; Parquet files then carry no timestamp, so the same rows give the same
bytes. A shard appears under its final name only when it is complete (``os.replace`` of a temporary
file in the same directory), so a crash never leaves a half-written ``part-*.parquet``.
"""

from __future__ import annotations

import errno
import os
from dataclasses import dataclass
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from eqagen.curation.audit import sha256_file

# Fixed writer options: the same table always gives the same bytes with a given pyarrow version.
WRITER_OPTIONS = {
    "compression": "zstd",
    "compression_level": 3,
    "use_dictionary": True,
    "write_statistics": True,
    "version": "2.6",
    "data_page_version": "1.0",
    "store_schema": True,
}
ROW_GROUP_ROWS = 2048


@dataclass(frozen=True)
class ShardInfo:
    path: str  # relative to the output directory, with forward slashes
    rows: int
    sha256: str
    bytes: int

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "rows": self.rows, "sha256": self.sha256, "bytes": self.bytes}


sha256_of = sha256_file  # one implementation, shared with the audit that checks these digests


def write_parquet_atomic(table: pa.Table, path: Path) -> None:
    """Write to ``.<name>.tmp`` beside the target, fsync, then rename: readers never see a partial file."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    try:
        pq.write_table(table.combine_chunks(), tmp, row_group_size=ROW_GROUP_ROWS, **WRITER_OPTIONS)
        with open(tmp, "rb") as f:
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except OSError as err:  # a full disk, a read-only directory: no half-written file stays behind
        tmp.unlink(missing_ok=True)
        if err.filename:
            raise
        # pyarrow's errors carry neither the errno nor the file name: name both for the message
        code = err.errno or (errno.ENOSPC if "No space left" in str(err) else errno.EIO)
        raise OSError(code, os.strerror(code), str(path)) from err
    except BaseException:  # Ctrl-C and the like
        tmp.unlink(missing_ok=True)
        raise


def sort_rows(table: pa.Table, key: str) -> pa.Table:
    """Rows in ascending order of a unique key; raises if the key repeats (the order would be ambiguous)."""
    if table.num_rows and pc.count_distinct(table[key]).as_py() != table.num_rows:
        raise ValueError(f"column '{key}' is not unique: rows cannot be ordered deterministically")
    return table.take(pc.sort_indices(table, sort_keys=[(key, "ascending")]))


def write_shards(table: pa.Table, out_dir: Path, subdir: str, sort_key: str, rows_per_shard: int) -> list[ShardInfo]:
    """Sort ``table`` by ``sort_key`` and write it as ``subdir/part-NNNNN.parquet`` under ``out_dir``.

    An empty table still gets one (empty) shard, so every split of the layout exists and has a schema.
    Shards left from an earlier run with more parts are removed.
    """
    if rows_per_shard < 1:
        raise ValueError("rows_per_shard must be at least 1")
    table = sort_rows(table, sort_key)
    target = Path(out_dir) / subdir
    infos = []
    n_shards = max(1, -(-table.num_rows // rows_per_shard))
    for i in range(n_shards):
        part = table.slice(i * rows_per_shard, rows_per_shard)
        path = target / f"part-{i:05d}.parquet"
        write_parquet_atomic(part, path)
        rel = path.relative_to(out_dir).as_posix()
        infos.append(ShardInfo(rel, part.num_rows, sha256_of(path), path.stat().st_size))
    for stale in sorted(target.glob("part-*.parquet"))[n_shards:]:
        stale.unlink()
    return infos
