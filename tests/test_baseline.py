"""``eqagen baseline``: blind, socratic and api runs end to end against a real HTTP server on 127.0.0.1 that
answers from the prompt it receives, each predictions file scored by ``eqagen score``; a run killed midway
resumes from the cache."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from dataclasses import replace
from functools import lru_cache

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from eqagen.commands.baseline import MODES
from eqagen.core import QARecord
from eqagen.outputs.harness import LETTERS, mcq_items
from tests.outputs.model_fixtures import episodes_and_records, write_family_dataset
from tests.paraphrase.chat_server import ScriptedChatServer, _completion


class ReadingServer(ScriptedChatServer):
    """A stand-in for a chat model (we run no real one here): it answers the letter of the option whose words
    the prompt's context (everything before "Question:") holds most often; with no context, A."""

    def reply(self, body: dict, auth: str = ""):
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


@lru_cache(maxsize=1)
def baseline_records() -> tuple[QARecord, ...]:
    """The fixture's questions, balanced by answer type rather than by question text, so that most questions
    offer several choices (by question text 90 of the 94 test questions have one): a question's choices are
    the distinct answers of its query and answer type."""
    records = episodes_and_records()[1]
    groups: dict[str, set[str]] = {}
    for r in records:
        groups.setdefault(f"{r.query_type}/{r.answer_type}", set()).add(r.answer_key)
    keyed = [(f"{r.query_type}/{r.answer_type}", r) for r in records]
    return tuple(replace(r, balance_key=key, choices=sorted(groups[key])) for key, r in keyed)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_family_dataset(tmp_path_factory.mktemp("families") / "ds", baseline_records())


def baseline(*args: str, env: dict | None = None, wait: bool = True):
    cmd = [sys.executable, "-m", "eqagen.cli", "baseline", *args]
    if not wait:
        return subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=300)


def read_rows(path) -> dict[str, dict]:
    return {r["question_id"]: r for r in map(json.loads, path.read_text().splitlines())}


@pytest.fixture(scope="module")
def runs(dataset, tmp_path_factory):
    """The three baselines run once against one server: (server, cache, mode -> predictions file)."""
    folder = tmp_path_factory.mktemp("runs")
    cache, files = folder / "cache.sqlite", {m: folder / f"{m}.jsonl" for m in MODES}
    with ReadingServer() as server:
        for mode, out in files.items():
            proc = baseline(mode, str(dataset), "--model", "local-model", "--base-url", server.base_url, "--out",
                            str(out), "--cache", str(cache))  # fmt: skip
            assert proc.returncode == 0, proc.stderr
        yield server, cache, files


def test_three_baselines_end_to_end(dataset, runs, tmp_path):
    server, cache, files = runs
    records = {r.question_id: r for r in baseline_records() if r.split == "test"}
    for out in files.values():
        rows = read_rows(out)
        assert rows.keys() == records.keys()  # the server's every reply names an option
        assert all(r["letter"] in LETTERS and r["choice"] in records[q].choices for q, r in rows.items())
    n_first = server.requests
    assert n_first == 3 * len(records)
    picks = {m: {r["letter"] for r in read_rows(files[m]).values()} for m in ("blind", "socratic")}
    assert picks["blind"] == {"A"} and picks["socratic"] != {"A"}  # the server read the history
    # a rerun of one mode is served from the cache: no request
    proc = baseline("api", str(dataset), "--model", "local-model", "--base-url", server.base_url, "--out",
                    str(tmp_path / "again.jsonl"), "--cache", str(cache))  # fmt: skip
    assert proc.returncode == 0 and server.requests == n_first
    assert (tmp_path / "again.jsonl").read_text() == files["api"].read_text()


def shard_questions(dataset) -> dict[str, dict]:
    """The test split's questions read straight from its Parquet shards: id -> answer_key and choices."""
    shards = sorted((dataset / "questions").glob("test-*.parquet"))
    table = pa.concat_tables(pq.read_table(p, columns=["question_id", "answer_key", "choices"]) for p in shards)
    return {row["question_id"]: row for row in table.to_pylist()}


def score_json(dataset, predictions, out) -> dict:
    cmd = [sys.executable, "-m", "eqagen.cli", "score", str(dataset), str(predictions), "--json", str(out)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    return json.loads(out.read_text())


@pytest.mark.parametrize("mode", MODES)
def test_eqagen_score_scores_each_baseline_as_its_predictions_say(dataset, runs, tmp_path, mode):
    """``eqagen score`` reads the predictions file as it is, and its accuracy is the share of the split's
    questions whose predicted choice is the answer in the shards, which is also the share whose letter is the
    harness's letter of the right option (the letter the reply gave and the choice written agree)."""
    rows, questions = read_rows(runs[2][mode]), shard_questions(dataset)
    right_letter = {i.record.question_id: i.answer for i in mcq_items(dataset, "test", None, render=None)}
    report = score_json(dataset, runs[2][mode], tmp_path / "score.json")
    overall, n = report["overall"], len(questions)
    hits = sum(q in rows and rows[q]["choice"] == gold["answer_key"] for q, gold in questions.items())
    letters = sum(q in rows and rows[q]["letter"] == right_letter[q] for q in questions)
    assert overall["n"] == n and report["scorer"]["shape"] == "choice" and report["missing"] == []
    assert overall["accuracy"] == pytest.approx(hits / n, abs=1e-6) == pytest.approx(letters / n, abs=1e-6)
    assert overall["chance"] == pytest.approx(sum(1 / len(g["choices"]) for g in questions.values()) / n, abs=1e-6)
    assert report["chance_tests"]["overall"]["hits"] == hits


def test_a_reply_naming_no_option_writes_no_row(dataset):
    """Its row has no choice, so the run leaves it out (eqagen score counts it wrong, as missing); a reply
    naming the right letter writes the record's answer_key."""
    from eqagen.commands.baseline_run import prediction

    item = next(iter(mcq_items(dataset, "test", None, render=None)))
    assert prediction(item, "no idea")["choice"] is None
    row = prediction(item, f"The answer is {item.answer}.")
    assert row["choice"] == item.record.answer_key and row["letter"] == item.answer


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
    n = sum(r.split == "test" for r in baseline_records())
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
