"""The shard writers: fixed writer options, temporary name then rename.

Determinism: rows come in a fixed order (sorted by a unique key, or streamed in batch order), each
shard is combined into one chunk (so no multi-threaded writer can interleave chunks), and every writer option
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


class ShardWriter:
    """Tables appended in order, cut into ``subdir/part-NNNNN.parquet`` shards of ``rows_per_shard`` rows as
    they come: at most one shard's rows are held, so a dataset of any size streams through.

    :meth:`close` writes the rest (an empty table still gets one, empty, shard, so every split of the
    layout exists and has a schema) and removes shards left from an earlier run with more parts.
    """

    def __init__(self, out_dir: Path, subdir: str, rows_per_shard: int, schema: pa.Schema):
        if rows_per_shard < 1:
            raise ValueError("rows_per_shard must be at least 1")
        self.out_dir, self.target = Path(out_dir), Path(out_dir) / subdir
        self.rows_per_shard, self.schema = rows_per_shard, schema
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.infos: list[ShardInfo] = []

    def add(self, table: pa.Table) -> None:
        if table.num_rows:
            self.pending.append(table)
            self.pending_rows += table.num_rows
        while self.pending_rows >= self.rows_per_shard:
            self._write_next(self.rows_per_shard)

    def close(self) -> list[ShardInfo]:
        if self.pending_rows or not self.infos:
            self._write_next(self.pending_rows)
        for stale in sorted(self.target.glob("part-*.parquet"))[len(self.infos) :]:
            stale.unlink()
        return self.infos

    def _write_next(self, n_rows: int) -> None:
        table = pa.concat_tables(self.pending) if self.pending else self.schema.empty_table()
        part, rest = table.slice(0, n_rows), table.slice(n_rows)
        path = self.target / f"part-{len(self.infos):05d}.parquet"
        write_parquet_atomic(part, path)
        rel = path.relative_to(self.out_dir).as_posix()
        self.infos.append(ShardInfo(rel, part.num_rows, sha256_of(path), path.stat().st_size))
        self.pending, self.pending_rows = ([rest] if rest.num_rows else []), rest.num_rows


def write_shards(table: pa.Table, out_dir: Path, subdir: str, sort_key: str, rows_per_shard: int) -> list[ShardInfo]:
    """Sort ``table`` by ``sort_key`` and write it as ``subdir/part-NNNNN.parquet`` under ``out_dir``
    (a table already in memory; :class:`ShardWriter` streams one)."""
    writer = ShardWriter(out_dir, subdir, rows_per_shard, table.schema)
    writer.add(sort_rows(table, sort_key))
    return writer.close()
