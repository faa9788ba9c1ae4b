"""The paraphrase stage of ``eqagen generate``: ``paraphrase_table(table, section, seed) -> (table, stats)``.

It replaces the ``paraphrase`` column and keeps every row and every other column. The pipeline streams
the kept questions through :class:`ChunkedParaphrase`, which gives every row the same paraphrase.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Iterator, Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from eqagen.core.records import QARecord
from eqagen.paraphrase.config import ParaphraseConfig, resolve_endpoint
from eqagen.paraphrase.runner import FailureGuard, check_endpoint, paraphrase_records
from eqagen.paraphrase.tables import RECORD_COLUMNS, paraphrase_array, records_from_table


def with_paraphrases(table: pa.Table, column: pa.Array) -> pa.Table:
    index = table.schema.get_field_index("paraphrase")
    if index < 0:
        return table.append_column("paraphrase", column)
    field = table.schema.field(index)
    return table.set_column(index, field, column.cast(field.type))


PARAPHRASE_COLUMNS = RECORD_COLUMNS  # what the paraphraser reads: the columns a record is rebuilt from


def paraphrase_table(
    table: pa.Table, config: ParaphraseConfig, seed: int, examples: Sequence[QARecord] | None = None
) -> tuple[pa.Table, dict[str, Any]]:
    """Paraphrase every row of a questions table (stats: counts, requests, tokens, cost, rejections)."""
    records = records_from_table(table)
    result = paraphrase_records(records, config, seed, examples=examples)
    return with_paraphrases(table, paraphrase_array(result.paraphrases)), result.stats


# --- the stage over a stream of chunks --------------------------------------------------------------

# Few-shot pool kept when a dataset is streamed: per query type, the train questions with the smallest
# ids. Bounded so the pool never grows with the dataset; a draw needs only a handful per query type.
POOL_PER_QUERY_TYPE = 512
POOL_COLUMNS = ("question_id", "query_type", "split")


def uses_llm(config: ParaphraseConfig) -> bool:
    """Whether the stage calls an LLM (and so needs a few-shot pool) or runs the offline paraphraser.
    A model with no endpoint is a ConfigError here, never an offline run."""
    return resolve_endpoint(config) is not None


def check_paraphrase_endpoint(config: ParaphraseConfig) -> None:
    """Before a generate run does any work: a named model must have an endpoint that answers
    (:func:`eqagen.paraphrase.runner.check_endpoint`); nothing to check for the offline paraphraser."""
    check_endpoint(config)


def pool_question_ids(keys: pa.Table) -> set[str]:
    """Question ids of the few-shot pool from the kept questions' ``question_id``, ``query_type`` and
    ``split`` columns: the train split (every row when none is train), at most
    :data:`POOL_PER_QUERY_TYPE` per query type, the smallest ids first (deterministic)."""
    keys = pa.table({name: _decoded(keys[name]) for name in POOL_COLUMNS})
    train = pc.equal(keys["split"], "train")
    rows = keys.filter(train) if pc.any(train).as_py() else keys
    rows = rows.select(["query_type", "question_id"]).sort_by(
        [("query_type", "ascending"), ("question_id", "ascending")]
    )
    chosen: set[str] = set()
    per_type: Counter[str] = Counter()
    for query_type, question_id in zip(rows["query_type"].to_pylist(), rows["question_id"].to_pylist()):
        if per_type[query_type] < POOL_PER_QUERY_TYPE:
            per_type[query_type] += 1
            chosen.add(question_id)
    return chosen


def in_pool(keys: pa.Table) -> pa.ChunkedArray:
    """Per row of ``keys`` (with :data:`POOL_COLUMNS`), whether it is in the few-shot pool."""
    chosen = pool_question_ids(keys.select(list(POOL_COLUMNS)))
    return pc.is_in(keys["question_id"], pa.array(sorted(chosen), pa.string()))


def few_shot_pool(questions: pa.Table) -> list[QARecord]:
    """The few-shot pool of a questions table in memory, as records (``generate`` reads the same rows
    from its checkpoints: :func:`eqagen.flows.stream.example_pool`)."""
    return records_from_table(questions.filter(in_pool(questions)))


def _decoded(column: pa.ChunkedArray) -> pa.ChunkedArray:
    return column.cast(pa.string()) if pa.types.is_dictionary(column.type) else column


class ChunkedParaphrase:
    """The paraphrase stage applied to a stream of row chunks (the pipeline streams the kept questions
    batch by batch). Every row gets the paraphrase one call on the whole table would give it: the
    offline paraphraser is seeded per question, and the LLM's few-shot pool is fixed up front
    (``examples``). The request and token budgets and the share of failed items are the run's, carried
    from chunk to chunk; the statistics are summed over chunks."""

    def __init__(self, config: ParaphraseConfig, seed: int, examples: Sequence[QARecord] | None = None):
        self.config, self.seed, self.examples = config, seed, examples
        self.totals: dict[str, Any] = {}
        self.guard = FailureGuard(self.config.max_failure_share)

    def __call__(self, table: pa.Table) -> pa.Table:
        if table.num_rows == 0:
            return with_paraphrases(table, paraphrase_array([]))
        config = self._remaining_budget()
        records = records_from_table(table)
        result = paraphrase_records(records, config, self.seed, examples=self.examples, guard=self.guard)
        self.totals = merge_stats(self.totals, result.stats)
        return with_paraphrases(table, paraphrase_array(result.paraphrases))

    def map(self, tables: Iterable[pa.Table]) -> Iterator[pa.Table]:
        """Each table paraphrased, in order, in this process: an LLM's requests are concurrent already and
        its budget is the run's (the offline paraphraser runs in the units that write the shards:
        :func:`paraphrase_offline`)."""
        yield from (self(t) for t in tables)
        self.check()

    def add_elsewhere(self, stats: dict[str, Any], failures: FailureGuard) -> None:
        """The statistics and failed items of rows paraphrased elsewhere (:func:`paraphrase_offline`, in a
        unit), added to the run's; :meth:`check` judges the run's share once every row is in."""
        self.totals = merge_stats(self.totals, stats)
        self.guard.include(failures)

    def check(self) -> None:
        """The whole run's share of failed items, now that every row is done (TooManyFailures if too many)."""
        self.guard.check()

    def _remaining_budget(self) -> ParaphraseConfig:
        """The budget left for the next chunk: billed requests (responses received, not attempts: a 429
        or a 5xx is not billed) and tokens used so far are taken off."""
        update = {}
        if self.config.max_requests is not None:
            update["max_requests"] = max(0, self.config.max_requests - int(self.totals.get("responses", 0)))
        if self.config.max_tokens is not None:
            update["max_tokens"] = max(0, self.config.max_tokens - int(self.totals.get("total_tokens", 0)))
        return self.config.model_copy(update=update) if update else self.config

    def stats(self) -> dict[str, Any]:
        if not self.totals:
            return {
                "items": 0,
                "validated": 0,
                "kept_template": 0,
                "mode": "llm" if uses_llm(self.config) else "offline",
            }
        totals = dict(self.totals)
        elapsed = totals.get("elapsed_s") or 0.0
        totals["elapsed_s"] = round(elapsed, 3)
        totals["items_per_s"] = round(totals["items"] / elapsed, 2) if elapsed > 0 else None
        if "estimated_cost_usd" in totals:
            totals["estimated_cost_usd"] = round(totals["estimated_cost_usd"], 6)
        return totals


def paraphrase_offline(
    table: pa.Table, config: ParaphraseConfig, seed: int
) -> tuple[pa.Table, dict[str, Any], FailureGuard]:
    """A table's rows with their offline paraphrases (seeded per question: any cut of the rows gives each row
    the same), their statistics ({} for no row, as :class:`ChunkedParaphrase` counts none) and their count
    of failed items (judged with the run's others: :meth:`ChunkedParaphrase.add_elsewhere`)."""
    failures = FailureGuard.counting()
    if table.num_rows == 0:
        return with_paraphrases(table, paraphrase_array([])), {}, failures
    result = paraphrase_records(records_from_table(table), config, seed, guard=failures)
    return with_paraphrases(table, paraphrase_array(result.paraphrases)), result.stats, failures


_MAX_KEYS = frozenset({"max_in_flight"})  # peaks, not totals


def merge_stats(total: dict[str, Any], part: dict[str, Any]) -> dict[str, Any]:
    """Two chunks' statistics as one run's: counts add up (also inside nested counters), peaks take the
    maximum, flags are true if either is, text (mode, model, response format) is the latest chunk's."""
    out = dict(total)
    for key, value in part.items():
        old = out.get(key)
        if isinstance(value, bool) or isinstance(old, bool):
            out[key] = bool(old) or bool(value)
        elif isinstance(value, dict):
            out[key] = merge_stats(old or {}, value)
        elif isinstance(value, int | float) and isinstance(old, int | float):
            out[key] = max(old, value) if key in _MAX_KEYS else old + value
        else:
            out[key] = value
    return out
