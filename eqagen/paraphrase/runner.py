"""The paraphrase stage: records (or a questions table) in, the ``paraphrase`` column and stats out.

Callable without Prefect: :func:`paraphrase_records` (sync) or :func:`aparaphrase_records` (async).
With an endpoint, each item is a short conversation: a request, the validator's verdict, and up to
``max_attempts - 1`` retries that quote the rejection; every response goes to the cache as it
arrives. An item whose attempts all fail, whose request fails after every transport retry, or that the
budget stops, keeps its template text with ``validated = False`` and the reason; its ``model`` names
the model only if the model answered it. The run itself stops (:mod:`eqagen.paraphrase.errors`) when
the endpoint cannot be reached or more than ``max_failure_share`` of the items fail.
"""

from __future__ import annotations

import asyncio
import re
import time
from collections import Counter
from collections.abc import Coroutine, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

import pyarrow as pa

from eqagen.core.records import Paraphrase, QARecord
from eqagen.paraphrase.cache import ResponseCache, request_key
from eqagen.paraphrase.config import (
    MIN_ITEMS_FOR_FAILURE_SHARE,
    OFFLINE_MODEL,
    Endpoint,
    ParaphraseConfig,
    resolve_cache_path,
    resolve_endpoint,
)
from eqagen.paraphrase.errors import TooManyFailures
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
MAX_REPLY_CHARS = 16_384  # a reply longer than this is rejected unread: a paraphrase is a few hundred characters
SHOT_MEMO_SIZE = 4096

if TYPE_CHECKING:  # the chat client imports the openai SDK (0.4 s): only a run with a model loads it
    from eqagen.paraphrase.client import Completion

T = TypeVar("T")


@dataclass
class ParaphraseResult:
    paraphrases: list[Paraphrase]  # one per input record, in input order
    stats: dict[str, Any]

    @property
    def reasons(self) -> list[str]:
        """Each row's reason: empty where validated, else why the template text was kept."""
        return [p.reason for p in self.paraphrases]

    def column(self) -> list[dict[str, Any]]:
        """The ``paraphrase`` column values."""
        return [asdict(p) for p in self.paraphrases]


@dataclass
class FailureGuard:
    """Counts the items that kept their template text because the model's (or the offline paraphraser's)
    every candidate was rejected or their request failed (not those the budget stopped), and stops the run
    once they are more than ``share`` of the items done: after :data:`MIN_ITEMS_FOR_FAILURE_SHARE` items
    while running, and at the end whatever the count. One guard may span several calls (the chunks of a
    generate run)."""

    share: float
    finished: int = 0
    failed: int = 0
    reasons: Counter = field(default_factory=Counter)

    def add(self, para: Paraphrase) -> None:
        self.finished += 1
        if not para.validated and para.reason != BUDGET_REASON:
            self.failed += 1
            self.reasons[reason_category(para.reason.split("; ")[0])] += 1
        if self.finished >= MIN_ITEMS_FOR_FAILURE_SHARE:
            self.check()

    @classmethod
    def counting(cls) -> FailureGuard:
        """A guard that only counts (no share is above 1): for items judged elsewhere, by :meth:`include`."""
        return cls(1.0)

    def include(self, other: FailureGuard) -> None:
        """Another guard's counts (a unit's items, paraphrased elsewhere) added to this one's."""
        self.finished += other.finished
        self.failed += other.failed
        self.reasons.update(other.reasons)

    def check(self) -> None:
        if self.finished and self.failed / self.finished > self.share:
            top = ", ".join(f"{reason} ({n})" for reason, n in self.reasons.most_common(3))
            raise TooManyFailures(self.failed, self.finished, self.share, top)


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
        self, endpoint: Endpoint, config: ParaphraseConfig, seed: int, pool: Sequence[QARecord],
        cache: ResponseCache, guard: FailureGuard,
    ):  # fmt: skip
        from eqagen.paraphrase.client import Budget, ChatClient

        self.endpoint, self.config, self.seed, self.cache, self.guard = endpoint, config, seed, cache, guard
        self.client = ChatClient(endpoint, config, seed)
        self.budget = Budget(config.max_requests, config.max_tokens)
        self.counters = _Counters()
        self.pool = ExamplePool(pool)
        self.version = f"{config.template_version}:{template_digest()}"
        self._shots: dict[str, Shot] = {}  # by question id

    def _shot(self, record: QARecord) -> Shot:
        """A few-shot example: the record with its (validated) offline rewrite as the reference."""
        shot = self._shots.get(record.question_id)
        if shot is None:
            if len(self._shots) >= SHOT_MEMO_SIZE:  # bounded: a large pool is mostly drawn once per example
                self._shots.clear()
            item = derive_facts(record)
            para = offline_paraphrase(record, self.seed, item).paraphrase
            shot = self._shots[record.question_id] = Shot(record, item, para.question, para.answer)
        return shot

    async def _reply(self, messages: list[dict[str, str]]) -> Completion | None:
        """The reply to ``messages``: from the cache, else from the endpoint (cached at once, unless its
        body was no chat completion: that is asked again). None when the budget allows no further request."""
        from eqagen.paraphrase.client import BudgetExhausted, Completion

        key = request_key(self.endpoint.identity, self.endpoint.model, messages, self.client.sampling(), self.version)
        hit = self.cache.get(key)
        if hit is not None:
            self.counters.cache_hits += 1
            return self.client.scrubbed(Completion(hit.content, 0, 0))  # a cache written by an older eqagen
        try:
            done = await self.client.complete(messages, key, self.budget)
        except BudgetExhausted:
            return None
        if not done.invalid:
            request = {
                "endpoint": self.endpoint.identity, "last_message": messages[-1]["content"],
                "n_messages": len(messages), **self.client.sampling(),
            }  # fmt: skip
            self.cache.put(key, self.endpoint.model, done.content, done.prompt_tokens, done.completion_tokens, request)
        self.budget.tokens += done.prompt_tokens + done.completion_tokens
        self.counters.prompt_tokens += done.prompt_tokens
        self.counters.completion_tokens += done.completion_tokens
        self.counters.usage_estimated += int(done.usage_estimated)
        return done

    async def item(self, record: QARecord, item: ItemFacts) -> Paraphrase:
        para = await self._conversation(record, item)
        self.guard.add(para)
        return para

    async def _conversation(self, record: QARecord, item: ItemFacts) -> Paraphrase:
        """Up to ``max_attempts`` replies, each checked; the first accepted one is the paraphrase."""
        from eqagen.paraphrase.client import RequestFailed

        examples = self.pool.pick(record.question_id, record.query_type, self.config.n_shots, self.seed)
        shots = [self._shot(r) for r in examples]
        messages = build_messages(record, item, shots)
        model, reasons = "", ("no reply",)
        for attempt in range(1, self.config.max_attempts + 1):
            try:
                reply = await self._reply(messages)
            except RequestFailed as err:
                self.counters.request_failed += 1
                return self._template(record, model, attempt - 1, str(err))
            if reply is None:
                self.counters.budget_stopped += 1
                return self._template(record, model, attempt - 1, BUDGET_REASON)
            self.counters.attempts_per_item[attempt] += 1
            if reply.invalid:  # no answer of the model's: the same request again
                reasons = (reply.invalid,)
                self.counters.rejections[reason_category(reply.invalid)] += 1
                continue
            model = self.endpoint.model
            if len(reply.content) > MAX_REPLY_CHARS:  # never parsed nor validated: 200 KB took seconds each
                reasons = (f"reply too long ({len(reply.content):,} characters, more than {MAX_REPLY_CHARS:,})",)
                self.counters.rejections[reason_category(reasons[0])] += 1
                messages = with_retry(messages, reply.content[:200], reasons)
                continue
            try:
                question, answer = parse_reply(reply.content)
                verdict = check_paraphrase(record, question, answer, item)
                reasons = verdict.reasons
            except ReplyFormatError as err:
                verdict, reasons = None, (str(err),)
            if verdict is not None and verdict.ok:
                return Paraphrase(question, answer, model, True, attempt)
            self.counters.rejections.update(reason_category(r) for r in reasons)
            messages = with_retry(messages, reply.content, reasons)
        return self._template(record, model, self.config.max_attempts, "; ".join(reasons))

    @staticmethod
    def _template(record: QARecord, model: str, attempts: int, reason: str) -> Paraphrase:
        """The template text kept, naming the model only if it answered (``model`` is "" otherwise)."""
        return Paraphrase(record.question, record.answer, model, False, attempts, reason)

    def stats(self) -> dict[str, Any]:
        c, t, cfg = self.counters, self.client.stats, self.config
        cost = c.prompt_tokens * cfg.price_input_per_mtok / 1e6 + c.completion_tokens * cfg.price_output_per_mtok / 1e6
        return {
            "mode": "llm",
            "model": self.endpoint.model,
            "base_url": self.endpoint.display_url,
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
    endpoint: Endpoint, examples: Sequence[QARecord] | None, guard: FailureGuard,
) -> tuple[list[Paraphrase], dict[str, Any]]:  # fmt: skip
    with ResponseCache(resolve_cache_path(config)) as cache:
        run = _LLMRun(endpoint, config, seed, examples if examples is not None else records, cache, guard)
        results: list[Paraphrase | None] = [None] * len(records)
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


def _run_offline(records: Sequence[QARecord], seed: int) -> list[Paraphrase]:
    return [offline_paraphrase(r, seed).paraphrase for r in records]


async def aparaphrase_records(
    records: Sequence[QARecord] | pa.Table,
    config: ParaphraseConfig | None = None,
    seed: int = 0,
    *,
    examples: Sequence[QARecord] | None = None,
    guard: FailureGuard | None = None,
) -> ParaphraseResult:
    """Paraphrase ``records``. ``examples`` is the few-shot pool (default: the records' train split,
    or all records when none carries a split). ``guard`` carries the failure count across calls; without
    one, the share of failed items is also judged at the end of this call."""
    config = config or ParaphraseConfig()
    recs = records_from_table(records) if isinstance(records, pa.Table) else list(records)
    start = time.perf_counter()
    endpoint = resolve_endpoint(config)
    own = guard is None
    guard = guard or FailureGuard(config.max_failure_share)
    if endpoint is None:  # the offline paraphraser's failures count as a model's do
        results, stats = _run_offline(recs, seed), {"mode": "offline", "model": OFFLINE_MODEL}
        for para in results:
            guard.add(para)
    else:
        results, stats = await _run_llm(recs, config, seed, endpoint, examples, guard)
    if own:
        guard.check()
    elapsed = time.perf_counter() - start
    validated = sum(p.validated for p in results)
    stats = {
        "items": len(recs),
        "validated": validated,
        "kept_template": len(recs) - validated,
        **stats,
        "elapsed_s": round(elapsed, 3),
        "items_per_s": round(len(recs) / elapsed, 2) if elapsed > 0 else None,
    }
    return ParaphraseResult(results, stats)


def check_endpoint(config: ParaphraseConfig) -> None:
    """Raise unless ``config`` names the offline paraphraser or a model whose endpoint answers: a
    ConfigError for a model with no endpoint or a refused key, :class:`EndpointUnreachable` when
    nothing answers. Costs one ``GET /models``, no billed request."""
    endpoint = resolve_endpoint(config)
    if endpoint is not None:
        _run_sync(_preflight(endpoint, config))


async def _preflight(endpoint: Endpoint, config: ParaphraseConfig) -> None:
    from eqagen.paraphrase.client import ChatClient

    client = ChatClient(endpoint, config, seed=0)
    try:
        await client.preflight()
    finally:
        await client.aclose()


def _run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to its end, also from inside a running event loop (a Prefect task, a notebook): then
    in a worker thread with a loop of its own."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(coro)
    with ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coro).result()


def paraphrase_records(
    records: Sequence[QARecord] | pa.Table,
    config: ParaphraseConfig | None = None,
    seed: int = 0,
    *,
    examples: Sequence[QARecord] | None = None,
    guard: FailureGuard | None = None,
) -> ParaphraseResult:
    """Synchronous :func:`aparaphrase_records`; safe to call from inside a running event loop."""
    return _run_sync(aparaphrase_records(records, config, seed, examples=examples, guard=guard))
