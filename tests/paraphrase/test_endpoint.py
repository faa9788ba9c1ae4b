"""The stage against a real local HTTP server speaking the chat-completions protocol."""

import sqlite3

import pytest

from eqagen.core.errors import ConfigError
from eqagen.paraphrase.config import ParaphraseConfig
from eqagen.paraphrase.runner import BUDGET_REASON, paraphrase_records
from eqagen.paraphrase.validator import check_paraphrase
from tests.paraphrase.chat_server import HUGE, ScriptedChatServer
from tests.paraphrase.fixtures import generated_records, sample_records

FAST = {"backoff_base_s": 0.01, "backoff_max_s": 0.05, "api_key": "test-key", "model": "local-model"}


def config(server, tmp_path, **overrides):
    return ParaphraseConfig(base_url=server.base_url, cache_path=tmp_path / "cache.sqlite", **{**FAST, **overrides})


def test_only_fact_preserving_paraphrases_are_marked_validated(tmp_path):
    records = sample_records()
    q = [r.question for r in records]
    script = {
        q[0]: ["good"],
        q[1]: ["drop", "drop", "drop"],  # never fixed: keeps its template
        q[2]: ["change", "change", "change"],  # never fixed: keeps its template
        q[3]: ["malformed", "good"],  # fixed on the second attempt
        q[4]: ["429", "good"],  # rate limited, then served
        q[5]: ["500", "500", "500"],  # fails after every transport retry
        q[6]: ["slow", "good"],  # slower than the timeout, then served
        q[7]: ["fenced"],  # JSON in prose and a code fence
        q[8]: ["change", "good"],  # rejected, then fixed
    }
    with ScriptedChatServer(script, slow_s=4.0) as server:
        cfg = config(server, tmp_path, timeout_s=1.5, max_retries=2, max_attempts=3)
        result = paraphrase_records(records, cfg, seed=3)
        good_replies = {(qq, aa) for _, behavior, qq, aa in server.sent if behavior in ("good", "fenced", "slow")}
        bad_replies = {(qq, aa) for _, behavior, qq, aa in server.sent if behavior in ("drop", "change")}
    validated = [p.validated for p in result.paraphrases]
    assert validated == [True, False, False, True, True, False, True, True, True]
    for record, para, reason in zip(records, result.paraphrases, result.reasons):
        if para.validated:  # a validated paraphrase is one the server wrote faithfully, never a corrupted one
            assert (para.question, para.answer) in good_replies and reason == ""
            assert para.model == "local-model"
        else:  # the item keeps its template text, with the reason
            assert (para.question, para.answer) == (record.question, record.answer) and reason
    assert not any((p.question, p.answer) in bad_replies for p in result.paraphrases)
    assert "dropped" in result.reasons[1] and "introduced" in result.reasons[2]
    assert result.reasons[5].startswith("request failed after 2 retries: 500")
    stats = result.stats
    assert stats["retries"]["429"] == 1 and stats["retries"]["500"] == 2
    assert stats["retries"]["timeout"] >= 1  # the slow reply (more only if the machine is very loaded)
    assert stats["attempts_per_item"] == {"1": 8, "2": 4, "3": 2}
    assert stats["rejections"]["malformed reply"] == 1 and stats["rejections"]["dropped coordinate"] >= 1
    assert stats["prompt_tokens"] > 0 and stats["completion_tokens"] > 0


def test_a_rerun_sends_zero_requests(tmp_path):
    records = generated_records(12, seed=4)
    script = {records[0].question: ["drop", "good"], records[1].question: ["malformed", "good"]}
    with ScriptedChatServer(script) as server:
        cfg = config(server, tmp_path, price_input_per_mtok=0.15, price_output_per_mtok=0.6)
        first = paraphrase_records(records, cfg, seed=1)
        sent = server.requests
        second = paraphrase_records(records, cfg, seed=1)
        assert server.requests == sent  # not one request the second time
    assert sent == 14 and first.stats["responses"] == 14
    assert second.stats["requests_sent"] == 0 and second.stats["cache_hits"] == 14
    assert second.paraphrases == first.paraphrases and second.reasons == first.reasons
    assert all(p.validated for p in first.paraphrases)
    expected = (first.stats["prompt_tokens"] * 0.15 + first.stats["completion_tokens"] * 0.6) / 1e6
    assert first.stats["estimated_cost_usd"] == pytest.approx(expected, abs=1e-6)
    assert second.stats["estimated_cost_usd"] == 0.0


def test_requests_in_flight_never_exceed_the_limit(tmp_path):
    records = generated_records(40, seed=5)
    with ScriptedChatServer(delay_s=0.03) as server:
        result = paraphrase_records(records, config(server, tmp_path, concurrency=4), seed=0)
        assert server.requests == 40
        assert 2 <= server.max_in_flight <= 4  # the bound is used, and never exceeded
    assert result.stats["max_in_flight"] <= 4 and result.stats["validated"] == 40


def test_the_request_budget_stops_the_run_cleanly_keeping_what_is_done(tmp_path):
    records = generated_records(20, seed=6)
    with ScriptedChatServer() as server:
        limited = paraphrase_records(records, config(server, tmp_path, max_requests=5, concurrency=3), seed=0)
        assert server.requests == 5
        full = paraphrase_records(records, config(server, tmp_path), seed=0)
        assert server.requests == 20  # the second run only asks for what the first did not
    assert limited.stats["budget_exhausted"] and limited.stats["items_stopped_by_budget"] == 15
    assert limited.stats["validated"] == 5
    for record, para, reason in zip(records, limited.paraphrases, limited.reasons):
        assert para.validated or (
            (para.question, para.answer) == (record.question, record.answer) and reason == BUDGET_REASON
        )
    assert full.stats["cache_hits"] == 5 and full.stats["validated"] == 20
    kept = [p for p in limited.paraphrases if p.validated]
    assert all(p in full.paraphrases for p in kept)


def test_the_token_budget_stops_after_the_limit_is_reached(tmp_path):
    records = generated_records(10, seed=7)
    with ScriptedChatServer() as server:
        probe = paraphrase_records(records[:1], config(server, tmp_path / "probe"), seed=0)
        limit = int(2.5 * probe.stats["total_tokens"])
        result = paraphrase_records(records, config(server, tmp_path, concurrency=1, max_tokens=limit), seed=0)
    stats = result.stats
    assert stats["budget_exhausted"] and 0 < stats["responses"] < len(records)
    assert stats["validated"] == stats["responses"] and stats["items_stopped_by_budget"] == 10 - stats["responses"]
    with sqlite3.connect(tmp_path / "cache.sqlite") as db:  # responses in the order they arrived
        used = [p + c for p, c in db.execute("SELECT prompt_tokens, completion_tokens FROM responses ORDER BY created")]
    assert sum(used) == stats["total_tokens"] >= limit  # it stopped only once the limit was reached
    assert sum(used[:-1]) < limit  # and not one request later than that


def test_response_format_steps_down_when_the_endpoint_rejects_it(tmp_path):
    records = generated_records(4, seed=8)
    with ScriptedChatServer(reject_formats=("json_schema", "json_object")) as server:
        result = paraphrase_records(records, config(server, tmp_path, concurrency=1), seed=0)
        assert server.requests == 4 + 2  # one rejected json_schema, one rejected json_object
    assert result.stats["response_format"] == "none" and result.stats["validated"] == 4


def test_missing_usage_is_estimated(tmp_path):
    records = generated_records(3, seed=9)
    with ScriptedChatServer(default="nousage") as server:
        result = paraphrase_records(records, config(server, tmp_path), seed=0)
    assert result.stats["usage_estimated_responses"] == 3 and result.stats["prompt_tokens"] > 0


def test_a_wrong_route_or_model_stops_with_a_config_error(tmp_path):
    with ScriptedChatServer() as server:
        cfg = config(server, tmp_path).model_copy(update={"base_url": server.base_url + "/nowhere"})
        with pytest.raises(ConfigError, match=r"paraphrase\.model"):
            paraphrase_records(generated_records(2, seed=1), cfg, seed=0)


def test_validated_llm_output_passes_the_validator_again(tmp_path, monkeypatch):
    monkeypatch.setenv("EQAGEN_CACHE_DIR", str(tmp_path / "user-cache"))
    records = generated_records(9, seed=10)
    with ScriptedChatServer() as server:
        result = paraphrase_records(records, ParaphraseConfig(base_url=server.base_url, **FAST), seed=2)
    assert (tmp_path / "user-cache" / "paraphrase.sqlite").is_file()  # the default cache file
    for record, para in zip(records, result.paraphrases):
        assert para.validated and check_paraphrase(record, para.question, para.answer).ok


def test_empty_and_single_item_runs_finish(tmp_path):
    with ScriptedChatServer() as server:
        cfg = config(server, tmp_path, concurrency=32)
        empty = paraphrase_records([], cfg, seed=0)
        one = paraphrase_records(generated_records(1, seed=3), cfg, seed=0)
    assert empty.paraphrases == [] and empty.stats["items"] == 0 and empty.stats["requests_sent"] == 0
    assert one.stats["validated"] == 1 and one.stats["requests_sent"] == 1
    assert paraphrase_records([], ParaphraseConfig(model="offline"), seed=0).stats["items"] == 0


def test_huge_replies_are_rejected_unread_and_long_waits_are_said(tmp_path, capsys):
    """Regression: 200 KB replies took 146 s for the demo instead of 7 s (each was parsed and validated); a
    429 storm with Retry-After 30 took six minutes with nothing printed."""
    import time

    records = sample_records()[:4]
    script = {records[0].question: ["huge", "good"], records[1].question: ["429", "good"]}
    with ScriptedChatServer(script, default=HUGE, retry_after="5") as server:
        url, start = server.base_url, time.monotonic()
        result = paraphrase_records(records, config(server, tmp_path, max_attempts=2, backoff_max_s=10), seed=0)
        elapsed = time.monotonic() - start
    reasons = [p.reason for p in result.paraphrases]
    assert result.paraphrases[0].validated and result.paraphrases[1].validated
    assert all(r.startswith("reply too long (200,") and "more than 16,384" in r for r in reasons[2:]), reasons
    assert elapsed < 15
    err = capsys.readouterr().err
    assert f"paraphrase endpoint {url} answered 429; waiting 5 s before retry 1 of" in err
