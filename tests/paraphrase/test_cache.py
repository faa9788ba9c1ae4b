import sqlite3

import pytest

from eqagen.core.errors import DataFileError
from eqagen.paraphrase.cache import ResponseCache, request_key

MESSAGES = [{"role": "system", "content": "s"}, {"role": "user", "content": "u"}]
SAMPLING = {"temperature": 0.7, "top_p": 1.0, "max_tokens": 256, "response_format": "auto", "seed": 0}


E = "http://127.0.0.1:8000/v1"


def test_key_changes_with_endpoint_model_messages_sampling_and_template_version():
    base = request_key(E, "m", MESSAGES, SAMPLING, "1:abc")
    assert base == request_key(E, "m", [dict(m) for m in MESSAGES], dict(SAMPLING), "1:abc")
    assert base != request_key("http://127.0.0.1:8001/v1", "m", MESSAGES, SAMPLING, "1:abc")
    assert base != request_key(E, "other", MESSAGES, SAMPLING, "1:abc")
    assert base != request_key(E, "m", [*MESSAGES, {"role": "user", "content": "x"}], SAMPLING, "1:abc")
    assert base != request_key(E, "m", MESSAGES, {**SAMPLING, "temperature": 0.2}, "1:abc")
    assert base != request_key(E, "m", MESSAGES, SAMPLING, "2:abc")


def test_the_endpoint_identity_names_scheme_host_port_and_path_and_never_credentials():
    from eqagen.paraphrase.config import Endpoint

    def identity(url: str) -> str:
        return Endpoint("m", url, "sk-key").identity

    assert identity("http://user:pw@LOCALHOST/v1/") == "http://localhost:80/v1"
    assert identity("https://gw.example.com/openai") == "https://gw.example.com:443/openai"
    assert identity("http://127.0.0.1:8000/v1") != identity("http://127.0.0.1:8001/v1")
    assert identity("http://127.0.0.1:8000/v1") != identity("http://127.0.0.1:8000/v2")
    assert identity("http://user:pw@h:1/v1") == identity("http://other:secret@h:1/v1")


def test_a_put_is_committed_at_once_and_seen_by_another_connection(tmp_path):
    path = tmp_path / "c.sqlite"
    writer = ResponseCache(path)
    writer.put("k1", "m", '{"question": "q", "answer": "a"}', 10, 3, {"n_messages": 2})
    # A second connection (another process would see the same) reads it before the writer closes.
    other = sqlite3.connect(path)
    assert other.execute("SELECT content, prompt_tokens FROM responses").fetchall() == [
        ('{"question": "q", "answer": "a"}', 10)
    ]
    assert other.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    writer.put("k1", "m", "different", 1, 1, {})  # never stored twice, never overwritten
    assert len(writer) == 1 and writer.get("k1").content.startswith("{")
    writer.close()
    with ResponseCache(path) as again:
        assert again.get("k1").completion_tokens == 3 and again.get("missing") is None


def test_a_corrupt_cache_file_names_the_file_and_the_fix(tmp_path):
    path = tmp_path / "bad.sqlite"
    path.write_bytes(b"this is not sqlite" * 100)
    with pytest.raises(DataFileError, match="cache_path"):
        ResponseCache(path)


def test_a_cache_that_cannot_be_created_names_the_cache_and_the_fix(tmp_path):
    """Regression: with HOME unwritable, `paraphrase` said "choose another --out"; the fix is --cache."""
    blocked = tmp_path / "home"
    blocked.write_text("a file where the cache's folder would be")
    with pytest.raises(DataFileError, match=r"cannot create the response cache: .*fix: pass --cache FILE"):
        ResponseCache(blocked / ".cache" / "eqagen" / "paraphrase.sqlite")
