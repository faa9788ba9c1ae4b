"""A dataset folder read back: its manifest checked, its shards verified, its tables read.

Every command that reads a dataset (``resplit``, ``paraphrase``, ``export``, ``audit``, the readers)
goes through :func:`open_dataset`, which checks, before anything is read or written:

- the manifest, field by field (:func:`eqagen.outputs.manifest.load_manifest`);
- every path it names stays inside the folder: relative, no ``..``, under ``questions/`` or
  ``episodes/``, a ``.parquet`` file, no link leading out (so ``episodes/../../victim`` is an error
  before anything is read);
- :func:`integrity_checks`: no file in ``questions/`` or ``episodes/`` that the manifest does not list,
  none missing, every sha256 and row count as recorded (the totals too), ids unique, ``stats.json``
  readable.

Only the shards the manifest lists are ever read, so a deleted, extra or duplicated shard cannot pass
unseen. ``eqagen audit`` reports the same checks one by one instead of stopping at the first.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from eqagen.core import DataFileError
from eqagen.core.limits import (
    MAX_COLUMN_CHUNK_BYTES,
    MAX_SHARD_BYTES,
    MAX_SHARD_DECOMPRESSED_BYTES,
    MAX_SHARD_ROW_GROUPS,
    MAX_SHARD_ROWS,
    check_regular_file,
    load_json,
)
from eqagen.outputs.manifest import MANIFEST_NAME, REGENERATE, Manifest, load_manifest
from eqagen.outputs.shards import sha256_of

TABLES = ("questions", "episodes")
ID_COLUMNS = {"questions": "question_id", "episodes": "episode_id"}
# What reading a damaged or foreign file as Parquet raises (pyarrow decodes names as UTF-8: ValueError).
UNREADABLE = (pa.ArrowException, OSError, ValueError)


def checked_shard_path(root: Path, rel: str, field_name: str) -> Path:
    """``root / rel`` for a shard path read from a manifest, or a DataFileError if it could leave ``root``."""
    where = Path(root) / MANIFEST_NAME
    pure = PurePosixPath(rel)
    problem = None
    if "\\" in rel or pure.is_absolute() or any(part in ("", ".", "..") for part in rel.split("/")):
        problem = f"'{rel}' leaves the dataset folder or is not a plain relative path"
    elif len(pure.parts) < 2 or pure.parts[0] not in TABLES or pure.suffix != ".parquet":
        problem = f"'{rel}' is not a shard path (questions/NAME.parquet or episodes/NAME.parquet)"
    if problem is None:
        resolved, inside = (Path(root) / rel).resolve(), Path(root).resolve()
        if not resolved.is_relative_to(inside):
            problem = f"'{rel}' leads out of the dataset folder through a link"
    if problem:
        raise DataFileError(where, field_name, problem, REGENERATE + "; a manifest names only files in its folder")
    return Path(root) / rel


@dataclass(frozen=True)
class IntegrityCheck:
    """One check of a dataset folder against its manifest: ``failures`` are (relative path, problem)."""

    name: str
    fix: str
    failures: tuple[tuple[str, str], ...] = ()

    @property
    def ok(self) -> bool:
        return not self.failures

    def detail(self, limit: int = 5) -> str:
        shown = [f"{path}: {problem}" for path, problem in self.failures[:limit]]
        more = len(self.failures) - limit
        return "; ".join(shown) + (f"; and {more} more" if more > 0 else "")


@dataclass
class Dataset:
    """A dataset folder whose manifest was loaded and whose shard paths were checked."""

    root: Path
    manifest: Manifest
    shard_paths: dict[str, Path] = field(default_factory=dict)  # manifest path -> file

    @property
    def raw_manifest(self) -> dict[str, Any]:
        return self.manifest.model_dump(mode="json")

    def shards(self, table: str) -> list[Path]:
        """The table's shards as the manifest lists them, in path order."""
        return [path for rel, path in sorted(self.shard_paths.items()) if rel.split("/")[0] == table]

    def iter_tables(self, table: str, columns: Iterable[str] | None = None) -> Iterator[pa.Table]:
        for path in self.shards(table):
            yield read_shard(path, columns)

    def read(self, table: str, columns: Iterable[str] | None = None) -> pa.Table:
        """The whole table with the columns asked for (those present; all if None), shards in path order."""
        parts = list(self.iter_tables(table, columns))
        return pa.concat_tables(parts, promote_options="default") if parts else pa.table({})

    def read_exact(self, table: str, schema: pa.Schema) -> pa.Table:
        """The whole table, every shard checked to have ``schema`` (this eqagen version's)."""
        return read_shards(self.shards(table), schema)

    def stats(self) -> dict[str, Any]:
        """``stats.json`` (``{}`` if the dataset has none); checked readable by :func:`integrity_checks`."""
        path = self.root / "stats.json"
        return load_json(path, REGENERATE) if path.exists() else {}


def shard_metadata(path: Path) -> pq.FileMetaData:
    """A shard's footer, checked to state a bounded read before anything is decompressed: a regular file
    of at most MAX_SHARD_BYTES, at most MAX_SHARD_ROW_GROUPS row groups and MAX_SHARD_ROWS rows, each
    column of a row group at most MAX_COLUMN_CHUNK_BYTES decompressed, MAX_SHARD_DECOMPRESSED_BYTES in all
    (a 34 KB shard that decompressed without bound drove every reader past 4 GB)."""
    fix = "restore it or regenerate"
    check_regular_file(path, MAX_SHARD_BYTES, fix)
    try:
        meta = pq.read_metadata(path)
    except UNREADABLE as err:
        raise DataFileError(path, None, f"not a Parquet file ({err})", fix) from err
    if meta.num_row_groups > MAX_SHARD_ROW_GROUPS or meta.num_rows > MAX_SHARD_ROWS:
        raise DataFileError(path, None, f"states {meta.num_row_groups:,} row groups and {meta.num_rows:,} rows, more "
                            f"than {MAX_SHARD_ROW_GROUPS:,} or {MAX_SHARD_ROWS:,}", fix)  # fmt: skip
    sizes = [meta.row_group(g).column(c).total_uncompressed_size
             for g in range(meta.num_row_groups) for c in range(meta.num_columns)]  # fmt: skip
    if max(sizes, default=0) > MAX_COLUMN_CHUNK_BYTES or sum(sizes) > MAX_SHARD_DECOMPRESSED_BYTES:
        problem = f"decompresses to {sum(sizes):,} bytes ({max(sizes):,} in one column chunk)"
        limits = f"{MAX_SHARD_DECOMPRESSED_BYTES:,} ({MAX_COLUMN_CHUNK_BYTES:,})"
        raise DataFileError(path, None, f"{problem}, more than {limits}", fix)
    return meta


def read_shard(path: Path, columns: Iterable[str] | None = None) -> pa.Table:
    """One shard, the columns asked for (those present; all if None), without Hive partition inference;
    its footer checked first (:func:`shard_metadata`)."""
    names = shard_metadata(path).schema.to_arrow_schema().names
    wanted = names if columns is None else [c for c in columns if c in names]
    try:
        return pq.read_table(path, columns=wanted, partitioning=None)
    except UNREADABLE as err:
        raise DataFileError(path, None, f"unreadable Parquet shard ({err})", "restore it or regenerate") from err


def check_one_schema(paths: list[Path]) -> None:
    """A DataFileError naming the first of ``paths`` whose schema (its footer's) differs from the first's:
    the shards of one table share one schema, whatever version wrote them."""
    schemas = [(path, shard_metadata(path).schema.to_arrow_schema()) for path in paths]
    for path, schema in schemas[1:]:
        if not schema.equals(schemas[0][1], check_metadata=False):
            problem = f"schema differs from that of {schemas[0][0].name}, another shard of its table"
            raise DataFileError(path, None, problem, REGENERATE)


def read_shards(paths: list[Path], schema: pa.Schema) -> pa.Table:
    """Shards concatenated in path order, each checked against the expected schema."""
    tables = []
    for path in paths:
        table = read_shard(path)
        if not table.schema.equals(schema, check_metadata=False):
            raise DataFileError(path, None, "schema differs from this eqagen version's", REGENERATE)
        tables.append(table)
    return pa.concat_tables(tables) if tables else schema.empty_table()


def load_dataset_folder(root: Path) -> Dataset:
    """The folder's manifest loaded and every shard path checked to stay inside it (nothing verified)."""
    root = Path(root)
    if not root.is_dir():
        raise DataFileError(root, None, "no such dataset folder", "pass a folder written by eqagen")
    manifest = load_manifest(root)
    paths = {s.path: checked_shard_path(root, s.path, f"shards.{i}.path") for i, s in enumerate(manifest.shards)}
    if len(paths) != len(manifest.shards):
        raise DataFileError(root / MANIFEST_NAME, "shards", "a shard is listed twice", REGENERATE)
    return Dataset(root, manifest, paths)


def open_dataset(root: Path) -> Dataset:
    """A verified dataset folder: :func:`load_dataset_folder`, then every :func:`integrity_checks`
    check; the first failure is a DataFileError naming the file, what is wrong and the fix."""
    dataset = load_dataset_folder(root)
    for check in integrity_checks(dataset):
        if not check.ok:
            rel, problem = check.failures[0]
            more = f" (and {len(check.failures) - 1} more)" if len(check.failures) > 1 else ""
            raise DataFileError(dataset.root / rel, check.name, problem + more, check.fix)
    return dataset


# --- the checks -------------------------------------------------------------------------------------


def files_in_tables(root: Path) -> list[str]:
    """Every file (or link) under ``questions/`` and ``episodes/``, relative, hidden ones included."""
    found = []
    for table in TABLES:
        base = root / table
        if base.is_symlink() or base.is_file():
            found.append(table)
        elif base.is_dir():
            found += [p.relative_to(root).as_posix() for p in base.rglob("*") if not p.is_dir() or p.is_symlink()]
    return sorted(found)


def listing_checks(dataset: Dataset) -> list[IntegrityCheck]:
    listed, on_disk = set(dataset.shard_paths), set(files_in_tables(dataset.root))
    fix = "a dataset folder holds exactly the shards its manifest lists: restore it, or regenerate"
    return [
        IntegrityCheck("no unlisted shards", "move the file out of the dataset folder, or regenerate",
                       tuple((p, "not listed in manifest.json") for p in sorted(on_disk - listed))),
        IntegrityCheck("no missing shards", fix,
                       tuple((p, "listed in manifest.json but missing") for p in sorted(listed - on_disk))),
        IntegrityCheck("shards are regular files within bounds", "restore it or regenerate",
                       tuple(irregular_shards(dataset, sorted(listed & on_disk)))),
    ]  # fmt: skip


def irregular_shards(dataset: Dataset, present: list[str]) -> Iterator[tuple[str, str]]:
    """Listed shards that are no regular file (a FIFO would hang every read) or larger than MAX_SHARD_BYTES."""
    for rel in present:
        try:
            check_regular_file(dataset.shard_paths[rel], MAX_SHARD_BYTES)
        except DataFileError as err:
            yield rel, err.problem


def content_checks(dataset: Dataset) -> list[IntegrityCheck]:
    """sha256 and row count of every present shard, the manifest's totals, and unique ids."""
    bad_sums, bad_rows = [], []
    irregular = {rel for rel, _ in irregular_shards(dataset, [s.path for s in dataset.manifest.shards])}
    present = [s for s in dataset.manifest.shards if dataset.shard_paths[s.path].is_file() and s.path not in irregular]
    for shard in present:
        path = dataset.shard_paths[shard.path]
        actual = sha256_of(path)
        if actual != shard.sha256:
            bad_sums.append((shard.path, f"sha256 {actual[:12]}... differs from the manifest's {shard.sha256[:12]}..."))
            continue  # damaged: its rows cannot be trusted, nor read
        try:
            rows = shard_metadata(path).num_rows
        except DataFileError as err:
            bad_rows.append((shard.path, err.problem))
            continue
        if rows != shard.rows:
            bad_rows.append((shard.path, f"holds {rows} rows, the manifest says {shard.rows}"))
    bad_rows += total_row_problems(dataset.manifest)
    unreadable = {p for p, _ in bad_sums + bad_rows}
    readable = [s.path for s in present if s.path not in unreadable]
    return [
        IntegrityCheck("shard checksums match the manifest", "the shard was changed or damaged: restore it or "
                       "regenerate", tuple(bad_sums)),
        IntegrityCheck("row counts match the manifest", "the manifest or a shard was edited: regenerate",
                       tuple(bad_rows)),
        IntegrityCheck("ids unique", "rows are duplicated: regenerate", duplicate_ids(dataset, readable)),
    ]  # fmt: skip


def total_row_problems(manifest: Manifest) -> list[tuple[str, str]]:
    """The manifest's ``rows`` against the sum of its shards' rows (per table, per split, in all)."""
    episodes = sum(s.rows for s in manifest.shards if s.path.startswith("episodes/"))
    questions = sum(s.rows for s in manifest.shards if s.path.startswith("questions/"))
    problems = []
    if manifest.rows.episodes != episodes:
        problems.append((MANIFEST_NAME, f"rows.episodes is {manifest.rows.episodes}, its shards hold {episodes}"))
    if manifest.rows.questions_total != questions or sum(manifest.rows.questions.values()) != questions:
        problems.append(
            (MANIFEST_NAME, f"rows.questions_total is {manifest.rows.questions_total} and the splits add up to "
             f"{sum(manifest.rows.questions.values())}; its shards hold {questions}")
        )  # fmt: skip
    return problems


def duplicate_ids(dataset: Dataset, readable: list[str]) -> tuple[tuple[str, str], ...]:
    problems = []
    for table, column in ID_COLUMNS.items():
        parts = [read_shard(dataset.shard_paths[p], [column]) for p in readable if p.split("/")[0] == table]
        if any(column not in part.column_names for part in parts):
            problems.append((table, f"a shard has no {column} column"))
            continue
        ids = pa.chunked_array([c for part in parts for c in part[column].chunks], pa.string())
        n_unique = len(ids.unique()) if len(ids) else 0
        if n_unique != len(ids):
            problems.append((table, f"{len(ids) - n_unique} repeated {column} value(s)"))
    return tuple(problems)


def stats_check(dataset: Dataset) -> IntegrityCheck:
    path = dataset.root / "stats.json"
    failures: tuple[tuple[str, str], ...] = ()
    if "stats.json" in dataset.manifest.files:
        try:
            if not path.exists():
                failures = (("stats.json", "listed in manifest.json but missing"),)
            elif not isinstance(load_json(path), dict):
                failures = (("stats.json", "not a JSON object"),)
        except DataFileError as err:
            failures = (("stats.json", err.problem),)
    return IntegrityCheck("stats.json readable", "restore it or regenerate the dataset", failures)


def integrity_checks(dataset: Dataset) -> list[IntegrityCheck]:
    return [*listing_checks(dataset), *content_checks(dataset), stats_check(dataset)]
