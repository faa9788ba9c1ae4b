"""``eqagen baseline``: blind, socratic and api runs end to end against a real HTTP server on 127.0.0.1 that
answers from the prompt it receives; a run killed midway resumes from the cache."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from eqagen.outputs.harness import LETTERS
from tests.outputs.model_fixtures import episodes_and_records, write_family_dataset
from tests.paraphrase.chat_server import ScriptedChatServer, _completion


class ReadingServer(ScriptedChatServer):
    """A stand-in for a chat model (we run no real one here): it answers the letter of the option whose words
    the prompt's context (everything before "Question:") holds most often; with no context, A."""

    def reply(self, body: dict):
        messages = body.get("messages", [])
        prompt = messages[-1]["content"]
        context, _, rest = prompt.partition("Question:")
        options = re.findall(r"^([A-Z])\. (.*)$", rest, re.M)
        words = re.findall(r"[a-z]+", context.lower())

        def score(text: str) -> int:
            return sum(words.count(w) for w in set(re.findall(r"[a-z]+", text.lower())))

        letter = max(options, key=lambda o: (score(o[1]), -ord(o[0])))[0] if options and words else "A"
        time.sleep(self.delay_s)
        with self.lock:
            self.requests += 1
            self.responses_ok += 1
            self.ok_bodies[json.dumps(messages, sort_keys=True)] += 1
        return 200, _completion(body, messages, f"The answer is {letter}.", usage=True), {}


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_family_dataset(tmp_path_factory.mktemp("families") / "ds")


def baseline(*args: str, env: dict | None = None, wait: bool = True):
    cmd = [sys.executable, "-m", "eqagen.cli", "baseline", *args]
    if not wait:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def test_three_baselines_end_to_end(dataset, tmp_path):
    test_ids = {r.question_id for r in episodes_and_records()[1] if r.split == "test"}
    with ReadingServer() as server:
        for mode in ("blind", "socratic", "api"):
            out = tmp_path / f"{mode}.jsonl"
            proc = baseline(mode, str(dataset), "--model", "local-model", "--base-url", server.base_url, "--out",
                            str(out), "--cache", str(tmp_path / "cache.sqlite"))  # fmt: skip
            assert proc.returncode == 0, proc.stderr
            rows = [json.loads(line) for line in out.read_text().splitlines()]
            assert {r["question_id"] for r in rows} == test_ids and len(rows) == len(test_ids)
            assert all(r["choice"] in LETTERS for r in rows)
        n_first = server.requests
        assert n_first == 3 * len(test_ids)
        picks = {m: [json.loads(x)["choice"] for x in (tmp_path / f"{m}.jsonl").read_text().splitlines()]
                 for m in ("blind", "socratic")}  # fmt: skip
        assert set(picks["blind"]) == {"A"} and set(picks["socratic"]) != {"A"}  # the server read the history
        # a rerun of one mode is served from the cache: no request
        proc = baseline("api", str(dataset), "--model", "local-model", "--base-url", server.base_url, "--out",
                        str(tmp_path / "again.jsonl"), "--cache", str(tmp_path / "cache.sqlite"))  # fmt: skip
        assert proc.returncode == 0 and server.requests == n_first
        assert (tmp_path / "again.jsonl").read_text() == (tmp_path / "api.jsonl").read_text()


def test_prompts_carry_what_each_mode_promises(dataset):
    from eqagen.commands.baseline_run import messages_for
    from eqagen.outputs.harness import mcq_items

    blind = list(mcq_items(dataset, "test", None, render=None))
    socratic = list(mcq_items(dataset, "test", 50, render=dict))
    item_b, item_s = blind[0], socratic[0]
    assert messages_for("blind", item_b)[-1]["content"].startswith("Question:")
    text = messages_for("socratic", item_s)[-1]["content"]
    assert text.startswith(f"Episode {item_s.record.episode_id} ") and "Options:\nA. " in text
    api = messages_for("api", item_s)[-1]["content"]
    assert api.startswith("Retrieved observations:") and "Events:" in api


def test_an_unreachable_endpoint_is_one_line_and_writes_nothing(dataset, tmp_path):
    proc = baseline("blind", str(dataset), "--model", "m", "--base-url", "http://127.0.0.1:9/v1", "--out",
                    str(tmp_path / "p.jsonl"), "--cache", str(tmp_path / "c.sqlite"))  # fmt: skip
    assert proc.returncode == 1 and "baseline endpoint" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "p.jsonl").exists()


def test_a_killed_run_resumes_from_the_cache(dataset, tmp_path):
    """Killed after some answers, the same command run again sends only what is still unanswered (at most the
    one request in flight at the kill is sent twice) and writes the same predictions as an unbroken run."""
    args = ["socratic", str(dataset), "--model", "local-model", "--concurrency", "1", "--cache",
            str(tmp_path / "cache.sqlite")]  # fmt: skip
    n = sum(r.split == "test" for r in episodes_and_records()[1])
    with ReadingServer(delay_s=0.15) as server:
        proc = baseline(*args, "--base-url", server.base_url, "--out", str(tmp_path / "p.jsonl"), wait=False)
        deadline = time.monotonic() + 120
        while server.responses_ok < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        first = server.responses_ok
        assert 5 <= first < n and not (tmp_path / "p.jsonl").exists()
        server.delay_s = 0.0
        done = baseline(*args, "--base-url", server.base_url, "--out", str(tmp_path / "p.jsonl"))
        assert done.returncode == 0, done.stderr
        assert server.responses_ok - first <= n - first + 1
        assert sum(v > 1 for v in server.ok_bodies.values()) <= 1
    with ReadingServer() as fresh:
        whole = baseline(*args[:-1], str(tmp_path / "other.sqlite"), "--base-url", fresh.base_url, "--out",
                         str(tmp_path / "whole.jsonl"))  # fmt: skip
        assert whole.returncode == 0
    assert (tmp_path / "p.jsonl").read_text() == (tmp_path / "whole.jsonl").read_text()
