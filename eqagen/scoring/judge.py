"""OpenEQA's LLM match: a chat model marks each free-form answer from 1 to 5 against the answer and its
alternatives, and the metric is ``mean(100 * (mark - 1) / 4)`` (EXPRESS-Bench's C* is ``100 * mark / 5``).

The model is called through the paraphrase stage's client, cache and failure rules
(:mod:`eqagen.paraphrase.client`, :mod:`eqagen.paraphrase.cache`): every reply is committed to the sqlite
cache as it arrives, keyed by the model, the messages, the sampling and the prompt, so a killed run resumes
without asking again; retries with backoff on 429, 5xx and timeouts; an endpoint that cannot be reached stops
the run at once; so does a share of failed items above ``max_failure_share`` (exit status 1). The judge sees
the question, the answer, its alternatives (the paraphrased answer) and the prediction, nothing else.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from eqagen.core import ConfigError, DataFileError, QARecord, stable_hash
from eqagen.core.errors import RunFailed
from eqagen.paraphrase.cache import ResponseCache, request_key
from eqagen.paraphrase.config import MIN_ITEMS_FOR_FAILURE_SHARE, ParaphraseConfig, resolve_cache_path, resolve_endpoint
from eqagen.paraphrase.errors import EndpointUnreachable

PROMPT = """You are grading an answer to a question about what an agent saw in a house.
Compare the response with the correct answer (and the other ways of saying it, if any) and give one
mark from 1 to 5: 5 if the response says the same as the answer, 4 if it says nearly all of it, 3 if it
says part of it, 2 if it says little of it, 1 if it says something else or nothing.
Reply with the mark alone.

Question: {question}
Answer: {answer}
Other ways of saying the answer: {extra_answers}
Response: {prediction}
Mark:"""
PLACEHOLDERS = ("question", "answer", "prediction")  # a prompt must use these; {extra_answers} is optional
# The command's options that set the judge's client settings, by setting.
OPTIONS = {"model": "--judge", "base_url": "--base-url", "cache_path": "--judge-cache", "concurrency": "--concurrency"}
_MARK = re.compile(r"(?<![\d.])([1-5])(?!\d|\.\d)")


def llm_match(mark: float) -> float:
    """OpenEQA: ``100 * (mark - 1) / 4``."""
    return 100.0 * (mark - 1.0) / 4.0


def express_score(mark: float) -> float:
    """EXPRESS-Bench's C*: ``100 * mark / 5``."""
    return 100.0 * mark / 5.0


def read_prompt(path: Path | None) -> str:
    """The project's prompt, or a prompt file (OpenEQA's uses the same placeholders)."""
    if path is None:
        return PROMPT
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as err:
        raise DataFileError(path, None, f"cannot be read ({err.strerror})", "pass a readable prompt file") from err
    missing = [p for p in PLACEHOLDERS if "{" + p + "}" not in text]
    if missing:
        raise DataFileError(
            path,
            None,
            f"has no {', '.join('{' + m + '}' for m in missing)} placeholder",
            "write {question}, {answer} and {prediction} where they go (optionally {extra_answers})",
        )
    return text


def parse_mark(reply: str) -> int | None:
    """The mark in a reply: the digit 1-5 after ``mark`` where the reply says so, else its first 1-5."""
    after = re.search(r"mark\W*([1-5])(?!\d|\.\d)", reply, re.I)
    found = after or _MARK.search(reply)
    return int(found.group(1)) if found else None


def judge_messages(prompt: str, record: QARecord, prediction: str) -> list[dict[str, str]]:
    extra = record.paraphrase.answer if record.paraphrase and record.paraphrase.answer != record.answer else ""
    text = prompt.format(question=record.question, answer=record.answer, extra_answers=extra or "none",
                         prediction=prediction)  # fmt: skip
    return [{"role": "user", "content": text}]


def judge_config(model: str, base_url: str | None, cache_path: Path | None, concurrency: int = 8) -> ParaphraseConfig:
    """The client settings of a judge run: greedy, plain text, a short reply."""
    values: dict[str, Any] = {"model": model, "base_url": base_url, "temperature": 0.0, "max_output_tokens": 16,
                              "response_format": "none", "concurrency": concurrency}  # fmt: skip
    if cache_path is not None:
        values["cache_path"] = cache_path
    try:
        return ParaphraseConfig(**values)
    except ValidationError as err:
        first = err.errors()[0]
        raise ConfigError(OPTIONS.get(str(first["loc"][0]), "--judge"), first["msg"]) from None


@dataclass
class JudgeRun:
    """The marks of one run and what it cost."""

    model: str
    prompt_digest: str
    marks: dict[str, int] = field(default_factory=dict)  # question id -> mark
    failed: dict[str, str] = field(default_factory=dict)  # question id -> why it has no mark
    cache_hits: int = 0
    requests_sent: int = 0

    def summary(self) -> dict[str, Any]:
        return {"model": self.model, "prompt": self.prompt_digest, "marked": len(self.marks),
                "unmarked": len(self.failed), "cache_hits": self.cache_hits,
                "requests_sent": self.requests_sent}  # fmt: skip


class JudgeStopped(RunFailed):
    """The endpoint cannot be reached, or too many items failed: marks received so far are cached."""


async def _mark(run: JudgeRun, client: Any, cache: ResponseCache, messages: list[dict[str, str]], version: str,
                qid: str) -> None:  # fmt: skip
    from eqagen.paraphrase.client import RequestFailed

    key = request_key(client.endpoint.identity, run.model, messages, client.sampling(), version)
    hit = cache.get(key)
    if hit is not None:
        run.cache_hits += 1
        content = hit.content
    else:
        try:
            done = await client.complete(messages, key)
        except RequestFailed as err:
            run.failed[qid] = str(err)
            return
        if done.invalid:
            run.failed[qid] = done.invalid
            return
        cache.put(key, run.model, done.content, done.prompt_tokens, done.completion_tokens,
                  {"last_message": messages[-1]["content"], **client.sampling()})  # fmt: skip
        content = done.content
    mark = parse_mark(content)
    if mark is None:
        run.failed[qid] = f"no mark 1-5 in the reply {content[:40]!r}"
    else:
        run.marks[qid] = mark


def _check_failures(run: JudgeRun, config: ParaphraseConfig, final: bool = False) -> None:
    done = len(run.marks) + len(run.failed)
    if (final or done >= MIN_ITEMS_FOR_FAILURE_SHARE) and done and len(run.failed) / done > config.max_failure_share:
        example = next(iter(run.failed.values()))
        raise JudgeStopped(f"judge stopped: {len(run.failed)} of the {done} answers judged so far got no mark "
                           f"(limit {config.max_failure_share:.0%}), e.g. {example}",
                           "check the judge model and its prompt; marks received so far are cached")  # fmt: skip


async def judge_answers(
    items: Sequence[tuple[QARecord, str]], config: ParaphraseConfig, prompt: str = PROMPT, seed: int = 0
) -> JudgeRun:
    """Marks for ``(record, predicted answer)`` pairs."""
    from eqagen.paraphrase.client import ChatClient

    try:
        endpoint = resolve_endpoint(config)
    except ConfigError:
        endpoint = None
    if endpoint is None:  # "offline" names the offline paraphraser, no judge; or no URL and no key
        raise ConfigError("--judge", f"model '{config.model}' has no endpoint: no --base-url, $OPENAI_BASE_URL or "
                          "$OPENAI_API_KEY", allowed="--base-url URL of an OpenAI-compatible server, or "
                          "OPENAI_API_KEY for OpenAI")  # fmt: skip
    run = JudgeRun(config.model, stable_hash("judge", prompt, digest_size=8))
    version = f"judge:{run.prompt_digest}"
    client = ChatClient(endpoint, config, seed)
    order = iter(items)

    async def worker() -> None:
        for record, answer in order:  # a shared iterator: each item is taken by one worker
            await _mark(run, client, cache, judge_messages(prompt, record, answer), version, record.question_id)
            _check_failures(run, config)

    with ResponseCache(resolve_cache_path(config)) as cache:
        try:
            await asyncio.gather(*(worker() for _ in range(max(1, min(len(items), 2 * config.concurrency)))))
        except EndpointUnreachable as err:
            raise JudgeStopped(
                f"judge endpoint {err.url}: {err.problem}",
                "start the server or correct --base-url; marks received so far are cached",
            ) from err
        finally:
            run.requests_sent = client.stats.attempts
            await client.aclose()
    _check_failures(run, config, final=True)
    return run
