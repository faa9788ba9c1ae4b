import asyncio

import httpx2
import openai
import pytest

from eqagen.core.rng import derive_rng
from eqagen.paraphrase.client import Budget, BudgetExhausted, ChatClient, RequestFailed, _retry_reason
from eqagen.paraphrase.config import Endpoint, ParaphraseConfig
from eqagen.paraphrase.runner import paraphrase_records
from tests.paraphrase.chat_server import ScriptedChatServer
from tests.paraphrase.fixtures import generated_records


def status_error(status: int, headers: dict | None = None) -> openai.APIStatusError:
    request = httpx2.Request("POST", "http://127.0.0.1/v1/chat/completions")
    response = httpx2.Response(status, headers=headers or {}, request=request)
    cls = {429: openai.RateLimitError, 500: openai.InternalServerError}.get(status, openai.APIStatusError)
    return cls("error", response=response, body=None)


def client(**overrides) -> ChatClient:
    config = ParaphraseConfig(model="m", backoff_base_s=0.5, backoff_max_s=30.0, **overrides)
    return ChatClient(Endpoint("m", "http://127.0.0.1:9/v1", "k"), config, seed=0)


def test_backoff_grows_exponentially_with_jitter_and_honours_retry_after():
    c = client()
    rng = derive_rng(0, "test")
    delays = [c._backoff(n, status_error(500), rng) for n in range(8)]
    for n, delay in enumerate(delays):
        full = min(30.0, 0.5 * 2**n)
        assert full / 2 <= delay <= full
    assert delays[7] >= 15.0  # capped at 30, at least half of it
    assert c._backoff(0, status_error(429, {"retry-after": "5"}), rng) >= 5.0
    assert c._backoff(0, status_error(429, {"retry-after": "600"}), rng) == 30.0  # never past the cap


def test_which_errors_are_retried():
    assert _retry_reason(status_error(429)) == "429"
    assert _retry_reason(status_error(500)) == "500"
    assert _retry_reason(status_error(503)) == "503"
    assert _retry_reason(status_error(400)) is None


def test_budget_reserves_and_releases():
    budget = Budget(max_requests=2, max_tokens=None)
    assert budget.reserve() and budget.reserve() and not budget.reserve() and budget.exhausted
    budget.release()
    assert budget.reserve()
    tokens = Budget(max_requests=None, max_tokens=100)
    assert tokens.reserve()
    tokens.tokens = 100
    assert not tokens.reserve()


def test_a_request_that_fails_gives_its_budget_slot_back():
    records = generated_records(2, seed=12)
    failing = [{"role": "user", "content": f"Template question: {records[0].question}\nTemplate answer: x"}]
    passing = [{"role": "user", "content": f"Template question: {records[1].question}\nTemplate answer: x"}]

    async def run(base_url: str) -> tuple[int, int, int]:
        config = ParaphraseConfig(model="m", max_retries=2, backoff_base_s=0.01, backoff_max_s=0.02)
        c = ChatClient(Endpoint("m", base_url, "k"), config, seed=0)
        budget = Budget(max_requests=1, max_tokens=None)
        with pytest.raises(RequestFailed, match="after 2 retries: 500"):
            await c.complete(failing, "k1", budget)
        after_failure = budget.requests
        await c.complete(passing, "k2", budget)  # the slot is free again
        after_success = budget.requests
        with pytest.raises(BudgetExhausted):
            await c.complete(passing, "k3", budget)
        await c.aclose()
        return after_failure, after_success, c.stats.attempts

    with ScriptedChatServer({records[0].question: ["500"] * 3}) as server:
        after_failure, after_success, attempts = asyncio.run(run(server.base_url))
        assert server.requests == 4  # three for the failing request, one for the passing one, none over budget
    assert (after_failure, after_success, attempts) == (0, 1, 4)


@pytest.mark.parametrize("fmt", ["json_schema", "json_object", "none"])
def test_a_fixed_response_format_is_sent_as_configured(tmp_path, fmt):
    records = generated_records(2, seed=13)
    with ScriptedChatServer() as server:
        config = ParaphraseConfig(
            model="m", base_url=server.base_url, api_key="k", cache_path=tmp_path / "c.sqlite", response_format=fmt
        )
        result = paraphrase_records(records, config, seed=0)
    assert result.stats["response_format"] == fmt and result.stats["validated"] == 2
