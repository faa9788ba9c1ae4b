"""The dataset-level finish as a stream over the batch checkpoints: memory follows the batch, not the dataset.

Balancing and splitting decide over every candidate at once, but only need a few columns: they run on
the *key table* (question id, scene, balance key, answer key, the split's strata, and where each row
lives: its batch and row). The full rows of the kept questions are then read back batch by batch,
given their ``choices``, ``split`` and config hash, paraphrased chunk by chunk and appended to one
streaming shard writer per split; episodes are copied batch by batch into their shards. At no point
is the whole questions or episodes table in memory: the largest things held are the key table (a
few columns of every candidate) and one chunk of rows.

Rows are written in batch order, each batch's kept questions in the order the engine sampled them, so
the output is the same whichever runner made the batches and however many workers it had.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from concurrent.futures import Executor
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from eqagen.config import PipelineConfig
from eqagen.core import Program, QARecord
from eqagen.core.stages import StageLog, StageReport
from eqagen.curation.columns import joined_list_column
from eqagen.curation.compose import scarce_kinds
from eqagen.curation.partition import HELD_OUT, held_out_column
from eqagen.flows import stages
from eqagen.flows.checkpoints import BatchStore
from eqagen.outputs.folder import DatasetWriter
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA
from eqagen.paraphrase.stage import ChunkedParaphrase, in_pool, uses_llm
from eqagen.paraphrase.tables import records_from_table

# Where a key row comes from: its batch (index into the run's batch names) and its row in that batch.
BATCH, ROW = "_batch", "_row"
# Balancing's own columns and the query type (the few-shot pool's); the split adds its strata.
BASE_KEY_COLUMNS = ("question_id", "scene_id", "balance_key", "answer_key", "query_type")
# Kept rows are paraphrased in chunks of about this many rows: enough items for an LLM's concurrency, few
# enough that a chunk's records (about 8 KB each as Python objects) stay small, and that the offline
# paraphraser's chunks share the workers evenly (5,000-row chunks left one worker alone with tag-eqa's third:
# 17 s of paraphrase, 13.5 s with 1,000).
PARAPHRASE_CHUNK_ROWS = 1_000


# A key column derived from ``program`` (no column of its own): each filter's family, repeats kept.
FILTER_FAMILIES = "filter_families"


def key_columns(config: PipelineConfig) -> list[str]:
    """The questions columns the selection stages read, in the table's own order, then the derived ones."""
    wanted = {*BASE_KEY_COLUMNS, *config.split.stratify_by}
    return [name for name in QUESTIONS_SCHEMA.names if name in wanted] + [FILTER_FAMILIES]


def filter_families(program: pa.ChunkedArray) -> pa.Array:
    """list<string> per row: the family of each of its program's filters, in order (repeats kept)."""
    filters = pc.struct_field(program.combine_chunks(), "filters")
    families = pc.struct_field(filters.flatten(), "family")
    return pa.ListArray.from_arrays(filters.offsets, families)


class KeyDictionaries:
    """Dictionary-encodes the key table's text columns as batches are read, with one dictionary per
    column across all batches: a row then costs four bytes per text column instead of its strings
    (balance keys are about 75 bytes), and the curation stages encode it without decoding. A list
    column (the filter families) becomes its joined signature, which is all the split's strata use."""

    def __init__(self) -> None:
        self.values: dict[str, dict[str, int]] = {}
        self.indices: dict[str, list[np.ndarray]] = {}

    def add(self, name: str, column: pa.ChunkedArray) -> None:
        array = column.combine_chunks()
        if is_list(array.type):
            array = joined_list_column(array)
        local = pc.dictionary_encode(array)
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


def read_candidate_keys(files: list[Path], columns: list[str]) -> Iterator[pa.Table]:
    """Each file's key columns (the derived ones computed from ``program``)."""
    stored = [c for c in columns if c != FILTER_FAMILIES]
    for path in files:
        table = pq.read_table(path, schema=QUESTIONS_SCHEMA, columns=[*stored, "program"])
        if FILTER_FAMILIES in columns:
            table = table.append_column(FILTER_FAMILIES, filter_families(table["program"]))
        yield table.drop_columns(["program"]) if "program" not in columns else table


def read_keys(files: list[Path], columns: list[str]) -> pa.Table:
    """The key columns of every candidate file, in order, with each row's file (``BATCH``) and row;
    text columns other than the (unique) question id dictionary-encoded across files."""
    encoded = [
        c for c in columns if c == FILTER_FAMILIES or (c != "question_id" and is_text(QUESTIONS_SCHEMA.field(c)))
    ]
    dictionaries = KeyDictionaries()
    plain: dict[str, list[pa.ChunkedArray]] = {c: [] for c in columns if c not in encoded}
    batch, row = [], []
    for index, table in enumerate(read_candidate_keys(files, columns)):
        for name in encoded:
            dictionaries.add(name, table[name])
        for name in plain:
            plain[name].append(table[name])
        batch.append(np.full(table.num_rows, index, np.int32))
        row.append(np.arange(table.num_rows, dtype=np.int32))
    data = {}
    for name in columns:
        if name in encoded:
            data[name] = dictionaries.column(name)
        else:
            chunks_ = [c for part in plain[name] for c in part.chunks]
            data[name] = pa.chunked_array(chunks_, QUESTIONS_SCHEMA.field(name).type)
    data[BATCH] = pa.array(np.concatenate(batch or [np.zeros(0, np.int32)]), pa.int32())
    data[ROW] = pa.array(np.concatenate(row or [np.zeros(0, np.int32)]), pa.int32())
    return pa.table(data)


def with_held_out(keys: pa.Table, held_out: set[str] | None) -> pa.Table:
    """The key table with its rows' partition marked (:data:`HELD_OUT`); as it is where nothing is held out."""
    return keys if held_out is None else keys.append_column(HELD_OUT, held_out_column(keys["scene_id"], held_out))


def still_wanted(files: list[Path], config: PipelineConfig, held_out: set[str] | None) -> Callable[[Program], bool]:
    """Which programs another round of asking should ask: those of a query type or filter family the
    balanced pool of ``files`` is short of (:func:`eqagen.curation.compose.scarce_kinds`)."""
    keys = with_held_out(read_keys(files, key_columns(config)), held_out)
    balanced, _ = stages.BALANCE.run(keys, config.balance, config.seed)
    queries, families = scarce_kinds(balanced, stages.compose_section(config))

    def wanted(program: Program) -> bool:
        return program.query.name in queries or any(f.family in families for f in program.filters)

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


def write_questions(
    files: list[Path],
    kept: pa.Table,
    config: PipelineConfig,
    config_hash: str,
    writer: DatasetWriter,
    executor: Executor | None = None,
) -> StageReport:
    """Stream the kept questions into the writer's shards through the streamed stage (paraphrase), chunk by
    chunk (on ``executor``'s processes when given); returns its report, whose seconds include reading and
    writing the rows (they overlap)."""
    section = config.paraphrase
    examples = example_pool(files, kept, config_hash) if uses_llm(section) else None
    paraphrase = ChunkedParaphrase(section, config.seed, examples)
    start = time.perf_counter()
    rows = chunks(kept_rows(files, kept, config_hash), PARAPHRASE_CHUNK_ROWS)
    workers = max(1, config.runner.workers)
    for chunk in paraphrase.map(rows, workers, executor=executor):
        writer.add_questions(stages.conform(chunk, QUESTIONS_SCHEMA))
    where = f"{ChunkedParaphrase.__module__}:{ChunkedParaphrase.__name__}"
    seconds = time.perf_counter() - start
    return StageReport(stages.PARAPHRASE.name, where, kept.num_rows, kept.num_rows, paraphrase.stats(), seconds)


def write_episodes(store: BatchStore, batch_names: list[str], writer: DatasetWriter) -> None:
    """Every batch's episodes, in batch order, into the writer's episode shards."""
    for table in store.iter_tables(batch_names, "episodes", EPISODES_SCHEMA):
        writer.add_episodes(table)
