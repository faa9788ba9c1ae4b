"""The async chat client: the ``openai`` package's AsyncOpenAI, pointed at any OpenAI-compatible
chat-completions endpoint (OpenAI, vLLM, Ollama, llama.cpp server).

The openai client's own retries are off; this module retries 429, 5xx, timeouts and dropped
connections itself, with exponential backoff and jitter (honouring Retry-After), so that every attempt
is counted and the concurrency bound (an ``asyncio.Semaphore`` around each HTTP call) is exact.
With ``response_format="auto"`` it asks for a JSON schema, and steps down to a JSON object, then to
plain text, the first time the endpoint rejects a format.

An endpoint that cannot be reached stops the run at once (:meth:`ChatClient.preflight`, before the first
request, and again when a request has used up its retries on connection errors), so a dead server
costs seconds, never a round of retries per row. A body that is not a chat completion (invalid JSON,
missing fields) is a :class:`Completion` with ``invalid`` set: the item retries it within its attempts.
"""

from __future__ import annotations

import asyncio
import sys
import time
from collections import Counter
from dataclasses import dataclass, field, replace
from typing import Any

import openai

from eqagen.core.errors import ConfigError
from eqagen.core.rng import derive_rng
from eqagen.paraphrase.config import Endpoint, ParaphraseConfig, scrub
from eqagen.paraphrase.errors import EndpointUnreachable
from eqagen.paraphrase.prompts import JSON_SCHEMA

FORMAT_CHAIN = ("json_schema", "json_object", "none")
PREFLIGHT_TIMEOUT_S = 10.0  # at most this long to learn whether anything answers at the endpoint
NOTE_WAIT_S = 5.0  # a retry's wait of this long or more is said on stderr
_REFUSED_STATUS = (openai.AuthenticationError, openai.PermissionDeniedError, openai.NotFoundError)


@dataclass
class Budget:
    """Per-run limits on billed requests and tokens. A request reserves a slot once it holds the
    concurrency semaphore, just before it is sent, and gives it back if it fails in the end; tokens are
    counted when a response arrives, so at most ``concurrency`` requests in flight can take the token
    total past the limit."""

    max_requests: int | None
    max_tokens: int | None
    requests: int = 0
    tokens: int = 0
    exhausted: bool = False

    def reserve(self) -> bool:
        over_requests = self.max_requests is not None and self.requests >= self.max_requests
        over_tokens = self.max_tokens is not None and self.tokens >= self.max_tokens
        if over_requests or over_tokens:
            self.exhausted = True
            return False
        self.requests += 1
        return True

    def release(self) -> None:
        self.requests -= 1


class BudgetExhausted(Exception):
    """The run's budget allows no further request."""


class RequestFailed(Exception):
    """A request that still failed after every retry (or failed in a way retrying cannot fix)."""


@dataclass(frozen=True)
class Completion:
    content: str
    prompt_tokens: int
    completion_tokens: int
    usage_estimated: bool = False
    invalid: str = ""  # why the body was not a chat completion ("" when it was)


@dataclass
class TransportStats:
    attempts: int = 0  # HTTP requests sent, retries included
    responses: int = 0  # completions received (the ones that cost tokens)
    retries: Counter = field(default_factory=Counter)  # reason -> count
    failed_requests: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    format_fallbacks: list[str] = field(default_factory=list)


def _retry_reason(err: Exception) -> str | None:
    """Why ``err`` is worth retrying, or None."""
    if isinstance(err, openai.APITimeoutError):
        return "timeout"
    if isinstance(err, openai.APIConnectionError):
        return "connection"
    if isinstance(err, openai.RateLimitError):
        return "429"
    if isinstance(err, openai.APIStatusError) and err.status_code >= 500:
        return f"{err.status_code}"
    return None


def _retry_after(err: Exception) -> float:
    response = getattr(err, "response", None)
    try:
        return float(response.headers.get("retry-after", 0)) if response is not None else 0.0
    except (TypeError, ValueError):
        return 0.0


def _estimate_tokens(text: str) -> int:
    return max(1, len(text) // 4)  # the usual ~4 characters per token, when the server reports no usage


class ChatClient:
    """One endpoint, one concurrency bound, one set of counters for a run."""

    def __init__(self, endpoint: Endpoint, config: ParaphraseConfig, seed: int):
        self.endpoint, self.config, self.seed = endpoint, config, seed
        self.stats = TransportStats()
        self._semaphore = asyncio.Semaphore(config.concurrency)
        self._client = openai.AsyncOpenAI(
            api_key=endpoint.api_key, base_url=endpoint.base_url, default_query=endpoint.query or None,
            timeout=config.timeout_s, max_retries=0,
        )  # fmt: skip
        start = config.response_format if config.response_format != "auto" else FORMAT_CHAIN[0]
        self._format = start
        self._reachable: asyncio.Future | None = None  # the preflight, started by the first request
        self._last_note = -NOTE_WAIT_S  # when a wait was last said (:meth:`_say_wait`)

    @property
    def current_format(self) -> str:
        """The response format requests are sent with now (``auto`` may have stepped down)."""
        return self._format

    def sampling(self) -> dict[str, Any]:
        """The sampling parameters (part of every cache key). The configured response format is used,
        not the one an ``auto`` run settled on, so a rerun finds the same keys."""
        c = self.config
        return {
            "temperature": c.temperature,
            "top_p": c.top_p,
            "max_tokens": c.max_output_tokens,
            "response_format": c.response_format,
            "seed": self.seed,
        }

    def _request(self, messages: list[dict[str, str]], fmt: str) -> dict[str, Any]:
        c = self.config
        kwargs: dict[str, Any] = {
            "model": self.endpoint.model,
            "messages": messages,
            "temperature": c.temperature,
            "top_p": c.top_p,
            "max_tokens": c.max_output_tokens,
            "seed": self.seed,
        }
        if fmt == "json_schema":
            kwargs["response_format"] = {"type": "json_schema", "json_schema": JSON_SCHEMA}
        elif fmt == "json_object":
            kwargs["response_format"] = {"type": "json_object"}
        return kwargs

    def _step_down_format(self, err: Exception, sent: str) -> bool:
        """After a 400/422 to a request that carried a response format: use the next one (auto only)."""
        if self.config.response_format != "auto" or not isinstance(
            err, (openai.BadRequestError, openai.UnprocessableEntityError)
        ):
            return False
        if sent == "none":
            return False
        if self._format == sent:  # another request may have stepped down already
            self._format = FORMAT_CHAIN[FORMAT_CHAIN.index(sent) + 1]
            self.stats.format_fallbacks.append(self._format)
        return True

    async def _send(self, messages: list[dict[str, str]], slot: list[bool], budget: Budget | None) -> Completion | None:
        """One HTTP request. None when the endpoint rejected the response format and a simpler one is
        to be tried (``auto`` only); the format is read inside the semaphore, so with concurrency 1 a
        rejected format is sent exactly once. The budget slot is taken here too, once per request."""
        async with self._semaphore:
            if budget is not None and not slot[0]:
                if not budget.reserve():
                    raise BudgetExhausted
                slot[0] = True
            self.stats.attempts += 1
            self.stats.in_flight += 1
            self.stats.max_in_flight = max(self.stats.max_in_flight, self.stats.in_flight)
            fmt = self._format
            try:
                response: Any = await self._client.chat.completions.create(**self._request(messages, fmt))
            except openai.APIError as err:
                if self._step_down_format(err, fmt):
                    return None
                raise
            except ValueError as err:  # a 200 whose body is not JSON (json.JSONDecodeError)
                response = InvalidBody(f"not JSON: {err}")
            finally:
                self.stats.in_flight -= 1
        self.stats.responses += 1  # answered with a 200: billed, whatever the body holds
        return self.scrubbed(_completion(response, messages))

    async def preflight(self) -> None:
        """Raise :class:`EndpointUnreachable` unless something answers HTTP at the endpoint (``GET
        /models``; any status counts as an answer, since not every server lists its models), and
        :class:`ConfigError` if it refuses the key there."""
        timeout = min(self.config.timeout_s, PREFLIGHT_TIMEOUT_S)
        try:
            await self._client.with_options(timeout=timeout, max_retries=0).models.list()
        except openai.APITimeoutError as err:
            raise EndpointUnreachable(self.endpoint.display_url, f"no answer within {timeout:g} s") from err
        except openai.APIConnectionError as err:
            cause = err.__cause__ or err
            detail = self._scrub(f"{type(cause).__name__}: {cause}")
            raise EndpointUnreachable(self.endpoint.display_url, f"cannot connect ({detail})") from err
        except (openai.AuthenticationError, openai.PermissionDeniedError) as err:
            raise self._refused(err) from err
        except (openai.APIError, ValueError):
            pass  # it answered: an error status or a body that is no model list still means it is there

    def _refused(self, err: openai.APIStatusError) -> ConfigError:
        return ConfigError(
            "paraphrase.model",
            f"the endpoint {self.endpoint.display_url} refused the request ({err.status_code}): "
            f"{self._scrub(err.message)}",
            allowed="a model the endpoint serves and a valid key",
        )

    def _scrub(self, text: str) -> str:
        return scrub(text, self.endpoint.secrets)

    def scrubbed(self, completion: Completion) -> Completion:
        """``completion`` with its reply and its problem scrubbed (:func:`scrub`): what an endpoint sends is
        scrubbed as it arrives, before any reason, cache row or log can hold it."""
        return replace(completion, content=self._scrub(completion.content), invalid=self._scrub(completion.invalid))

    async def complete(self, messages: list[dict[str, str]], key: str, budget: Budget | None = None) -> Completion:
        """One chat completion, retried on 429, 5xx, timeouts and connection errors. Raises
        :class:`BudgetExhausted` (nothing sent) or :class:`RequestFailed` (the budget slot given back)."""
        if self._reachable is None:  # a run served wholly from the cache never needs the endpoint
            self._reachable = asyncio.ensure_future(self.preflight())
        await asyncio.shield(self._reachable)  # every request waits for the one preflight
        slot = [False]
        try:
            return await self._complete(messages, key, slot, budget)
        except BaseException:
            if slot[0] and budget is not None:
                budget.release()
            raise

    async def _complete(
        self, messages: list[dict[str, str]], key: str, slot: list[bool], budget: Budget | None
    ) -> Completion:
        rng = derive_rng(self.seed, "paraphrase", "backoff", key)
        retries = 0
        while True:
            try:
                done = await self._send(messages, slot, budget)
                if done is not None:
                    return done
            except _REFUSED_STATUS as err:
                raise self._refused(err) from err
            except openai.APIError as err:
                reason = _retry_reason(err)
                if reason is None or retries >= self.config.max_retries:
                    self.stats.failed_requests += 1
                    if reason in ("connection", "timeout"):
                        await self.preflight()  # the endpoint itself gone: stop the run, not just this item
                    detail = self._scrub(str(reason or err))
                    raise RequestFailed(f"request failed after {retries} retries: {detail}") from err
                self.stats.retries[reason] += 1
                delay = self._backoff(retries, err, rng)
                self._say_wait(reason, delay, retries)
                await asyncio.sleep(delay)
                retries += 1

    def _say_wait(self, reason: str, delay: float, retry: int) -> None:
        """A line on stderr before a wait of :data:`NOTE_WAIT_S` or more (at most one every that long): a 429
        storm with Retry-After 30 was six minutes without a word."""
        now = time.monotonic()
        if delay < NOTE_WAIT_S or now - self._last_note < NOTE_WAIT_S:
            return
        self._last_note = now
        print(f"eqagen: note: paraphrase endpoint {self.endpoint.display_url} answered {reason}; waiting "
              f"{delay:.0f} s before retry {retry + 1} of {self.config.max_retries}", file=sys.stderr)  # fmt: skip

    def _backoff(self, retry: int, err: Exception, rng: Any) -> float:
        """Exponential backoff with equal jitter, at least the server's Retry-After, at most the cap."""
        c = self.config
        delay = min(c.backoff_max_s, c.backoff_base_s * 2.0**retry)
        delay = delay / 2 + float(rng.uniform(0, delay / 2))
        return min(c.backoff_max_s, max(delay, _retry_after(err)))

    async def aclose(self) -> None:
        await self._client.close()


@dataclass(frozen=True)
class InvalidBody:
    problem: str


def _completion(response: Any, messages: list[dict[str, str]]) -> Completion:
    """What a 200 brought: the reply and its tokens, or why the body was no chat completion."""
    if isinstance(response, InvalidBody):
        return Completion("", 0, 0, invalid=f"invalid response body ({response.problem[:120]})")
    if isinstance(response, str):  # the openai client returns a body that is not JSON-typed as text
        return Completion("", 0, 0, invalid=f"invalid response body (not JSON: {response[:80]!r})")
    choices = getattr(response, "choices", None)
    message = getattr(choices[0], "message", None) if choices else None
    if message is None:
        missing = "a message in its choice" if choices else "choices"
        return Completion("", 0, 0, invalid=f"invalid response body (no {missing})")
    content = message.content or ""  # a refusal or an empty reply: the model's answer all the same
    usage = getattr(response, "usage", None)
    if usage is None:
        prompt = sum(_estimate_tokens(m["content"]) for m in messages)
        return Completion(content, prompt, _estimate_tokens(content), usage_estimated=True)
    return Completion(content, int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0))
