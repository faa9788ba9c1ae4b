"""Configuration of the paraphrase stage (one pydantic model, unknown keys rejected).

``model`` says what paraphrases, and nothing else does: ``offline`` (the default) is the deterministic
offline paraphraser, any other name is a chat model behind an OpenAI-compatible endpoint. A named model
either gets an endpoint (``base_url`` or ``api_key``, from the config or the usual ``OPENAI_*``
variables) or is an error: a run never falls back to the offline paraphraser on its own.

Secrets never leave this module in clear: the key is a ``SecretStr``, and every dump of ``base_url``
(manifest, dataset card, stats, messages) goes through :func:`redact_url`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_serializer, model_validator

from eqagen.core.errors import ConfigError

OFFLINE_MODEL = "offline"  # the model name that selects the offline paraphraser, and its provenance
ResponseFormat = Literal["auto", "json_schema", "json_object", "none"]
# Query parameters whose values are credentials (api-key, key, token, sig, password, ...).
_SECRET_PARAM = re.compile(r"key|token|secret|pass|pwd|auth|sig|credential", re.I)
REDACTED = "***"
MIN_SECRET_LENGTH = 6  # shorter strings are not scrubbed from text: they would mangle ordinary words
MIN_ITEMS_FOR_FAILURE_SHARE = 20  # the failure share is judged only once this many items are done


class ParaphraseConfig(BaseModel):
    """Everything the paraphrase stage reads. Defaults suit a local vLLM/Ollama server or OpenAI."""

    model_config = ConfigDict(extra="forbid")

    model: str = Field(
        OFFLINE_MODEL,
        min_length=1,
        description="'offline' (the deterministic offline paraphraser), or a chat model name such as "
        "gpt-4o-mini or a vLLM served model, which then needs base_url or api_key",
    )
    base_url: str | None = Field(None, description="OpenAI-compatible base URL (default: OPENAI_BASE_URL)")
    api_key: SecretStr | None = Field(None, description="API key (default: OPENAI_API_KEY)")
    # Sampling parameters: part of the cache key.
    temperature: float = Field(0.7, ge=0.0, le=2.0)
    top_p: float = Field(1.0, gt=0.0, le=1.0)
    max_output_tokens: int = Field(256, gt=0)
    response_format: ResponseFormat = Field(
        "auto", description="auto tries json_schema, then json_object, then plain text with tolerant parsing"
    )
    n_shots: int = Field(3, ge=0, le=16, description="few-shot examples per request, drawn from train")
    max_attempts: int = Field(3, ge=1, description="paraphrase attempts per item before keeping the template")
    max_failure_share: float = Field(
        0.5,
        ge=0.0,
        le=1.0,
        description=f"stop the run once more than this share of the items finished so far (at least "
        f"{MIN_ITEMS_FOR_FAILURE_SHARE}) kept their template text because every reply was rejected or their "
        "request failed; 1 never stops",
    )
    # Transport.
    concurrency: int = Field(8, ge=1, description="requests in flight at most")
    timeout_s: float = Field(60.0, gt=0.0, description="per-request timeout")
    max_retries: int = Field(6, ge=0, description="retries of one request on 429, 5xx, timeouts")
    backoff_base_s: float = Field(0.5, ge=0.0)
    backoff_max_s: float = Field(30.0, ge=0.0)
    # Budget for one run (None: unlimited). Cached responses cost nothing.
    max_requests: int | None = Field(None, ge=0, description="billed requests (responses received)")
    max_tokens: int | None = Field(None, ge=0, description="prompt + completion tokens, all requests")
    price_input_per_mtok: float = Field(0.0, ge=0.0, description="USD per million prompt tokens")
    price_output_per_mtok: float = Field(0.0, ge=0.0, description="USD per million completion tokens")
    cache: bool = Field(True, description="keep responses in a persistent sqlite cache (False: in memory only)")
    cache_path: Path | None = Field(
        None, description="the cache file (default: $EQAGEN_CACHE_DIR or ~/.cache/eqagen, paraphrase.sqlite)"
    )
    template_version: str = Field("1", description="bump to invalidate cached prompts")

    @model_validator(mode="before")
    @classmethod
    def _no_mode(cls, data: Any) -> Any:
        if isinstance(data, dict) and "mode" in data:
            raise ValueError(
                "'mode' is gone: the model alone says what paraphrases; use model: offline for the offline "
                "paraphraser, or a model name with base_url (or an API key) for an LLM"
            )
        return data

    @field_serializer("base_url")
    def _used_base_url(self, url: str | None) -> str | None:
        """The endpoint a named model is sent to, wherever it came from (the config, ``OPENAI_BASE_URL`` or
        the OpenAI API's default), redacted: the manifest records the endpoint actually used."""
        if self.offline:
            return redact_url(url) if url is not None else None
        return redact_url(used_base_url(url))

    @property
    def offline(self) -> bool:
        return self.model == OFFLINE_MODEL


def config_from(values: Mapping[str, Any]) -> ParaphraseConfig:
    """A validated config from plain values; the first problem as a ConfigError naming its key."""
    try:
        return ParaphraseConfig(**values)
    except ValidationError as err:
        first = err.errors()[0]
        key = ".".join(["paraphrase", *(str(p) for p in first["loc"])])
        problem = first["msg"].removeprefix("Value error, ")
        allowed = ", ".join(ParaphraseConfig.model_fields) if first["type"] == "extra_forbidden" else None
        raise ConfigError(key, problem, allowed=allowed) from None


def redact_url(url: str, secrets: tuple[str, ...] = ()) -> str:
    """``url`` safe to write down: credentials in the netloc (``user:password@``) and the values of
    credential-like query parameters (``api-key=``, ``key=``, ``token=``, ...) become ``***``, and so does
    any of ``secrets`` (e.g. the API key) found elsewhere in it."""
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
        if "@" in netloc:
            netloc = f"{REDACTED}@{netloc.rsplit('@', 1)[1]}"
        query = [(k, REDACTED if _SECRET_PARAM.search(k) else v) for k, v in parse_qsl(parts.query, True)]
        text = urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="*"), parts.fragment))
    except ValueError:  # not a URL at all: nothing of it is safe to show
        return REDACTED
    return scrub(text, secrets)


# Credentials that an endpoint or a proxy in front of it may echo, found by their form even where the
# secret itself is not known: an Authorization header's value, a bearer token, an OpenAI-style key.
_CREDENTIAL_TEXT = re.compile(
    r"(?i)(?P<name>\b(?:proxy-)?authori[sz]ation\W{0,3}\s*[:=]\s*)(?:bearer\s+|basic\s+)?[^\s\"'<>,;]+"
    r"|(?P<bearer>\bbearer\s+)[\w.~+/=-]{6,}"
    r"|\bsk-[\w-]{8,}"
)


def scrub(text: str, secrets: tuple[str, ...] = ()) -> str:
    """``text`` with every occurrence of a secret, and of anything in the form of a credential
    (:data:`_CREDENTIAL_TEXT`), replaced by ``***``: the one scrubber for text that comes from an endpoint
    or carries a URL, applied where that text enters (replies, error messages, cached replies)."""
    for secret in secrets:
        if len(secret) >= MIN_SECRET_LENGTH:
            text = text.replace(secret, REDACTED)
    return _CREDENTIAL_TEXT.sub(lambda m: (m.group("name") or m.group("bearer") or "") + REDACTED, text)


OPENAI_API_URL = "https://api.openai.com/v1"  # where the openai client sends a request with no base URL


def used_base_url(configured: str | None) -> str:
    """The base URL requests go to: the configured one, else ``OPENAI_BASE_URL``, else the OpenAI API's."""
    return configured or os.environ.get("OPENAI_BASE_URL") or OPENAI_API_URL


def resolve_cache_path(config: ParaphraseConfig) -> Path | None:
    """Where responses persist: the configured file, else one per user (shared by every dataset, since
    keys name the full request), or None when the cache is off."""
    if not config.cache:
        return None
    if config.cache_path is not None:
        return Path(config.cache_path).expanduser()
    root = os.environ.get("EQAGEN_CACHE_DIR") or os.path.join(
        os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "eqagen"
    )
    return Path(root) / "paraphrase.sqlite"


@dataclass(frozen=True)
class Endpoint:
    """Where requests go. ``base_url`` is without its query string; the query (an ``api-key=`` of a
    gateway) travels as ``query``, which the openai client appends to every request."""

    model: str
    base_url: str
    api_key: str = field(repr=False)
    query: dict[str, str] = field(default_factory=dict, repr=False)

    @property
    def display_url(self) -> str:
        """The URL as it may be written down (stats, messages): credentials redacted."""
        url = self.base_url + (f"?{urlencode(self.query)}" if self.query else "")
        return redact_url(url, self.secrets)

    @property
    def secrets(self) -> tuple[str, ...]:
        """What must never be written: the key, the URL's user info and password, credential query values."""
        parts = urlsplit(self.base_url)
        userinfo = parts.netloc.rsplit("@", 1)[0] if "@" in parts.netloc else ""
        credentials = [v for k, v in self.query.items() if _SECRET_PARAM.search(k)]
        return tuple(s for s in (self.api_key, userinfo, parts.password or "", *credentials) if s)

    @property
    def identity(self) -> str:
        """The endpoint as the cache names it: scheme, host, port and path; never credentials or a query."""
        parts = urlsplit(self.base_url)
        try:
            port = parts.port or {"http": 80, "https": 443}.get(parts.scheme, 0)
        except ValueError:  # not a port number: the client will say so; the key still names the rest
            port = 0
        return f"{parts.scheme}://{(parts.hostname or '').lower()}:{port}{parts.path.rstrip('/')}"


def _split_query(url: str) -> tuple[str, dict[str, str]]:
    """The openai client joins paths onto ``base_url`` verbatim, so a query string there would end up in
    the middle of the path; it is taken off and sent as the client's default query instead."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, parts.path, "", "")), dict(parse_qsl(parts.query, True))


def resolve_endpoint(config: ParaphraseConfig) -> Endpoint | None:
    """The endpoint to call, or None when the config names the offline paraphraser.

    A named model needs a base URL or a key: with neither, there is nothing to call, and that is a
    :class:`ConfigError` (never a silent offline run). A local server (vLLM, Ollama, llama.cpp) needs no
    key; the openai client still wants one, so a placeholder is passed when only a base URL is known.
    """
    if config.offline:
        return None
    base_url = config.base_url or os.environ.get("OPENAI_BASE_URL") or None
    key = config.api_key.get_secret_value() if config.api_key else os.environ.get("OPENAI_API_KEY", "")
    if not (base_url or key):
        raise ConfigError(
            "paraphrase.model",
            f"model '{config.model}' has no endpoint: no base_url and no API key",
            allowed="set base_url (--base-url) for a local server, or OPENAI_API_KEY for OpenAI; "
            f"or use model '{OFFLINE_MODEL}' (--offline) for the offline paraphraser",
        )
    url, query = _split_query(used_base_url(base_url))
    return Endpoint(model=config.model, base_url=url, api_key=key or "not-needed", query=query)
