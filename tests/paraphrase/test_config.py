import pytest
from pydantic import ValidationError

from eqagen.core.errors import ConfigError
from eqagen.paraphrase.config import ParaphraseConfig, resolve_endpoint


def test_unknown_keys_are_rejected():
    with pytest.raises(ValidationError, match="extra"):
        ParaphraseConfig(modle="gpt-4o-mini")


def test_endpoint_from_config_or_environment(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    assert resolve_endpoint(ParaphraseConfig(model="m")) is None  # nothing to reach: offline
    assert resolve_endpoint(ParaphraseConfig(base_url="http://x/v1")) is None  # no model: offline
    local = resolve_endpoint(ParaphraseConfig(model="m", base_url="http://localhost:8000/v1"))
    assert local is not None and local.api_key == "not-needed"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    env = resolve_endpoint(ParaphraseConfig(model="m"))
    assert (env.base_url, env.api_key) == ("http://env/v1", "sk-env")
    explicit = resolve_endpoint(ParaphraseConfig(model="m", base_url="http://cfg/v1", api_key="sk-cfg"))
    assert (explicit.base_url, explicit.api_key) == ("http://cfg/v1", "sk-cfg")
    assert resolve_endpoint(ParaphraseConfig(model="m", mode="offline")) is None


def test_llm_mode_without_an_endpoint_names_what_is_missing(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigError, match=r"paraphrase\.model"):
        resolve_endpoint(ParaphraseConfig(mode="llm"))
    with pytest.raises(ConfigError, match="base_url or api_key"):
        resolve_endpoint(ParaphraseConfig(mode="llm", model="m"))


def test_key_is_secret_in_dumps():
    config = ParaphraseConfig(model="m", api_key="sk-secret")
    assert "sk-secret" not in repr(config) and "sk-secret" not in config.model_dump_json()
