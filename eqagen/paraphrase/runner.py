"""The paraphrase stage: records (or a questions table) in, the ``paraphrase`` column and stats out.

Callable without Prefect: :func:`paraphrase_records` (sync) or :func:`aparaphrase_records` (async).
With an endpoint, each item is a short conversation: a request, the validator's verdict, and up to
``max_attempts - 1`` retries that quote the rejection; every response goes to the cache as it
arrives. An item whose attempts all fail, whose request fails after every transport retry, or that the
budget stops, keeps its template text with ``validated = False`` and the reason.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import Any

import pyarrow as pa

from eqagen.core.records import Paraphrase, QARecord
from eqagen.paraphrase.cache import ResponseCache, request_key
from eqagen.paraphrase.client import Budget, BudgetExhausted, ChatClient, RequestFailed
from eqagen.paraphrase.config import Endpoint, ParaphraseConfig, resolve_cache_path, resolve_endpoint
from eqagen.paraphrase.offline import offline_paraphrase
from eqagen.paraphrase.prompts import (
    ExamplePool,
    ReplyFormatError,
    Shot,
    build_messages,
    parse_reply,
    template_digest,
    with_retry,
)
from eqagen.paraphrase.tables import records_from_table
from eqagen.paraphrase.validator import ItemFacts, check_paraphrase, derive_facts

BUDGET_REASON = "budget exhausted before this item was paraphrased"
SHOT_MEMO_SIZE = 4096


@dataclass
class ParaphraseResult:
    paraphrases: list[Paraphrase]  # one per input record, in input order
    reasons: list[str]  # "" where validated, else why the template text was kept
    stats: dict[str, Any]

    def column(self) -> list[dict[str, Any]]:
        """The ``paraphrase`` column values (question, answer, model, validated)."""
        return [asdict(p) for p in self.paraphrases]


def reason_category(reason: str) -> str:
    """'dropped number '3' from the answer' -> 'dropped number' (for counting rejections)."""
    words = re.findall(r"[a-z/]+", reason.lower())
    return " ".join(words[:2]) if words else "unknown"


@dataclass
class _Counters:
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage_estimated: int = 0
    attempts_per_item: Counter = field(default_factory=Counter)
    rejections: Counter = field(default_factory=Counter)
    budget_stopped: int = 0
    request_failed: int = 0


class _LLMRun:
    """State of one run against an endpoint."""

    def __init__(
        self, endpoint: Endpoint, config: ParaphraseConfig, seed: int, pool: Sequence[QARecord], cache: ResponseCache
    ):
        self.endpoint, self.config, self.seed, self.cache = endpoint, config, seed, cache
        self.client = ChatClient(endpoint, config, seed)
        self.budget = Budget(config.max_requests, config.max_tokens)
        self.counters = _Counters()
        self.pool = ExamplePool(pool)
        self.version = f"{config.template_version}:{template_digest()}"
        self._shots: dict[int, Shot] = {}  # by id() of the pool's record

    def _shot(self, record: QARecord) -> Shot:
        """A few-shot example: the record with its (validated) offline rewrite as the reference."""
        shot = self._shots.get(id(record))
        if shot is None:
            if len(self._shots) >= SHOT_MEMO_SIZE:  # bounded: a large pool is mostly drawn once per example
                self._shots.clear()
            item = derive_facts(record)
            para = offline_paraphrase(record, self.seed, item).paraphrase
            shot = self._shots[id(record)] = Shot(record, item, para.question, para.answer)
        return shot

    async def _reply(self, messages: list[dict[str, str]]) -> str | None:
        """The reply to ``messages``: from the cache, else from the endpoint (cached at once).
        None when the budget allows no further request."""
        key = request_key(self.endpoint.model, messages, self.client.sampling(), self.version)
        hit = self.cache.get(key)
        if hit is not None:
            self.counters.cache_hits += 1
            return hit.content
        try:
            done = await self.client.complete(messages, key, self.budget)
        except BudgetExhausted:
            return None
        request = {"last_message": messages[-1]["content"], "n_messages": len(messages), **self.client.sampling()}
        self.cache.put(key, self.endpoint.model, done.content, done.prompt_tokens, done.completion_tokens, request)
        self.budget.tokens += done.prompt_tokens + done.completion_tokens
        self.counters.prompt_tokens += done.prompt_tokens
        self.counters.completion_tokens += done.completion_tokens
        self.counters.usage_estimated += int(done.usage_estimated)
        return done.content

    async def item(self, record: QARecord, item: ItemFacts) -> tuple[Paraphrase, str]:
        examples = self.pool.pick(record.question_id, record.query_type, self.config.n_shots, self.seed)
        shots = [self._shot(r) for r in examples]
        messages = build_messages(record, item, shots)
        reasons: tuple[str, ...] = ()
        for attempt in range(1, self.config.max_attempts + 1):
            try:
                reply = await self._reply(messages)
            except RequestFailed as err:
                self.counters.request_failed += 1
                return self._template(record), str(err)
            if reply is None:
                self.counters.budget_stopped += 1
                return self._template(record), BUDGET_REASON
            self.counters.attempts_per_item[attempt] += 1
            try:
                question, answer = parse_reply(reply)
                verdict = check_paraphrase(record, question, answer, item)
                reasons = verdict.reasons
            except ReplyFormatError as err:
                verdict, reasons = None, (str(err),)
            if verdict is not None and verdict.ok:
                return Paraphrase(question, answer, self.endpoint.model, True), ""
            self.counters.rejections.update(reason_category(r) for r in reasons)
            messages = with_retry(messages, reply, reasons)
        return self._template(record), "; ".join(reasons)

    def _template(self, record: QARecord) -> Paraphrase:
        return Paraphrase(record.question, record.answer, self.endpoint.model, False)

    def stats(self) -> dict[str, Any]:
        c, t, cfg = self.counters, self.client.stats, self.config
        cost = c.prompt_tokens * cfg.price_input_per_mtok / 1e6 + c.completion_tokens * cfg.price_output_per_mtok / 1e6
        return {
            "mode": "llm",
            "model": self.endpoint.model,
            "base_url": self.endpoint.base_url,
            "requests_sent": t.attempts,
            "responses": t.responses,
            "cache_hits": c.cache_hits,
            "retries": dict(sorted(t.retries.items())),
            "failed_requests": t.failed_requests,
            "max_in_flight": t.max_in_flight,
            "response_format": self.client.current_format,
            "prompt_tokens": c.prompt_tokens,
            "completion_tokens": c.completion_tokens,
            "total_tokens": c.prompt_tokens + c.completion_tokens,
            "usage_estimated_responses": c.usage_estimated,
            "estimated_cost_usd": round(cost, 6),
            "budget_exhausted": self.budget.exhausted,
            "items_stopped_by_budget": c.budget_stopped,
            "items_request_failed": c.request_failed,
            "attempts_per_item": {str(k): v for k, v in sorted(c.attempts_per_item.items())},
            "rejections": dict(c.rejections.most_common()),
        }


async def _run_llm(
    records: Sequence[QARecord], config: ParaphraseConfig, seed: int,
    endpoint: Endpoint, examples: Sequence[QARecord] | None,
) -> tuple[list[tuple[Paraphrase, str]], dict[str, Any]]:  # fmt: skip
    with ResponseCache(resolve_cache_path(config)) as cache:
        run = _LLMRun(endpoint, config, seed, examples if examples is not None else records, cache)
        results: list[tuple[Paraphrase, str] | None] = [None] * len(records)
        order = iter(range(len(records)))

        async def worker() -> None:
            for i in order:  # a shared iterator: each index is taken by exactly one worker
                # Facts are derived here, one item at a time: nothing per item is held beyond its result.
                results[i] = await run.item(records[i], derive_facts(records[i]))

        try:
            n_workers = max(1, min(len(records), 2 * config.concurrency))
            await asyncio.gather(*(worker() for _ in range(n_workers)))
        finally:
            await run.client.aclose()
        return [r for r in results if r is not None], run.stats()


def _run_offline(records: Sequence[QARecord], seed: int) -> list[tuple[Paraphrase, str]]:
    outcomes = [offline_paraphrase(r, seed) for r in records]
    return [(o.paraphrase, o.reason) for o in outcomes]


async def aparaphrase_records(
    records: Sequence[QARecord] | pa.Table,
    config: ParaphraseConfig | None = None,
    seed: int = 0,
    *,
    examples: Sequence[QARecord] | None = None,
) -> ParaphraseResult:
    """Paraphrase ``records``. ``examples`` is the few-shot pool (default: the records' train split,
    or all records when none carries a split)."""
    config = config or ParaphraseConfig()
    recs = records_from_table(records) if isinstance(records, pa.Table) else list(records)
    start = time.perf_counter()
    endpoint = resolve_endpoint(config)
    if endpoint is None:
        results, stats = _run_offline(recs, seed), {"mode": "offline", "model": "offline"}
    else:
        results, stats = await _run_llm(recs, config, seed, endpoint, examples)
    elapsed = time.perf_counter() - start
    validated = sum(p.validated for p, _ in results)
    stats = {
        "items": len(recs),
        "validated": validated,
        "kept_template": len(recs) - validated,
        **stats,
        "elapsed_s": round(elapsed, 3),
        "items_per_s": round(len(recs) / elapsed, 2) if elapsed > 0 else None,
    }
    return ParaphraseResult([p for p, _ in results], [r for _, r in results], stats)


def paraphrase_records(
    records: Sequence[QARecord] | pa.Table,
    config: ParaphraseConfig | None = None,
    seed: int = 0,
    *,
    examples: Sequence[QARecord] | None = None,
) -> ParaphraseResult:
    """Synchronous :func:`aparaphrase_records`; safe to call from inside a running event loop."""
    coro = aparaphrase_records(records, config, seed, examples=examples)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()
