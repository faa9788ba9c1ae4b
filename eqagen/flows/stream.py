"""The dataset-level finish as units over the batch checkpoints: memory follows the batch, not the dataset.

Balancing and splitting decide over every candidate at once, but only need a few columns: they run on
the *key table* (question id, scene, balance key, answer key, the split's strata, and where each row
lives: its batch and row), which units read file by file (:func:`read_file_keys`) and the run's
process merges. The kept keys then say, per split, which rows go to which shard in batch order, so
every shard is planned before any is written (:func:`plan_question_shards`, :func:`plan_episode_shards`)
and written by a unit of its own that reads its rows back from the checkpoints, paraphrases them (or
is given their paraphrases, made by units over pieces of the shard), writes the shard into staging
under its final name and returns its entry and its partial audit statistics. At no point is the whole
questions or episodes table in memory: the largest things held are the key table (a few columns of
every candidate) and one shard's rows in each unit.

Rows are written in batch order, each batch's kept questions in the order the engine sampled them, so
the output is the same whichever runner made the batches, however many workers it had, and whichever
executor ran the units (:mod:`eqagen.outputs.units`).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import FIRST_COMPLETED, Executor, Future, wait
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from eqagen.config import PipelineConfig
from eqagen.core import Program, QARecord
from eqagen.core.stages import StageLog, StageReport
from eqagen.curation.audit import EpisodeParts, QuestionPartial, episode_partial, question_partial
from eqagen.curation.columns import TWIN, joined_list_column, twin_text
from eqagen.curation.compose import scarce_kinds
from eqagen.curation.partition import HELD_OUT, held_out_column
from eqagen.flows import stages
from eqagen.flows.checkpoints import BatchStore
from eqagen.outputs.folder import DatasetWriter, split_names
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA
from eqagen.outputs.shards import ShardInfo, shard_name, write_parquet_atomic, write_shard
from eqagen.outputs.units import submit
from eqagen.paraphrase.config import ParaphraseConfig
from eqagen.paraphrase.runner import FailureGuard
from eqagen.paraphrase.stage import (
    ChunkedParaphrase,
    in_pool,
    merge_stats,
    paraphrase_offline,
    uses_llm,
)
from eqagen.paraphrase.tables import records_from_table

# Rows paraphrased in a unit, their paraphrase statistics and their count of failed items.
Paraphrased = tuple[pa.Table, dict[str, Any], FailureGuard]
# Where a key row comes from: its batch (index into the run's batch names) and its row in that batch.
BATCH, ROW = "_batch", "_row"
# Balancing's own columns and the query type (the few-shot pool's); the split adds its strata.
BASE_KEY_COLUMNS = ("question_id", "scene_id", "balance_key", "answer_key", "query_type")
# Kept rows are paraphrased in chunks (an LLM's) or pieces (the offline paraphraser's units on an executor)
# of about this many rows: enough items for an LLM's concurrency, few enough that a chunk's records (about
# 8 KB each as Python objects) stay small, and that the pieces share the workers evenly (5,000-row chunks left
# one worker alone with tag-eqa's third: 17 s of paraphrase, 13.5 s with 1,000). At 10,000 episodes a piece
# of val or test reads its rows from nearly every candidate file: 1,000-row pieces took up to 2.6 s there,
# 500-row ones 1.2 s (the same files read in all: 24.7 CPU-s against 27.7).
PARAPHRASE_CHUNK_ROWS = 500


# The folder in staging where a shard's paraphrased pieces wait for the unit that writes the shard.
PIECES_DIR = ".pieces"
# Candidate files read by one unit: a file's keys take milliseconds, less than sending a unit to a worker.
FILES_PER_UNIT = 8
# A key column derived from ``program`` (no column of its own): each filter's family, repeats kept.
FILTER_FAMILIES = "filter_families"


def key_columns(config: PipelineConfig) -> list[str]:
    """The questions columns the selection stages read, in the table's own order, then the derived ones."""
    wanted = {*BASE_KEY_COLUMNS, *config.split.stratify_by}
    return [name for name in QUESTIONS_SCHEMA.names if name in wanted] + [FILTER_FAMILIES, TWIN]


def filter_families(program: pa.ChunkedArray) -> pa.Array:
    """list<string> per row: the family of each of its program's filters, in order (repeats kept)."""
    filters = pc.struct_field(program.combine_chunks(), "filters")
    families = pc.struct_field(filters.flatten(), "family")
    return pa.ListArray.from_arrays(filters.offsets, families)


class KeyDictionaries:
    """Merges the files' dictionary-encoded key columns into one dictionary per column across all files: a
    row then costs four bytes per text column instead of its strings (balance keys are about 75 bytes), and
    the curation stages encode it without decoding."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, int]] = {}
        self.indices: dict[str, list[np.ndarray]] = {}

    def add(self, name: str, local: pa.DictionaryArray) -> None:
        known = self.values.setdefault(name, {})
        to_global = np.fromiter((known.setdefault(v, len(known)) for v in local.dictionary.to_pylist()), np.int32)
        indices = local.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        self.indices.setdefault(name, []).append(to_global[indices])

    def column(self, name: str) -> pa.DictionaryArray:
        indices = np.concatenate(self.indices.get(name) or [np.zeros(0, np.int32)])
        dictionary = pa.array(list(self.values.get(name, {})), pa.string())
        return pa.DictionaryArray.from_arrays(pa.array(indices, pa.int32()), dictionary)


def is_list(t: pa.DataType) -> bool:
    return pa.types.is_list(t) or pa.types.is_large_list(t)


def is_text(field: pa.Field) -> bool:
    return pa.types.is_string(field.type) or is_list(field.type)


def encoded_columns(columns: list[str]) -> list[str]:
    """The key columns kept dictionary-encoded: the text ones but the (unique) question id."""
    derived = (FILTER_FAMILIES, TWIN)
    return [c for c in columns if c in derived or (c != "question_id" and is_text(QUESTIONS_SCHEMA.field(c)))]


def read_file_keys(path: Path, columns: list[str]) -> pa.Table:
    """One candidate file's key columns: the derived ones computed from ``program``, the text ones
    dictionary-encoded with the file's own dictionary (a list column, the filter families, as its joined
    signature, which is all the split's strata use)."""
    stored = [c for c in columns if c not in (FILTER_FAMILIES, TWIN)]
    read = [*stored, "program", *(["episode_id"] if "episode_id" not in stored else [])]
    table = pq.read_table(path, schema=QUESTIONS_SCHEMA, columns=read)
    if FILTER_FAMILIES in columns:
        table = table.append_column(FILTER_FAMILIES, filter_families(table["program"]))
    if TWIN in columns:
        table = table.append_column(TWIN, twin_text(table["episode_id"], table["program"]))
    data = {}
    for name in columns:
        array = table[name].combine_chunks()
        if name in encoded_columns(columns):
            array = pc.dictionary_encode(joined_list_column(array) if is_list(array.type) else array)
        data[name] = array
    return pa.table(data)


def read_files_keys(paths: list[Path], columns: list[str]) -> list[pa.Table]:
    """A few candidate files' key columns (a unit: :func:`read_file_keys` of each)."""
    return [read_file_keys(path, columns) for path in paths]


class CandidateKeys:
    """The key columns of candidate files, each file read once in a finish: the ask stage's rounds add files,
    and every round's :func:`still_wanted` and the selection read every file so far. Holds each file's key
    table (a few columns of its rows) for the finish's lifetime. A file's reading can start before its keys
    are needed (:meth:`prefetch`: the batches' files while the asks are planned, each round's files as
    their units write them), so that the run's process finds them read."""

    def __init__(self, columns: list[str]):
        self.columns = columns
        self.tables: dict[Path, pa.Table] = {}
        self.reading: dict[Path, tuple[Future[list[pa.Table]], int]] = {}  # file -> its unit, its place there
        self.merged = KeyMerge(columns)  # the files merged by the last read

    def prefetch(self, files: list[Path], executor: Executor | None = None) -> None:
        """Start reading the files neither read nor being read, by units of :data:`FILES_PER_UNIT` files (on
        ``executor`` when given, else here and now)."""
        new = [f for f in files if f not in self.tables and f not in self.reading]
        for i in range(0, len(new), FILES_PER_UNIT):
            group = new[i : i + FILES_PER_UNIT]
            unit = submit(executor, read_files_keys, group, self.columns)
            self.reading.update({f: (unit, j) for j, f in enumerate(group)})

    def read(self, files: list[Path], executor: Executor | None = None) -> pa.Table:
        """The key table of ``files`` (:class:`KeyMerge`), reading only those not read before, and merging
        only those after the files it merged last time when these begin ``files`` (each round's list of
        files extends the one before)."""
        self.prefetch(files, executor)
        for f in files:
            if f in self.reading:
                unit, place = self.reading.pop(f)
                self.tables[f] = unit.result()[place]
        if files[: len(self.merged.files)] != self.merged.files:
            self.merged = KeyMerge(self.columns)
        for f in files[len(self.merged.files) :]:
            self.merged.add(f, self.tables[f])
        return self.merged.table()


class KeyMerge:
    """Files' key tables (:func:`read_file_keys`) merged one after another, in order, into one (:meth:`table`):
    each row with its file's index (``BATCH``) and its row; the text columns' dictionaries merged into one per
    column, each value coded in the order first met."""

    def __init__(self, columns: list[str]):
        self.columns, self.encoded = columns, encoded_columns(columns)
        self.files: list[Path] = []
        self.dictionaries = KeyDictionaries()
        self.plain: dict[str, list[pa.Array]] = {c: [] for c in columns if c not in self.encoded}
        self.batch: list[np.ndarray] = []
        self.row: list[np.ndarray] = []

    def add(self, file: Path, table: pa.Table) -> None:
        for name in self.encoded:
            self.dictionaries.add(name, table[name].combine_chunks())
        for name in self.plain:
            self.plain[name].extend(table[name].chunks)
        self.batch.append(np.full(table.num_rows, len(self.files), np.int32))
        self.row.append(np.arange(table.num_rows, dtype=np.int32))
        self.files.append(file)

    def table(self) -> pa.Table:
        data = {}
        for name in self.columns:
            if name in self.encoded:
                data[name] = self.dictionaries.column(name)
            else:
                data[name] = pa.chunked_array(self.plain[name], QUESTIONS_SCHEMA.field(name).type)
        data[BATCH] = pa.array(np.concatenate(self.batch or [np.zeros(0, np.int32)]), pa.int32())
        data[ROW] = pa.array(np.concatenate(self.row or [np.zeros(0, np.int32)]), pa.int32())
        return pa.table(data)


def with_held_out(keys: pa.Table, held_out: set[str] | None) -> pa.Table:
    """The key table with its rows' partition marked (:data:`HELD_OUT`); as it is where nothing is held out."""
    return keys if held_out is None else keys.append_column(HELD_OUT, held_out_column(keys["scene_id"], held_out))


def still_wanted(keys: pa.Table, config: PipelineConfig, held_out: set[str] | None) -> Callable[[Program], bool]:
    """Which programs another round of asking should ask: those of a query type, filter family or number of
    filters the balanced pool of the candidates (their ``keys``) is short of
    (:func:`eqagen.curation.compose.scarce_kinds`)."""
    keys = with_held_out(keys, held_out)
    balanced, _ = stages.BALANCE.run(keys, config.balance, config.seed)
    scarce = scarce_kinds(balanced, stages.compose_section(config))

    def wanted(program: Program) -> bool:
        return scarce.wants(program.query.name, [f.family for f in program.filters])

    return wanted


def select(keys: pa.Table, config: PipelineConfig, log: StageLog, held_out: set[str] | None) -> pa.Table:
    """The selection stages (balance, compose, split) on the key table, the held-out scenes marked (None: no
    partition; the split then searches for scenes to hold out), each recorded in ``log``; the kept keys gain
    ``choices`` and ``split`` and stay in batch order (every stage keeps the row locators it is given)."""
    keys = with_held_out(keys, held_out)
    sections = stages.selection_sections(config)
    for stage in stages.SELECTION_STAGES:
        keys, report = stage.run(keys, sections[stage.name], config.seed)
        log.record(report)
    order = np.lexsort((keys[ROW].to_numpy(), keys[BATCH].to_numpy()))
    if np.any(np.diff(order) < 0):  # a stage reordered rows: put them back in batch order
        keys = keys.take(pa.array(order))
    return keys


def kept_rows(files: list[Path], kept: pa.Table, config_hash: str) -> Iterator[pa.Table]:
    """Per candidate file with kept questions, their full rows with ``choices``, ``split`` and the config
    hash set."""
    bounds = np.searchsorted(kept[BATCH].to_numpy(), np.arange(len(files) + 1))
    for index, path in enumerate(files):
        lo, hi = int(bounds[index]), int(bounds[index + 1])
        if lo == hi:
            continue
        # take, not slice: a slice keeps the whole column's buffers, and pickling it (to a worker process)
        # would ship every kept row's choices with each chunk
        keys = kept.select([ROW, "choices", "split"]).take(pa.array(np.arange(lo, hi)))
        full = pq.read_table(path, schema=QUESTIONS_SCHEMA)
        rows = full.take(keys[ROW])
        for column in ("choices", "split"):
            target = rows.schema.field(column)
            rows = rows.set_column(rows.schema.get_field_index(column), target, keys[column].cast(target.type))
        yield stages.with_config_hash(rows, config_hash)


def chunks(tables: Iterator[pa.Table], rows: int) -> Iterator[pa.Table]:
    """Tables gathered into chunks of at least ``rows`` rows (the last may be smaller)."""
    pending: list[pa.Table] = []
    count = 0
    for table in tables:
        pending.append(table)
        count += table.num_rows
        if count >= rows:
            yield pa.concat_tables(pending)
            pending, count = [], 0
    if pending:
        yield pa.concat_tables(pending)


def example_pool(files: list[Path], kept: pa.Table, config_hash: str) -> list[QARecord]:
    """The LLM's few-shot pool (:func:`eqagen.paraphrase.stage.pool_question_ids`) as records, read from
    the candidate files."""
    rows = list(kept_rows(files, kept.filter(in_pool(kept)), config_hash))
    return records_from_table(pa.concat_tables(rows)) if rows else []


@dataclass(frozen=True)
class QuestionShard:
    """One questions shard, planned before any is written: its final path and its rows (per row: ``BATCH``,
    an index into ``files``, the candidate files it reads; ``ROW``; ``choices`` and ``split``), in batch
    order. Small: a few kept keys, with buffers of their own (so pickling it ships no other shard's rows)."""

    path: str
    files: tuple[Path, ...]
    rows: pa.Table


def question_shard(path: str, files: list[Path] | tuple[Path, ...], rows: pa.Table) -> QuestionShard:
    """A shard of ``rows`` (``BATCH`` indexing ``files``), holding only the files it reads (renumbered)."""
    used, local = np.unique(rows[BATCH].to_numpy(), return_inverse=True)
    rows = rows.set_column(rows.schema.get_field_index(BATCH), BATCH, pa.array(local.astype(np.int32), pa.int32()))
    return QuestionShard(path, tuple(files[int(b)] for b in used), rows)


def plan_question_shards(files: list[Path], kept: pa.Table, rows_per_shard: int) -> list[QuestionShard]:
    """The kept questions per split (:func:`~eqagen.outputs.folder.split_names`, each in batch order) cut into
    shards of ``rows_per_shard`` rows, named ``questions/<split>-NNNNN-of-MMMMM.parquet``; an empty split
    gets one empty shard."""
    keys = kept.select([BATCH, ROW, "choices", "split"])
    split = np.asarray(keys["split"].cast(pa.string()).to_pylist(), dtype=object)
    shards = []
    for name in split_names(set(split.tolist())):
        where = np.flatnonzero(split == name)
        total = max(1, -(-where.size // rows_per_shard))
        for index in range(total):
            rows = keys.take(pa.array(where[index * rows_per_shard : (index + 1) * rows_per_shard], pa.int64()))
            shards.append(question_shard(f"questions/{shard_name(name, index, total)}", files, rows))
    return shards


def shard_pieces(shard: QuestionShard, rows: int) -> list[QuestionShard]:
    """The shard's rows in pieces of at most ``rows`` rows, for the paraphrase units (a shard's rows are
    paraphrased in several units at once: one 5,000-row shard would otherwise keep one worker busy long
    after the others are done)."""
    n = shard.rows.num_rows
    pieces = [shard.rows.take(pa.array(range(lo, min(lo + rows, n)), pa.int64())) for lo in range(0, n, rows)]
    return [question_shard(shard.path, shard.files, piece) for piece in pieces]


def shard_rows(shard: QuestionShard, config_hash: str) -> pa.Table:
    """A shard's full rows, read from its candidate files, with ``choices``, ``split`` and the config hash."""
    tables = list(kept_rows(list(shard.files), shard.rows, config_hash))
    return pa.concat_tables(tables) if tables else QUESTIONS_SCHEMA.empty_table()


def paraphrased_rows(shard: QuestionShard, config_hash: str, paraphrase: ParaphraseConfig, seed: int) -> Paraphrased:
    """A shard's (or a piece's) rows read, paraphrased offline and cast to the schema, with their paraphrase
    statistics and failed items."""
    rows, stats, failures = paraphrase_offline(shard_rows(shard, config_hash), paraphrase, seed)
    return stages.conform(rows, QUESTIONS_SCHEMA), stats, failures


def piece_path(shard: QuestionShard, index: int) -> str:
    """Where a shard's paraphrased piece waits in staging until its shard is written."""
    return f"{PIECES_DIR}/{Path(shard.path).stem}-piece{index:05d}.parquet"


def paraphrase_piece(
    piece: QuestionShard, staging: Path, rel: str, config_hash: str, paraphrase: ParaphraseConfig, seed: int
) -> tuple[dict[str, Any], FailureGuard]:
    """A piece of a shard (a unit): its rows read, paraphrased offline and written into ``staging`` as
    ``rel``; returns their paraphrase statistics and failed items."""
    table, stats, failures = paraphrased_rows(piece, config_hash, paraphrase, seed)
    write_parquet_atomic(table, staging / rel)
    return stats, failures


def read_pieces(staging: Path, pieces: list[str]) -> pa.Table:
    """A shard's paraphrased pieces, in order, removed from staging once read."""
    tables = [pq.read_table(staging / rel, schema=QUESTIONS_SCHEMA) for rel in pieces]
    for rel in pieces:
        (staging / rel).unlink()
    return pa.concat_tables(tables) if tables else QUESTIONS_SCHEMA.empty_table()


def write_question_shard(
    shard: QuestionShard,
    staging: Path,
    config_hash: str,
    paraphrase: ParaphraseConfig,
    seed: int,
    pieces: list[str] | None = None,
) -> tuple[ShardInfo, QuestionPartial, dict[str, Any], FailureGuard]:
    """One questions shard (a unit): its rows (those of its paraphrased ``pieces`` in staging, in order, or,
    where None, read and paraphrased offline here) written into ``staging`` under its final name; returns
    its entry, its partial audit statistics, and the statistics and failed items of the paraphrases it
    made (none for pieces)."""
    table, stats, failures = (paraphrased_rows(shard, config_hash, paraphrase, seed) if pieces is None
                              else (read_pieces(staging, pieces), {}, FailureGuard.counting()))  # fmt: skip
    return write_shard(table, staging, shard.path), question_partial(table), stats, failures


def write_paraphrased_questions(
    files: list[Path],
    kept: pa.Table,
    config: PipelineConfig,
    config_hash: str,
    writer: DatasetWriter,
    on_rows: Callable[[int], None] | None = None,
) -> ChunkedParaphrase:
    """The LLM's way: the kept rows in batch order, paraphrased chunk by chunk in this process (the run's one
    budget, failure count and few-shot pool), each shard written by the streaming writer as soon as its rows
    are in (the audit reads their statistics back from the staged files: little beside the requests)."""
    paraphrase = ChunkedParaphrase(config.paraphrase, config.seed, example_pool(files, kept, config_hash))
    for chunk in paraphrase.map(chunks(kept_rows(files, kept, config_hash), PARAPHRASE_CHUNK_ROWS)):
        writer.add_questions(stages.conform(chunk, QUESTIONS_SCHEMA))
        if on_rows:
            on_rows(chunk.num_rows)
    return paraphrase


@dataclass(frozen=True)
class EpisodeShard:
    """One episodes shard: its final path and its rows, as ``(batch episodes file, first row, end row)``."""

    path: str
    parts: tuple[tuple[Path, int, int], ...]


def plan_episode_shards(store: BatchStore, batch_names: list[str], rows_per_shard: int) -> list[EpisodeShard]:
    """Every batch's episodes, in batch order, cut into shards of ``rows_per_shard`` rows (one at least)."""
    paths = [store.path(n) / "episodes.parquet" for n in batch_names]
    ends = np.cumsum([pq.read_metadata(p).num_rows for p in paths], dtype=np.int64)
    total_rows = int(ends[-1]) if len(ends) else 0
    starts = np.concatenate([[0], ends[:-1]]).astype(np.int64)
    total = max(1, -(-total_rows // rows_per_shard))
    shards = []
    for index in range(total):
        lo, hi = index * rows_per_shard, min((index + 1) * rows_per_shard, total_rows)
        parts = tuple(
            (p, int(max(lo, a) - a), int(min(hi, b) - a)) for p, a, b in zip(paths, starts, ends) if a < hi and b > lo
        )
        shards.append(EpisodeShard(f"episodes/{shard_name('episodes', index, total)}", parts))
    return shards


def write_episode_shard(shard: EpisodeShard, staging: Path) -> tuple[ShardInfo, EpisodeParts]:
    """One episodes shard (a unit): its rows read from the batches, written into ``staging`` under its final
    name; returns its entry and its partial audit statistics."""
    tables = [pq.read_table(p, schema=EPISODES_SCHEMA).slice(lo, hi - lo) for p, lo, hi in shard.parts]
    table = pa.concat_tables(tables) if tables else EPISODES_SCHEMA.empty_table()
    return write_shard(table, staging, shard.path), episode_partial(table)


def submit_episode_shards(
    store: BatchStore, batch_names: list[str], writer: DatasetWriter, executor: Executor | None = None
) -> list[Future]:
    """One unit per episodes shard (on ``executor`` when given, else run now): they need only the batches, so
    the finish starts them with the first ask round, and they run while the questions are asked and selected."""
    shards = plan_episode_shards(store, batch_names, writer.rows_per_shard)
    return [submit(executor, write_episode_shard, shard, writer.staging) for shard in shards]


def write_questions(
    files: list[Path],
    kept: pa.Table,
    config: PipelineConfig,
    config_hash: str,
    writer: DatasetWriter,
    executor: Executor | None = None,
    on_rows: Callable[[int], None] | None = None,
) -> StageReport:
    """The questions shards into the writer's staging: offline, one unit per shard (on an executor its rows
    paraphrased first by one unit per piece of :data:`PARAPHRASE_CHUNK_ROWS` rows); for an LLM, paraphrased
    here (:func:`write_paraphrased_questions`). ``on_rows`` is told the rows of each shard or chunk as it is
    written (the run's progress). Returns the paraphrase stage's report, whose seconds include reading and
    writing the rows (they overlap)."""
    start = time.perf_counter()
    section = config.paraphrase
    if uses_llm(section):
        paraphrase = write_paraphrased_questions(files, kept, config, config_hash, writer, on_rows)
    else:
        paraphrase = ChunkedParaphrase(section, config.seed)
        shards = plan_question_shards(files, kept, writer.rows_per_shard)
        for info, partial, stats, failures in write_offline_questions(
            shards, writer.staging, config_hash, section, config.seed, executor, on_rows
        ):
            writer.add_staged(info, partial)
            paraphrase.add_elsewhere(stats, failures)
        paraphrase.check()
    where = f"{ChunkedParaphrase.__module__}:{ChunkedParaphrase.__name__}"
    seconds = time.perf_counter() - start
    return StageReport(stages.PARAPHRASE.name, where, kept.num_rows, kept.num_rows, paraphrase.stats(), seconds)


def write_offline_questions(
    shards: list[QuestionShard],
    staging: Path,
    config_hash: str,
    section: ParaphraseConfig,
    seed: int,
    executor: Executor | None,
    on_rows: Callable[[int], None] | None = None,
) -> list[tuple[ShardInfo, QuestionPartial, dict[str, Any], FailureGuard]]:
    """The questions shards, each written by a unit once its pieces are paraphrased (on ``executor``; here,
    each shard paraphrased whole by its own unit); their results (entry, partial, paraphrase statistics) in
    plan order, the pieces' statistics added to their shard's. ``on_rows`` is told each piece's rows as it
    is paraphrased (each shard's, here), so the run's progress moves while the units run."""
    tell = on_rows or (lambda rows: None)
    if executor is None:
        results = []
        for shard in shards:
            results.append(write_question_shard(shard, staging, config_hash, section, seed))
            tell(shard.rows.num_rows)
        return results
    cut = [shard_pieces(shard, PARAPHRASE_CHUNK_ROWS) for shard in shards]
    pieces = [[piece_path(shard, k) for k in range(len(c))] for shard, c in zip(shards, cut)]
    # The pieces that read the most candidate files first (a piece of val or test reads from nearly every
    # batch): the longest units start first, so that no worker is left alone with one at the end.
    order = sorted(
        ((i, k) for i, c in enumerate(cut) for k in range(len(c))), key=lambda ik: -len(cut[ik[0]][ik[1]].files)
    )
    submitted = {
        (i, k): executor.submit(paraphrase_piece, cut[i][k], staging, pieces[i][k], config_hash, section, seed)
        for i, k in order
    }
    paraphrased = [[submitted[i, k] for k in range(len(c))] for i, c in enumerate(cut)]
    writes: dict[int, Future] = {}
    told: set[tuple[int, int]] = set()

    def tell_pieces_done() -> None:
        for i, k in order:
            if (i, k) not in told and submitted[i, k].done():
                told.add((i, k))
                tell(cut[i][k].rows.num_rows)

    while len(writes) < len(shards):  # each shard's unit submitted as soon as its pieces are done
        ready = [i for i in range(len(shards)) if i not in writes and all(f.done() for f in paraphrased[i])]
        tell_pieces_done()  # after ``ready``: a shard's pieces are told before its unit can write it
        for i in ready:
            for f in paraphrased[i]:
                f.result()  # a piece's error, raised here
            writes[i] = executor.submit(write_question_shard, shards[i], staging, config_hash, section, seed, pieces[i])
        if not ready:
            wait([f for units in paraphrased for f in units if not f.done()], return_when=FIRST_COMPLETED)
    tell_pieces_done()
    results = []
    for i, units in enumerate(paraphrased):
        info, partial, _, failures = writes[i].result()
        stats: dict[str, Any] = {}
        for f in units:
            piece_stats, piece_failures = f.result()
            stats = merge_stats(stats, piece_stats)
            failures.include(piece_failures)
        results.append((info, partial, stats, failures))
    return results
