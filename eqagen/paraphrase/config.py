"""Configuration of the paraphrase stage (one pydantic model, unknown keys rejected).

The endpoint is resolved from the config first, then the usual ``OPENAI_*`` variables. With no model,
or no way to reach an endpoint, ``mode="auto"`` falls back to the deterministic offline paraphraser, so
every preset runs without a network.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from eqagen.core.errors import ConfigError

ResponseFormat = Literal["auto", "json_schema", "json_object", "none"]


class ParaphraseConfig(BaseModel):
    """Everything the paraphrase stage reads. Defaults suit a local vLLM/Ollama server or OpenAI."""

    model_config = ConfigDict(extra="forbid")

    mode: Literal["auto", "llm", "offline"] = Field(
        "auto", description="auto: LLM when a model and an endpoint are configured, else offline"
    )
    model: str = Field("", description="chat model name, e.g. gpt-4o-mini or a vLLM served model")
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
    # Transport.
    concurrency: int = Field(8, ge=1, description="requests in flight at most")
    timeout_s: float = Field(60.0, gt=0.0, description="per-request timeout")
    max_retries: int = Field(6, ge=0, description="retries of one request on 429, 5xx, timeouts")
    backoff_base_s: float = Field(0.5, ge=0.0)
    backoff_max_s: float = Field(30.0, ge=0.0)
    # Budget for one run (None: unlimited). Cached responses cost nothing.
    max_requests: int | None = Field(None, ge=0)
    max_tokens: int | None = Field(None, ge=0, description="prompt + completion tokens, all requests")
    price_input_per_mtok: float = Field(0.0, ge=0.0, description="USD per million prompt tokens")
    price_output_per_mtok: float = Field(0.0, ge=0.0, description="USD per million completion tokens")
    cache: bool = Field(True, description="keep responses in a persistent sqlite cache (False: in memory only)")
    cache_path: Path | None = Field(
        None, description="the cache file (default: $EQAGEN_CACHE_DIR or ~/.cache/eqagen, paraphrase.sqlite)"
    )
    template_version: str = Field("1", description="bump to invalidate cached prompts")


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
    model: str
    base_url: str | None
    api_key: str


def resolve_endpoint(config: ParaphraseConfig) -> Endpoint | None:
    """The endpoint to call, or None for the offline paraphraser.

    A local server (vLLM, Ollama, llama.cpp) needs no key; the openai client still wants one, so a
    placeholder is passed when only a base URL is known.
    """
    if config.mode == "offline":
        return None
    base_url = config.base_url or os.environ.get("OPENAI_BASE_URL") or None
    key = config.api_key.get_secret_value() if config.api_key else os.environ.get("OPENAI_API_KEY", "")
    reachable = bool(config.model) and bool(base_url or key)
    if not reachable:
        if config.mode == "llm":
            missing = "model" if not config.model else "base_url or api_key"
            raise ConfigError(
                f"paraphrase.{missing.split()[0]}",
                f"mode 'llm' needs a {missing}",
                allowed="set it in the config, or OPENAI_BASE_URL / OPENAI_API_KEY, or use mode 'offline'",
            )
        return None
    return Endpoint(model=config.model, base_url=base_url, api_key=key or "not-needed")
