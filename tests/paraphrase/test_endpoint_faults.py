"""``eqagen paraphrase`` on a dataset written by ``eqagen generate``, against a real HTTP server on
127.0.0.1 that speaks the chat-completions protocol (the real ``openai`` client talks to it) and fails
on purpose: 429 with Retry-After, 500/503, a hang past the client's timeout, a connection closed in the
middle of a reply, invalid JSON, missing fields, answers that flip relations, change numbers,
coordinates or objects, or carry injected instructions; and a dead endpoint.

What must hold: no row lost, nothing false validated, the true exit status, a rerun that resends no
completed request, and the API key in no output file or cache.
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import pytest

from eqagen.cli import main
from eqagen.config import load_config
from eqagen.flows.pipeline import generate_inline
from eqagen.outputs.readers import read_questions
from eqagen.paraphrase.validator import check_paraphrase
from tests.paraphrase import faults
from tests.paraphrase.chat_server import ECHOES, ScriptedChatServer

KEY = "sk-PLANTED-key-7f3a9c1e5b"
URL_PASSWORD = "PLANTED-pass-4d2e"
URL_TOKEN = "PLANTED-query-9b8c"
PLANTED = (KEY, URL_PASSWORD, URL_TOKEN)
FAST = ["--set", "backoff_base_s=0.01", "--set", "backoff_max_s=0.05", "--set", "max_retries=2"]
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """A small dataset as `eqagen generate demo` writes it (offline paraphrases)."""
    out = tmp_path_factory.mktemp("demo") / "out"
    overrides = ["generation.n_episodes=20", "generation.batch_size=20", "runner.kind=inline", "runner.progress=false"]
    generate_inline(load_config("demo", overrides), out)
    return out


@pytest.fixture(autouse=True)
def no_openai_env(monkeypatch, tmp_path):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.setenv("EQAGEN_CACHE_DIR", str(tmp_path / "user-cache"))


def paraphrase(in_dir: Path, out: Path, url: str, cache: Path, *extra: str) -> int:
    args = ["paraphrase", str(in_dir), "--out", str(out), "--model", "local-model", "--base-url", url]
    return main([*args, "--cache", str(cache), *FAST, *extra])


def nothing_written(out: Path) -> bool:
    """No dataset file in ``out``: at most eqagen's own state (the lock it took)."""
    return not out.exists() or {p.name for p in out.iterdir()} <= {".eqagen"}


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then closed: connections are refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# Each scripted row gets one of these: the replies it receives, in order (then "good").
TRANSIENT = {  # a fault, then a faithful reply: validated after (attempts) replies
    "429": (["429", "good"], 1),
    "503": (["503", "good"], 1),
    "hang past the timeout": (["slow", "good"], 1),
    "closed mid-reply": (["close", "good"], 1),
    "invalid JSON once": (["invalid_json", "good"], 2),
    "no message once": (["no_message", "good"], 2),
}
PERSISTENT = {  # never fixed within the limits (max_retries 2, max_attempts 3)
    "500 every time": ["500"] * 3,
    "no choices every time": ["no_choices"] * 3,
    **{f"planted: {name}": [name] * 3 for name in faults.PLANTED},
}
SCRIPTS = {**{k: v for k, (v, _) in TRANSIENT.items()}, **PERSISTENT}


def assign_scripts(rows) -> dict[tuple[str, str], str]:
    """(question, answer) -> script name, over the rows whose text is unique (the server knows an item by
    its text): each planted fault to a row it changes, then every script in turn to the rest."""
    counts = Counter((r.question, r.answer) for r in rows)
    free = sorted((r for r in rows if counts[(r.question, r.answer)] == 1), key=lambda r: r.question_id)
    assigned: dict[tuple[str, str], str] = {}
    for name in sorted(faults.PLANTED):
        target = next(r for r in free if faults.PLANTED[name](r.question, r.answer) != (r.question, r.answer))
        assigned[(target.question, target.answer)] = f"planted: {name}"
        free.remove(target)
    names = sorted(SCRIPTS)
    assigned.update({(r.question, r.answer): names[i % len(names)] for i, r in enumerate(free)})
    return assigned


@pytest.mark.slow  # every fault against a live endpoint, then a rerun: about 16 s
def test_endpoint_faults_lose_no_row_validate_nothing_false_and_a_rerun_resends_nothing(dataset, tmp_path):
    rows = {r.question_id: r for r in read_questions(dataset)}
    assigned = assign_scripts(rows.values())
    assert set(assigned.values()) == set(SCRIPTS), "too few rows to try every fault"
    script = {q: list(SCRIPTS[name]) for q, name in assigned.items()}
    cache = tmp_path / "cache.sqlite"
    with ScriptedChatServer(script, slow_s=1.5) as server:
        start = time.monotonic()
        code = paraphrase(dataset, tmp_path / "out", server.base_url, cache, "--set", "timeout_s=0.5",
                          "--set", "max_failure_share=1")  # fmt: skip
        elapsed = time.monotonic() - start
        completed = {digest for digest, n in server.ok_bodies.items() if n}
        faithful = {(q, a) for _, behavior, q, a in server.sent if behavior in ("good", "slow")}
        requests_first = dict(server.bodies)
        assert code == 0
        # A rerun (new --out, same cache) asks again only for what never got a chat completion.
        again = paraphrase(dataset, tmp_path / "again", server.base_url, cache, "--set", "max_failure_share=1")
        assert again == 0
        resent = {d for d, n in server.bodies.items() if n > requests_first.get(d, 0)}
    assert elapsed < 60
    assert not resent & completed

    out = {r.question_id: r for r in read_questions(tmp_path / "out")}
    assert sorted(out) == sorted(rows)  # no row lost, none added
    for qid, row in out.items():
        template, para = rows[qid], row.paraphrase
        name = assigned.get((template.question, template.answer))
        text = (para.question, para.answer)
        if para.validated:  # what the model wrote faithfully, or the template text itself
            assert text in faithful or text == (template.question, template.answer), (name, text)
            assert check_paraphrase(template, *text).ok and para.model == "local-model" and para.reason == ""
        else:  # the template text, with the truth about what happened
            assert text == (template.question, template.answer) and para.reason
        if name in TRANSIENT:
            assert para.validated and para.attempts == TRANSIENT[name][1], (name, para)
        elif name == "500 every time":
            assert (para.validated, para.model, para.attempts) == (False, "", 0)
            assert para.reason.startswith("request failed after 2 retries: 500")
        elif name == "no choices every time":
            assert (para.validated, para.model, para.attempts) == (False, "", 3)
            assert para.reason.startswith("invalid response body (no choices)")
        elif name is not None:  # a planted fault: rejected unless it left the text as it was
            planted = faults.PLANTED[name.removeprefix("planted: ")](template.question, template.answer)
            assert para.validated == (planted == (template.question, template.answer)), (name, planted, para)
            assert para.model == "local-model" and para.attempts == (1 if para.validated else 3)
    changed = {
        (q, a) for (q, a), name in assigned.items()
        if name.startswith("planted: ") and faults.PLANTED[name.removeprefix("planted: ")](q, a) != (q, a)
    }  # fmt: skip
    assert len(changed) >= len(faults.PLANTED)  # every planted fault changed a row's text, and none passed
    assert not any(r.paraphrase.validated for r in out.values() if (r.question, r.answer) in changed)
    again = {r.question_id: r.paraphrase for r in read_questions(tmp_path / "again")}
    for qid, para in again.items():  # the rerun: what failed in transport was asked again, and answered
        if assigned.get((rows[qid].question, rows[qid].answer)) in ("500 every time", "no choices every time"):
            assert para.validated, para


def test_retry_after_is_honoured(dataset, tmp_path):
    rows = read_questions(dataset)
    with ScriptedChatServer({rows[0].question: ["429"]}, retry_after="1") as server:
        start = time.monotonic()
        code = paraphrase(dataset, tmp_path / "out", server.base_url, tmp_path / "c.sqlite", "--set", "backoff_max_s=5")
        elapsed = time.monotonic() - start
    assert code == 0 and elapsed >= 1.0  # waited the server's second, not the 10 ms backoff


def test_a_planted_api_key_and_url_credentials_are_in_no_output_file_cache_or_message(
    dataset, tmp_path, monkeypatch, capsys
):
    monkeypatch.setenv("PLANTED_KEY", KEY)
    with ScriptedChatServer() as server:
        url = server.base_url.replace("http://", f"http://user:{URL_PASSWORD}@") + f"?api-key={URL_TOKEN}&v=1"
        code = paraphrase(dataset, tmp_path / "out", url, tmp_path / "cache.sqlite", "--api-key-env", "PLANTED_KEY")
        assert code == 0 and server.requests > 0
        # A dead endpoint with the same credentials (and an empty cache): the message names it, redacted.
        dead = f"http://user:{URL_PASSWORD}@127.0.0.1:{free_port()}/v1?api-key={URL_TOKEN}"
        code = paraphrase(dataset, tmp_path / "dead", dead, tmp_path / "cache2.sqlite", "--api-key-env", "PLANTED_KEY")
        assert code == 1
    printed = capsys.readouterr()
    assert "http://***@127.0.0.1" in printed.err and "api-key=***" in printed.err
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name == "manifest.json" for p in files) and any(p.name.startswith("cache.sqlite") for p in files)
    for path in files:
        data = path.read_bytes()
        assert not [s for s in PLANTED if s.encode() in data], path
    for secret in PLANTED:
        assert secret not in printed.out + printed.err
    manifest_url = (tmp_path / "out" / "manifest.json").read_text()
    assert "http://***@127.0.0.1" in manifest_url and "api-key=***" in manifest_url


def test_a_key_echoed_in_every_field_of_a_reply_is_in_no_output_file_cache_or_message(
    dataset, tmp_path, monkeypatch, capsys
):
    """Regression: an endpoint that echoed the request's Authorization header (in its reply, or as an HTML
    proxy error page) put `Bearer sk-...` into `paraphrase.reason` of every question shard and the cache."""
    monkeypatch.setenv("PLANTED_KEY", KEY)
    rows = read_questions(dataset)
    script = {r.question: [ECHOES[i % len(ECHOES)]] * 3 for i, r in enumerate(rows[:40])}
    with ScriptedChatServer(script) as server:
        code = paraphrase(dataset, tmp_path / "out", server.base_url, tmp_path / "cache.sqlite",
                          "--api-key-env", "PLANTED_KEY", "--set", "max_failure_share=1")  # fmt: skip
    printed = capsys.readouterr()
    assert code == 0, printed.err
    assert all(server.behaviors[echo] > 0 for echo in ECHOES), server.behaviors
    reasons = [r.paraphrase.reason for r in read_questions(tmp_path / "out")]
    assert sum("***" in reason for reason in reasons) >= 10  # the echoes reached the reasons
    files = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert any(p.name.startswith("cache.sqlite") for p in files) and any(p.name == "stats.json" for p in files)
    for path in files:
        assert KEY.encode() not in path.read_bytes(), path
    assert KEY not in printed.out + printed.err


def test_a_cached_reply_is_credited_only_to_the_endpoint_that_produced_it(dataset, tmp_path, monkeypatch, capsys):
    """Regression: the cache key left out the endpoint. A cache filled from a good server, then pointed at a
    server answering 500 to everything: exit 0, every row validated as the model, the 500-server asked
    nothing, and its URL in the manifest. And an endpoint from OPENAI_BASE_URL was recorded as null."""
    cache = tmp_path / "cache.sqlite"
    with ScriptedChatServer() as good:
        assert paraphrase(dataset, tmp_path / "a", good.base_url, cache) == 0
        good_url, port = good.base_url, int(good.base_url.split(":")[2].split("/")[0])
    with ScriptedChatServer(default="500") as failing:
        code = paraphrase(dataset, tmp_path / "b", failing.base_url, cache)
    assert code == 1 and failing.requests > 0
    assert "paraphrase stopped" in capsys.readouterr().err
    monkeypatch.setenv("OPENAI_BASE_URL", good_url)  # the first endpoint again, named by the environment
    with ScriptedChatServer(port=port) as again:
        args = ["paraphrase", str(dataset), "--out", str(tmp_path / "c"), "--model", "local-model"]
        assert main([*args, "--cache", str(cache), *FAST]) == 0
        assert again.requests == 0  # every reply from the cache: the same endpoint produced them
    manifest = json.loads((tmp_path / "c" / "manifest.json").read_text())
    assert manifest["config"]["paraphrase"]["base_url"] == good_url


def test_a_dead_endpoint_stops_the_command_within_seconds_with_one_line(dataset, tmp_path):
    """Regression: the 520-row demo was still retrying row by row after 5 minutes, then exited 0 with every
    row claiming the model. The command runs in a subprocess so that the old behaviour fails by time."""
    url = f"http://127.0.0.1:{free_port()}/v1"
    cmd = [sys.executable, "-m", "eqagen.cli", "paraphrase", str(dataset), "--out", str(tmp_path / "out"),
           "--model", "local-model", "--base-url", url, "--cache", str(tmp_path / "c.sqlite")]  # fmt: skip
    start = time.monotonic()
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=60, cwd=REPO, env={**os.environ})
    elapsed = time.monotonic() - start
    assert done.returncode == 1, done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"eqagen: error: paraphrase endpoint {url}: cannot connect")
    assert "fix: start the server or correct --base-url" in lines[0]
    assert elapsed < 20  # the interpreter's start included; the run itself stops at its first request
    assert nothing_written(tmp_path / "out")


def test_an_endpoint_that_dies_mid_run_stops_the_run_and_a_rerun_resends_nothing_answered(dataset, tmp_path, capsys):
    rows = read_questions(dataset)
    cache = tmp_path / "cache.sqlite"
    server = ScriptedChatServer(delay_s=0.05).start()
    url = server.base_url
    port = int(url.split(":")[2].split("/")[0])
    killer = _stop_after(server, 8)
    # Every failed item is tolerated (max_failure_share=1): what stops the run is the endpoint's death.
    code = paraphrase(dataset, tmp_path / "out", url, cache, "--set", "concurrency=2",
                      "--set", "max_failure_share=1")  # fmt: skip
    killer.join()
    answered = server.responses_ok
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and 0 < answered < len(rows)
    assert len(err) == 1 and f"paraphrase endpoint {url}: cannot connect" in err[0]
    assert nothing_written(tmp_path / "out")
    with ScriptedChatServer(port=port) as again:  # the same endpoint, back up
        assert paraphrase(dataset, tmp_path / "out", again.base_url, cache, "--set", "concurrency=2") == 0
        # only what the dead run never got: a reply the server sent as it died, with a second request open,
        # may not have reached the client, which then asks for it again
        assert len(rows) - answered <= again.requests <= len(rows) - answered + 1


def _stop_after(server: ScriptedChatServer, n: int):
    import threading

    def watch() -> None:
        while server.responses_ok < n:
            time.sleep(0.01)
        server.stop()

    thread = threading.Thread(target=watch, daemon=True)
    thread.start()
    return thread


def test_a_named_model_without_an_endpoint_is_bad_input_not_an_offline_run(dataset, tmp_path, capsys):
    """Regression: `--model gpt-4o-mini` with no key and no URL silently ran offline and exited 0."""
    code = main(["paraphrase", str(dataset), "--out", str(tmp_path / "out"), "--model", "gpt-4o-mini"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1
    assert "'gpt-4o-mini' has no endpoint" in err[0] and "--offline" in err[0]
    assert not (tmp_path / "out").exists()
    assert main(["paraphrase", str(dataset), "--out", str(tmp_path / "none")]) == 2  # neither --model nor --offline
    assert "no model named" in capsys.readouterr().err


def test_a_run_of_rejected_replies_is_an_error_and_writes_nothing(dataset, tmp_path, capsys):
    with ScriptedChatServer(default="drop") as server:
        code = paraphrase(dataset, tmp_path / "out", server.base_url, tmp_path / "c.sqlite")
        sent = server.requests
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 1 and len(err) == 1 and "paraphrase stopped:" in err[0] and "dropped" in err[0]
    assert sent < 3 * len(read_questions(dataset))  # it stopped early, not after every item's attempts
    assert nothing_written(tmp_path / "out")


def test_ctrl_c_exits_130_with_one_line(dataset, tmp_path):
    with ScriptedChatServer(delay_s=0.5) as server:
        cmd = [sys.executable, "-m", "eqagen.cli", "paraphrase", str(dataset), "--out", str(tmp_path / "out"),
               "--model", "local-model", "--base-url", server.base_url, "--cache", str(tmp_path / "c")]  # fmt: skip
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        while server.requests == 0 and proc.poll() is None:
            time.sleep(0.05)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=60)
    assert proc.returncode == 130, err
    assert err.strip().splitlines() == ["eqagen: interrupted; run the same command again to resume"]
