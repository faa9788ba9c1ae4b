"""The paraphrase stage of ``eqagen generate`` when the config names a model: it uses it or fails, at
once, and writes no secret anywhere under --out."""

from __future__ import annotations

import socket
import time
from pathlib import Path

import pytest

from eqagen.cli import main
from eqagen.outputs.readers import read_questions
from tests.paraphrase.chat_server import ScriptedChatServer

KEY = "sk-PLANTED-gen-3e1d77aa"
URL_PASSWORD = "PLANTED-genpass-51c0"
URL_TOKEN = "PLANTED-gentoken-0b9e"
SMALL = ["--set", "generation.n_episodes=12", "--set", "generation.batch_size=12", "--no-progress"]


@pytest.fixture(autouse=True)
def no_openai_env(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("EQAGEN_CACHE_DIR", str(tmp_path / "user-cache"))


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def generate(out: Path, *paraphrase: str, runner: str = "inline") -> int:
    sets = [x for item in paraphrase for x in ("--set", f"paraphrase.{item}")]
    return main(["generate", "demo", "--out", str(out), "--runner", runner, *SMALL, *sets])


def planted_in(root: Path) -> list[str]:
    """Files under ``root`` (hidden ones included) that hold a planted secret."""
    found = []
    for path in root.rglob("*"):
        if path.is_file():
            data = path.read_bytes()
            found += [f"{path}: {s}" for s in (KEY, URL_PASSWORD, URL_TOKEN) if s.encode() in data]
    return found


def test_a_named_model_is_used_row_by_row(tmp_path):
    with ScriptedChatServer() as server:
        assert generate(tmp_path / "out", "model=local-model", f"base_url={server.base_url}") == 0
        assert server.requests > 0
    rows = read_questions(tmp_path / "out")
    assert rows and all(r.paraphrase.model == "local-model" and r.paraphrase.validated for r in rows)
    assert all(r.paraphrase.attempts == 1 and r.paraphrase.reason == "" for r in rows)


def test_a_dead_endpoint_fails_the_run_before_any_work(tmp_path, capsys):
    start = time.monotonic()
    code = generate(tmp_path / "out", "model=local-model", f"base_url=http://127.0.0.1:{free_port()}/v1")
    elapsed = time.monotonic() - start
    err = capsys.readouterr().err.strip().splitlines()
    assert code != 0 and elapsed < 10
    assert err[-1].startswith("eqagen: error: paraphrase endpoint http://127.0.0.1:") and "cannot connect" in err[-1]
    assert not list((tmp_path / "out").rglob("*.parquet"))  # not one batch sampled, nothing written


def test_a_named_model_without_an_endpoint_fails_the_run_before_any_work(tmp_path, capsys):
    assert generate(tmp_path / "out", "model=gpt-4o-mini") == 2
    assert "'gpt-4o-mini' has no endpoint" in capsys.readouterr().err
    assert not list((tmp_path / "out").rglob("*.parquet"))


def test_planted_credentials_are_in_no_file_under_out_nor_the_cache(tmp_path):
    with ScriptedChatServer() as server:
        url = server.base_url.replace("http://", f"http://user:{URL_PASSWORD}@") + f"?api-key={URL_TOKEN}"
        assert generate(tmp_path / "out", "model=local-model", f"base_url={url}", f"api_key={KEY}") == 0
    manifest = (tmp_path / "out" / "manifest.json").read_text()
    assert "http://***@127.0.0.1" in manifest and "api-key=***" in manifest
    assert planted_in(tmp_path) == []  # --out (its .eqagen checkpoints too) and the user cache


@pytest.mark.slow
def test_planted_credentials_are_not_in_prefects_database_either(tmp_path):
    """The Prefect runner records the flow's parameters (the config) in its database under --out."""
    with ScriptedChatServer() as server:
        url = server.base_url.replace("http://", f"http://user:{URL_PASSWORD}@") + f"?api-key={URL_TOKEN}"
        code = generate(tmp_path / "out", "model=local-model", f"base_url={url}", f"api_key={KEY}", runner="local")
        assert code == 0
    assert list((tmp_path / "out").rglob("*.db")) and planted_in(tmp_path) == []
