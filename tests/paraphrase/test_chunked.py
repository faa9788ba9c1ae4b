"""The paraphrase stage over a stream of chunks gives every row what one whole-table call gives it."""

import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.outputs.schemas import questions_table
from eqagen.paraphrase.config import ParaphraseConfig
from eqagen.paraphrase.stage import (
    ChunkedParaphrase,
    merge_stats,
    paraphrase_offline,
    paraphrase_table,
    pool_question_ids,
)
from tests.paraphrase.chat_server import ScriptedChatServer
from tests.paraphrase.fixtures import generated_records

OFFLINE = ParaphraseConfig(model="offline")
FAST = {"backoff_base_s": 0.01, "backoff_max_s": 0.05, "api_key": "test-key", "model": "local-model"}


def cut(table: pa.Table, sizes: list[int]) -> list[pa.Table]:
    out, start = [], 0
    for size in sizes:
        out.append(table.slice(start, size))
        start += size
    return [*out, table.slice(start)]


@settings(max_examples=15, deadline=None)
@given(sizes=st.lists(st.integers(0, 12), max_size=6), seed=st.integers(0, 2**31 - 1))
def test_offline_chunks_match_the_whole_table(sizes, seed):
    table = questions_table(generated_records(40, seed=3))
    whole, stats = paraphrase_table(table, OFFLINE, seed)
    chunked = ChunkedParaphrase(OFFLINE, seed)
    parts = pa.concat_tables([chunked(part) for part in cut(table, sizes)])
    assert parts["paraphrase"].to_pylist() == whole["paraphrase"].to_pylist()
    assert chunked.stats()["items"] == stats["items"] == 40
    assert chunked.stats()["validated"] == stats["validated"]


def test_the_request_budget_holds_across_chunks(tmp_path):
    records = generated_records(20, seed=4, split="train")
    table = questions_table(records)
    with ScriptedChatServer() as server:
        config = ParaphraseConfig(base_url=server.base_url, cache_path=tmp_path / "c.sqlite", max_requests=7,
                                  concurrency=2, **FAST)  # fmt: skip
        chunked = ChunkedParaphrase(config, 0, examples=records)
        for part in cut(table, [3, 5, 4]):
            chunked(part)
        assert server.requests == 7  # the run's budget, not seven per chunk
    stats = chunked.stats()
    assert stats["requests_sent"] == 7 and stats["validated"] == 7 and stats["items"] == 20
    assert stats["budget_exhausted"] and stats["items_stopped_by_budget"] == 13


def test_rate_limited_attempts_are_not_billed_against_the_budget_of_later_chunks(tmp_path):
    """Regression: the budget carried across chunks counted every HTTP attempt, 429s included, so a
    rate-limited run stopped early (5,123 of 6,000 billed requests used)."""
    records = generated_records(20, seed=4, split="train")
    table = questions_table(records)
    script = {r.question: ["429", "429", "good"] for r in records}  # every item rate-limited twice first
    with ScriptedChatServer(script) as server:
        config = ParaphraseConfig(base_url=server.base_url, cache_path=tmp_path / "c.sqlite", max_requests=12,
                                  concurrency=2, **FAST)  # fmt: skip
        chunked = ChunkedParaphrase(config, 0, examples=records)
        for part in cut(table, [4, 4, 4]):
            chunked(part)
        billed = server.responses_ok
    stats = chunked.stats()
    assert billed == 12 and stats["responses"] == 12 and stats["validated"] == 12  # the whole budget, billed
    assert stats["retries"]["429"] == 24 and stats["requests_sent"] == 36  # 429s were sent, never billed
    assert stats["items_stopped_by_budget"] == 8


def test_llm_chunks_send_the_prompts_of_one_whole_table_call(tmp_path):
    records = generated_records(12, seed=5, split="train")
    table = questions_table(records)

    def conversations(run, cache: str) -> list:
        with ScriptedChatServer() as server:
            config = ParaphraseConfig(base_url=server.base_url, cache_path=tmp_path / cache, concurrency=1, **FAST)
            run(config)
            return sorted(str(c) for c in server.conversations)

    whole = conversations(lambda config: paraphrase_table(table, config, 1), "whole.sqlite")
    pool = list(records)

    def in_chunks(config: ParaphraseConfig) -> None:
        stage = ChunkedParaphrase(config, 1, pool)
        for part in cut(table, [5, 5]):
            stage(part)

    chunked = conversations(in_chunks, "chunked.sqlite")
    assert len(whole) == 12
    assert whole == chunked  # same few-shot examples, same items


def test_merged_statistics_add_counts_and_keep_peaks():
    a = {"items": 3, "max_in_flight": 4, "retries": {"429": 1}, "budget_exhausted": False, "model": "m"}
    b = {"items": 2, "max_in_flight": 2, "retries": {"429": 2, "500": 1}, "budget_exhausted": True, "model": "m"}
    assert merge_stats(merge_stats({}, a), b) == {
        "items": 5, "max_in_flight": 4, "retries": {"429": 3, "500": 1}, "budget_exhausted": True, "model": "m",
    }  # fmt: skip


def test_the_few_shot_pool_is_bounded_per_query_type(monkeypatch):
    import eqagen.paraphrase.stage as stage

    monkeypatch.setattr(stage, "POOL_PER_QUERY_TYPE", 2)
    keys = pa.table({
        "question_id": ["q5", "q1", "q3", "q2", "q4", "q6"],
        "query_type": ["count", "count", "count", "getState", "getState", "count"],
        "split": ["train", "train", "train", "train", "validation", "validation"],
    })  # fmt: skip
    assert pool_question_ids(keys) == {"q1", "q3", "q2"}  # train only, the two smallest ids per type
    no_train = keys.set_column(2, "split", pa.array(["validation"] * 6))
    assert pool_question_ids(no_train) == {"q1", "q3", "q2", "q4"}


def test_offline_pieces_paraphrased_apart_match_the_whole_table():
    """What the finish's units do: pieces paraphrased apart (each its own call), their statistics added."""
    table = questions_table(generated_records(30, seed=8))
    whole, stats = paraphrase_table(table, OFFLINE, 2)
    run = ChunkedParaphrase(OFFLINE, 2)
    parts = []
    for piece in [*cut(table, [7, 7, 7]), table.slice(0, 0)]:
        rows, piece_stats, failures = paraphrase_offline(piece, OFFLINE, 2)
        run.add_elsewhere(piece_stats, failures)
        parts.append(rows)
    assert pa.concat_tables(parts)["paraphrase"].to_pylist() == whole["paraphrase"].to_pylist()
    assert run.stats()["items"] == 30 and run.stats()["validated"] == stats["validated"]
    assert run.guard.finished == 30 and run.guard.failed == stats["kept_template"]
