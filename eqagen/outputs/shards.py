"""The shard writers: fixed writer options, Hugging Face's shard names, atomic files.

Determinism: rows come in a fixed order (sorted by a unique key, or streamed in batch order), each
shard is combined into one chunk (so no multi-threaded writer can interleave chunks), and every writer option
that could vary is fixed here; Parquet files then carry no timestamp, so the same rows give the same
bytes. A shard is written to a temporary name, fsynced and renamed (:mod:`eqagen.outputs.atomic`), so a
crash never leaves a half-written shard.

Names follow the Hugging Face convention, ``<table>/<prefix>-NNNNN-of-MMMMM.parquet`` (the prefix is the
split of a questions shard, ``episodes`` for an episodes shard): a plain directory read
(``pd.read_parquet("OUT/questions")``) finds no Hive partition to trip on, and the dataset card maps
each split to ``questions/<split>-*.parquet``. The total is known only when the writer closes, so the
shards are written as ``<prefix>-NNNNN.parquet`` and renamed then; writers work in a staging directory
(:mod:`eqagen.outputs.folder`), where no reader looks.
"""

from __future__ import annotations

import errno
import hashlib
import os
import re
from dataclasses import dataclass, replace
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from eqagen.outputs.atomic import atomic_path

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
    schema_sha256: str  # :func:`footer_schema_sha256`; the manifest records one per table

    def to_dict(self) -> dict[str, object]:
        return {"path": self.path, "rows": self.rows, "sha256": self.sha256, "bytes": self.bytes}


def footer_schema_sha256(meta: pq.FileMetaData) -> str:
    """The sha256 of a Parquet file's schema as its footer states it (what every reader sees), one ``name:
    type`` line per column: nested names (a list's items are ``element`` there), types and nullability, no
    metadata. The manifest records it per table and every reader compares each shard's with it, so a shard of
    another schema is refused even when its checksum was fixed to match."""
    schema = meta.schema.to_arrow_schema()
    text = "\n".join(f"{f.name}: {f.type}{'' if f.nullable else ' not null'}" for f in schema)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def file_schema_sha256(path: Path) -> str:
    return footer_schema_sha256(pq.read_metadata(path))


def sha256_of(path: Path) -> str:
    """The file's sha256 (hex), read in 1 MiB blocks: what the manifest records and every reader checks."""
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# A shard's name: its prefix (a split, or "episodes"), its index and the number of shards with that prefix.
SHARD_NAME = re.compile(r"^(?P<prefix>[A-Za-z0-9_]+)-(?P<index>[0-9]{5})-of-(?P<total>[0-9]{5})\.parquet$")
PREFIX = re.compile(r"^[A-Za-z0-9_]+$")


def shard_name(prefix: str, index: int, total: int) -> str:
    return f"{prefix}-{index:05d}-of-{total:05d}.parquet"


def shard_prefix(path: str) -> str:
    """The prefix (split) of a shard path written by this module; ValueError for another name."""
    match = SHARD_NAME.match(path.rsplit("/", 1)[-1])
    if not match:
        raise ValueError(f"'{path}' is not named <prefix>-NNNNN-of-MMMMM.parquet")
    return match["prefix"]


def write_parquet_atomic(table: pa.Table, path: Path) -> None:
    """Write to ``.<name>.tmp`` beside the target, fsync, then rename: readers never see a partial file."""
    try:
        with atomic_path(path) as tmp:
            pq.write_table(table.combine_chunks(), tmp, row_group_size=ROW_GROUP_ROWS, **WRITER_OPTIONS)
    except OSError as err:  # a full disk, a read-only directory
        if err.filename:
            raise
        # pyarrow's errors carry neither the errno nor the file name: name both for the message
        code = err.errno or (errno.ENOSPC if "No space left" in str(err) else errno.EIO)
        raise OSError(code, os.strerror(code), str(path)) from err


def write_shard(table: pa.Table, out_dir: Path, rel: str) -> ShardInfo:
    """``table`` written atomically as ``out_dir/rel`` (its final name); returns what the manifest records."""
    path = Path(out_dir) / rel
    write_parquet_atomic(table, path)
    return ShardInfo(rel, table.num_rows, sha256_of(path), path.stat().st_size, file_schema_sha256(path))


def sort_rows(table: pa.Table, key: str) -> pa.Table:
    """Rows in ascending order of a unique key; raises if the key repeats (the order would be ambiguous)."""
    if table.num_rows and pc.count_distinct(table[key]).as_py() != table.num_rows:
        raise ValueError(f"column '{key}' is not unique: rows cannot be ordered deterministically")
    return table.take(pc.sort_indices(table, sort_keys=[(key, "ascending")]))


class ShardWriter:
    """Tables appended in order, cut into ``<table>/<prefix>-NNNNN-of-MMMMM.parquet`` shards of
    ``rows_per_shard`` rows as they come: at most one shard's rows are held, so a dataset of any size
    streams through. Write into an empty directory (a staging directory): :meth:`close` gives the shards
    their final names and replaces files of those names.

    :meth:`close` writes the rest (an empty table still gets one, empty, shard, so every split of the
    layout exists and has a schema).
    """

    def __init__(self, out_dir: Path, table: str, prefix: str, rows_per_shard: int, schema: pa.Schema):
        if rows_per_shard < 1:
            raise ValueError("rows_per_shard must be at least 1")
        if not PREFIX.match(prefix):
            raise ValueError(f"shard prefix '{prefix}' must be letters, digits and underscores")
        self.out_dir, self.target, self.table, self.prefix = Path(out_dir), Path(out_dir) / table, table, prefix
        self.rows_per_shard, self.schema = rows_per_shard, schema
        self.pending: list[pa.Table] = []
        self.pending_rows = 0
        self.written: list[ShardInfo] = []  # under working names

    def add(self, table: pa.Table) -> None:
        if table.num_rows:
            self.pending.append(table)
            self.pending_rows += table.num_rows
        while self.pending_rows >= self.rows_per_shard:
            self._write_next(self.rows_per_shard)

    def close(self) -> list[ShardInfo]:
        if self.pending_rows or not self.written:
            self._write_next(self.pending_rows)
        infos = []
        for index, info in enumerate(self.written):
            final = self.target / shard_name(self.prefix, index, len(self.written))
            os.replace(self.out_dir / info.path, final)
            infos.append(replace(info, path=final.relative_to(self.out_dir).as_posix()))
        return infos

    def _write_next(self, n_rows: int) -> None:
        table = pa.concat_tables(self.pending) if self.pending else self.schema.empty_table()
        part, rest = table.slice(0, n_rows), table.slice(n_rows)
        info = write_shard(part, self.out_dir, f"{self.table}/{self.prefix}-{len(self.written):05d}.parquet")
        self.written.append(info)
        self.pending, self.pending_rows = ([rest] if rest.num_rows else []), rest.num_rows


def write_shards(
    table: pa.Table, out_dir: Path, table_name: str, prefix: str, sort_key: str, rows_per_shard: int
) -> list[ShardInfo]:
    """Sort ``table`` by ``sort_key`` and write it as ``<table_name>/<prefix>-NNNNN-of-MMMMM.parquet``
    under ``out_dir`` (a table already in memory; :class:`ShardWriter` streams one)."""
    writer = ShardWriter(out_dir, table_name, prefix, rows_per_shard, table.schema)
    writer.add(sort_rows(table, sort_key))
    return writer.close()
