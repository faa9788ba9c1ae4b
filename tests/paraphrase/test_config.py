import pytest
from pydantic import ValidationError

from eqagen.core.errors import ConfigError
from eqagen.paraphrase.config import ParaphraseConfig, config_from, redact_url, resolve_endpoint


@pytest.fixture
def no_openai_env(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def test_unknown_keys_are_rejected():
    with pytest.raises(ValidationError, match="extra"):
        ParaphraseConfig(modle="gpt-4o-mini")


def test_the_default_and_only_the_name_offline_select_the_offline_paraphraser(no_openai_env):
    assert ParaphraseConfig().model == "offline" and resolve_endpoint(ParaphraseConfig()) is None
    assert resolve_endpoint(ParaphraseConfig(model="offline", base_url="http://x/v1")) is None


def test_endpoint_from_config_or_environment(monkeypatch, no_openai_env):
    local = resolve_endpoint(ParaphraseConfig(model="m", base_url="http://localhost:8000/v1"))
    assert local is not None and local.api_key == "not-needed"
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    monkeypatch.setenv("OPENAI_BASE_URL", "http://env/v1")
    env = resolve_endpoint(ParaphraseConfig(model="m"))
    assert (env.base_url, env.api_key) == ("http://env/v1", "sk-env")
    explicit = resolve_endpoint(ParaphraseConfig(model="m", base_url="http://cfg/v1", api_key="sk-cfg"))
    assert (explicit.base_url, explicit.api_key) == ("http://cfg/v1", "sk-cfg")


def test_a_named_model_without_key_or_url_is_an_error_not_an_offline_run(no_openai_env):
    # Regression: `--model gpt-4o-mini` with no key and no URL used to run offline and claim success.
    with pytest.raises(ConfigError, match=r"paraphrase\.model.*'gpt-4o-mini' has no endpoint.*OPENAI_API_KEY"):
        resolve_endpoint(ParaphraseConfig(model="gpt-4o-mini"))


def test_the_old_mode_key_is_refused_with_the_one_spelling_to_use():
    with pytest.raises(ConfigError, match=r"'paraphrase': 'mode' is gone.*model: offline"):
        config_from({"mode": "offline"})
    with pytest.raises(ConfigError, match=r"'paraphrase.modle'.*allowed: model"):
        config_from({"modle": "m"})


def test_key_is_secret_in_dumps():
    config = ParaphraseConfig(model="m", api_key="sk-secret")
    assert "sk-secret" not in repr(config) and "sk-secret" not in config.model_dump_json()


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("http://user:pa55word@gw.example:8080/v1", "http://***@gw.example:8080/v1"),
        ("https://gw.example/v1?api-key=SECRET1&api-version=2024-06-01", "https://gw.example/v1?api-key=***&api-version=2024-06-01"),
        ("https://gw.example/v1?key=SECRET1&token=SECRET2&sig=SECRET3", "https://gw.example/v1?key=***&token=***&sig=***"),
        ("http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"),
    ],
)  # fmt: skip
def test_credentials_in_a_base_url_are_redacted_wherever_the_config_is_dumped(url, shown):
    config = ParaphraseConfig(model="m", base_url=url)
    assert redact_url(url) == shown
    assert config.model_dump(mode="json")["base_url"] == shown
    for secret in ("pa55word", "SECRET1", "SECRET2", "SECRET3"):
        assert secret not in config.model_dump_json()


def test_a_query_in_the_base_url_travels_as_the_clients_default_query(no_openai_env):
    endpoint = resolve_endpoint(ParaphraseConfig(model="m", base_url="https://gw.example/v1?api-key=SECRET1"))
    assert endpoint.base_url == "https://gw.example/v1" and endpoint.query == {"api-key": "SECRET1"}
    assert endpoint.display_url == "https://gw.example/v1?api-key=***" and "SECRET1" not in repr(endpoint)
