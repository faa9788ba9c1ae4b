"""The validity checker on the shards (``benchmarks/check_validity.py``, ``eqagen audit --rules``) finds every
question planted to break a rule, a stored answer that is not the program's, and a misnumbered event,
in a dataset of real household, navigation and Minecraft episodes written by the pipeline's writer."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

from eqagen.commands.audit_run import validity_checks
from eqagen.commands.validity_audit import REASONS, check_output
from eqagen.core import EXPRESS_CATEGORIES, OPENEQA_CATEGORIES, Episode, Program, QARecord, QuerySpec
from eqagen.outputs.folder import write_dataset
from eqagen.outputs.schemas import episodes_table, questions_table
from eqagen.predicates import REGISTRY
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.validity import RULES, groups_for
from eqagen.templates.answers import evaluate
from tests.predicates.helpers import family_episodes
from tests.predicates.planted import planted_questions

ROOT = Path(__file__).resolve().parents[2]


def record(ep: Episode, program: Program, anchor, text: str) -> QARecord:
    """A question row of ``program`` with its structured answer as the engine computes it."""
    groups = groups_for(evaluate(ep, program), anchor)
    return QARecord(
        episode_id=ep.episode_id, scene_id=ep.scene_id, family=ep.family, backend=ep.backend, program=program,
        structured_question=text, structured_answer=groups, answer_type="objects", answer_key="", question=text,
        answer=" | ".join(g.value for g in groups), grounded=anchor is not None, category=OPENEQA_CATEGORIES[0],
        express_category=EXPRESS_CATEGORIES[0], balance_key=text, query_type=program.query.name, split="train",
    )  # fmt: skip


def control(ep: Episode) -> QARecord:
    """A valid question ("which objects did you see?"): no filter to be ineffective, nothing named, no property."""
    return record(ep, Program((), QuerySpec("listObjects")), None, f"control {ep.episode_id}")


def grounded_twin(episodes: list[Episode]) -> QARecord:
    """A grounded question ("which objects on the countertop at (x, y, z) did you see?"): one anchor's group
    of an ambiguous filter."""
    fdef = REGISTRY.filter("location", "on")
    for ep in (e for e in episodes if e.family == "household"):
        ctx = EpisodeContext(ep)
        for spec in (s for s in fdef.values(ctx, "on") if ctx.instances(s.value).size >= 2):
            program = Program((spec,), QuerySpec("listObjects"))
            return record(ep, program, evaluate(ep, program)[-1].anchor, f"grounded {ep.episode_id}")
    raise AssertionError("no household episode names an object with two instances")


def write(out: Path, episodes: list[Episode], records: list[QARecord]) -> Path:
    for r in records:
        r.split = r.split or "train"
    write_dataset(
        out, questions_table(records), episodes_table(episodes), {"config": {}, "seed": 0, "config_hash": "t"}, 40
    )
    return out


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    """The dataset, what each planted question must be found for, the stale record and the misnumbered episode."""
    episodes = list(family_episodes())
    expected: dict[str, set[str]] = {}
    records = {}
    for ep in episodes:
        for p in planted_questions(EpisodeContext(ep)):
            r = record(ep, p.program, p.anchor, f"planted {p.reason} in {ep.episode_id}")
            records[r.question_id] = r
            expected.setdefault(r.question_id, set()).add(p.reason)
        r = control(ep)
        records[r.question_id], expected[r.question_id] = r, set()
    stale = control(episodes[1])
    group = stale.structured_answer[0]
    stale = replace(stale, structured_answer=[replace(group, value=group.value + ", Apple")])
    records[stale.question_id], expected[stale.question_id] = stale, {"stale_answer"}
    twin = grounded_twin(episodes)
    records[twin.question_id], expected[twin.question_id] = twin, {"grounded"}
    misnumbered = episodes[0]
    events = [replace(misnumbered.events[0], ordinal=misnumbered.events[0].ordinal + 1), *misnumbered.events[1:]]
    episodes[0] = replace(misnumbered, events=events)
    out = write(tmp_path_factory.mktemp("planted") / "out", episodes, list(records.values()))
    return out, expected, misnumbered.episode_id


def test_every_planted_violation_is_found_and_nothing_else(planted):
    out, expected, misnumbered = planted
    report = check_output(out)
    found: dict[str, set[str]] = {}
    for v in report.violations:
        found.setdefault(v.question_id, set()).add(v.reason)
    for qid, reasons in expected.items():
        if reasons == {"grounded"}:  # judged on its own group: the stored answer is that group's
            assert "stale_answer" not in found.get(qid, set())
            continue
        assert reasons <= found.get(qid, set()), (qid, reasons, found.get(qid))
        if not reasons:
            assert qid not in found, (qid, found[qid])  # the controls pass
    assert found[next(q for q, r in expected.items() if r == {"stale_answer"})] == {"stale_answer"}
    ordinals = [v for v in report.violations if v.reason == "event_ordinals"]
    assert [v.episode_id for v in ordinals] == [misnumbered]
    assert report.questions == len(expected)
    # every rule planted and found
    assert set(report.counts("reason")) == {(r,) for r in REASONS}
    assert {f for (_, f) in report.counts("reason", "family")} == {"household", "navigation", "blockworld"}


def test_the_script_and_the_audit_exit_on_violations(planted, tmp_path):
    out, _, _ = planted
    script = [sys.executable, str(ROOT / "benchmarks" / "check_validity.py")]
    proc = subprocess.run([*script, str(out), "--examples", "1"], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 1, proc.stderr
    for reason in RULES:
        assert f"FAILED  {reason}:" in proc.stdout
    failed = [c.name for c in validity_checks(out) if not c.ok]
    assert failed == [f"validity: {r}" for r in REASONS]

    clean = write(tmp_path / "clean", list(family_episodes()), [control(ep) for ep in family_episodes()])
    proc = subprocess.run([*script, str(clean)], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout
    assert all(c.ok for c in validity_checks(clean))

    proc = subprocess.run([*script, str(tmp_path / "nothing")], capture_output=True, text=True, cwd=ROOT)
    assert proc.returncode == 2 and "no such dataset folder" in proc.stderr and len(proc.stderr.splitlines()) == 1


def test_audit_rules_on_a_damaged_folder_says_the_rules_were_not_judged(planted, tmp_path, capsys):
    """The rules read the shards: on a folder whose shards do not match their manifest, `eqagen audit --rules` prints
    the failed checks and that the rules were not judged, instead of stopping on the shards' error."""
    import shutil

    from eqagen.cli import main

    out, _, _ = planted
    damaged = tmp_path / "damaged"
    shutil.copytree(out, damaged)
    import json

    manifest = json.loads((damaged / "manifest.json").read_text())
    manifest["shards"][0]["sha256"] = "0" * 64  # a shard that is not the one the manifest lists
    (damaged / "manifest.json").write_text(json.dumps(manifest))
    assert main(["audit", str(damaged), "--rules"]) == 1
    printed = capsys.readouterr().out
    assert "FAILED  shard checksums match the manifest" in printed
    assert "FAILED  validity rules: not judged" in printed
