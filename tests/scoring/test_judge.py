"""The LLM judge through the paraphrase client and cache, against a real HTTP server on 127.0.0.1: OpenEQA's
metric recomputed from the marks, what the judge is shown, resume from the cache after a kill, and truthful
failures."""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time

import numpy as np
import pytest

from eqagen.cli import main
from eqagen.paraphrase.cache import ResponseCache
from eqagen.scoring.judge import PROMPT, judge_messages
from tests.conftest import REPO_ROOT
from tests.scoring.conftest import write_jsonl
from tests.scoring.judge_server import JudgeServer


def half_right(records) -> list[dict]:
    return [{"question_id": r.question_id, "answer": r.answer if i % 2 == 0 else "I could not see."}
            for i, r in enumerate(records)]  # fmt: skip


def judge_args(dataset, predictions, server, cache, *extra) -> list[str]:
    return ["score", str(dataset), str(predictions), "--judge", "local-judge", "--base-url", server.base_url,
            "--judge-cache", str(cache), *extra]  # fmt: skip


def test_openeqas_metric_from_the_judges_marks(scored_dataset, split_records, tmp_path):
    rows = half_right(split_records)
    predictions = write_jsonl(tmp_path / "answers.jsonl", rows)
    out = tmp_path / "report.json"
    with JudgeServer() as server:
        args = judge_args(scored_dataset, predictions, server, tmp_path / "c.sqlite", "--json", str(out))
        assert main(args) == 0
        conversations = list(server.conversations)
    report = json.loads(out.read_text())
    marks = [5.0 if i % 2 == 0 else 1.0 for i in range(len(rows))]
    assert report["overall"]["judge_mark"] == pytest.approx(np.mean(marks), abs=1e-6)
    assert report["overall"]["llm_match"] == pytest.approx(np.mean([100 * (m - 1) / 4 for m in marks]), abs=1e-6)
    assert report["overall"]["express_c"] == pytest.approx(np.mean([100 * m / 5 for m in marks]), abs=1e-6)
    assert report["scorer"]["judge"]["model"] == "local-judge" and report["scorer"]["judge"]["marked"] == len(rows)
    # the judge is shown the question, the answer, its alternatives and the prediction, nothing else
    expected = {json.dumps(judge_messages(PROMPT, r, p["answer"])) for r, p in zip(split_records, rows)}
    assert {json.dumps(c) for c in conversations} == expected


def test_a_killed_judge_run_resumes_from_its_cache(scored_dataset, split_records, tmp_path):
    predictions = write_jsonl(tmp_path / "answers.jsonl", half_right(split_records))
    cache, n = tmp_path / "judge.sqlite", len(split_records)
    with JudgeServer(delay_s=0.15) as server:
        command = [sys.executable, "-m", "eqagen.cli", *judge_args(scored_dataset, predictions, server, cache,
                                                                   "--concurrency", "2")]  # fmt: skip
        proc = subprocess.Popen(command, cwd=REPO_ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 120
        while server.responses_ok < 6 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
        assert proc.returncode == -signal.SIGKILL  # killed midway, not finished
        time.sleep(0.5)  # replies in flight at the kill reach no one
        before = server.ok_bodies.copy()
        with ResponseCache(cache) as c:
            committed = len(c)
        answered = sum(before.values())
        assert 6 <= answered < n and answered - 2 <= committed <= answered

        out = tmp_path / "resumed.json"
        assert main([*judge_args(scored_dataset, predictions, server, cache), "--json", str(out)]) == 0
        after = server.ok_bodies - before
    report = json.loads(out.read_text())
    assert report["scorer"]["judge"]["cache_hits"] == committed
    assert report["scorer"]["judge"]["requests_sent"] == n - committed
    assert sum(1 for body in after if body in before) == answered - committed  # nothing committed asked again
    assert report["overall"]["llm_match"] == pytest.approx(50.0 * len(range(0, n, 2)) * 2 / n, abs=1e-6)


def test_an_endpoint_that_cannot_be_reached_is_exit_1_and_one_line(scored_dataset, split_records, tmp_path, capsys):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again: nothing listens there
    predictions = write_jsonl(tmp_path / "answers.jsonl", half_right(split_records))
    args = ["score", str(scored_dataset), str(predictions), "--judge", "m", "--base-url", f"http://127.0.0.1:{port}/v1",
            "--judge-cache", str(tmp_path / "c.sqlite")]  # fmt: skip
    assert main(args) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "judge endpoint" in err and "cannot connect" in err and "; fix: " in err


def test_replies_without_a_mark_stop_the_run(scored_dataset, split_records, tmp_path, capsys):
    predictions = write_jsonl(tmp_path / "answers.jsonl", half_right(split_records))
    with JudgeServer(grade=lambda answer, response: "I cannot say.") as server:
        assert main(judge_args(scored_dataset, predictions, server, tmp_path / "c.sqlite")) == 1
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "judge stopped" in err and "no mark 1-5" in err


def test_a_judge_needs_free_form_answers_and_a_prompt_with_placeholders(scored_dataset, split_records, tmp_path,
                                                                         capsys):  # fmt: skip
    choices = write_jsonl(tmp_path / "c.jsonl", [{"question_id": split_records[0].question_id, "choice": 0}])
    assert (
        main(["score", str(scored_dataset), str(choices), "--judge", "m", "--base-url", "http://127.0.0.1:9/v1"]) == 2
    )
    assert "marks free-form answers" in capsys.readouterr().err
    answers = write_jsonl(tmp_path / "a.jsonl", half_right(split_records))
    prompt = tmp_path / "prompt.txt"
    prompt.write_text("Question: {question}\nMark:")
    args = ["score", str(scored_dataset), str(answers), "--judge", "m", "--base-url", "http://127.0.0.1:9/v1",
            "--judge-prompt", str(prompt)]  # fmt: skip
    assert main(args) == 2
    assert "has no {answer}, {prediction} placeholder" in capsys.readouterr().err


def test_a_judge_without_an_endpoint_or_with_a_bad_setting_is_exit_2(scored_dataset, split_records, tmp_path, capsys,
                                                                      monkeypatch):  # fmt: skip
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    answers = write_jsonl(tmp_path / "a.jsonl", half_right(split_records))
    assert main(["score", str(scored_dataset), str(answers), "--judge", "gpt-4o"]) == 2
    assert "option '--judge': model 'gpt-4o' has no endpoint" in capsys.readouterr().err
    args = ["score", str(scored_dataset), str(answers), "--judge", "m", "--base-url", "http://127.0.0.1:9/v1",
            "--concurrency", "0"]  # fmt: skip
    assert main(args) == 2
    assert "option '--concurrency': Input should be greater than or equal to 1" in capsys.readouterr().err


def test_another_prompt_file_is_what_the_judge_is_sent(scored_dataset, split_records, tmp_path):
    prompt = tmp_path / "openeqa-style.txt"
    prompt.write_text(
        "Q: {question}\nAnswer: {answer}\nAlso right: {extra_answers}\nResponse: {prediction}\nYour mark:"
    )
    predictions = write_jsonl(tmp_path / "answers.jsonl", half_right(split_records[:4]))
    with JudgeServer() as server:
        args = judge_args(scored_dataset, predictions, server, tmp_path / "c.sqlite", "--judge-prompt", str(prompt))
        assert main(args) == 0
        sent = [c[-1]["content"] for c in server.conversations]
    r = split_records[0]
    assert f"Q: {r.question}\nAnswer: {r.answer}\nAlso right: none\nResponse: {r.answer}\nYour mark:" in sent
    assert len(sent) == 4
