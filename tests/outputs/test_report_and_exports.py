"""The HTML report renders in a real headless Chromium; exports match the formats they claim."""

from __future__ import annotations

import base64
import html
import json
import re
import shutil
import subprocess

import numpy as np
import pytest
from matplotlib.image import imread

from eqagen.core import OPENEQA_CATEGORIES
from eqagen.curation.audit import build_stats
from eqagen.outputs.dataset import load_dataset_folder
from eqagen.outputs.exports import export
from eqagen.outputs.report import write_report
from tests.curation.audit_fixtures import write_dataset

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
HEADLESS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
            "--disable-background-networking", "--disable-component-update", "--disable-sync"]  # fmt: skip


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = write_dataset(tmp_path_factory.mktemp("ds") / "ds", seed=11)
    q, e = load_dataset_folder(out).read("questions"), load_dataset_folder(out).read("episodes")
    stats = build_stats(q, e, {"programs": {"in": 900, "out": 400, "rejected": {"ineffective": 500}}})
    (out / "stats.json").write_text(json.dumps(stats))
    write_report(stats, out / "report.html")
    return out


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (.ci/run installs it: apt-get install chromium)")
def test_report_renders_with_plots_in_headless_chromium(dataset, tmp_path):
    page = (dataset / "report.html").as_uri()
    common = [CHROMIUM, *HEADLESS, f"--user-data-dir={tmp_path / 'profile'}"]
    dom = subprocess.run([*common, "--dump-dom", page], capture_output=True, text=True, timeout=120).stdout
    n_images = len(re.findall(r"<img ", dom))
    drawn = re.search(r'data-plots-drawn="(\d+)"', dom)
    assert n_images >= 7 and drawn is not None and int(drawn.group(1)) == n_images
    shot = tmp_path / "report.png"
    subprocess.run([*common, f"--screenshot={shot}", "--window-size=1200,2400", page], capture_output=True, timeout=120)
    pixels = imread(shot)[..., :3]
    bar_blue = np.all(np.abs(pixels - np.array([0x4C, 0x72, 0xB0]) / 255) < 0.04, axis=-1)
    assert bar_blue.sum() > 2000, "no bar plots visible in the screenshot"


@pytest.mark.realdata
def test_openeqa_export_has_exactly_openeqa_keys_and_types(dataset, tmp_path, realdata):
    reference = json.loads((realdata / "open_eqa" / "open-eqa-v0.json").read_text())
    ref_types = {k: type(v) for item in reference for k, v in item.items()}
    allowed_keysets = {tuple(sorted(item)) for item in reference}
    n = export(dataset, "openeqa", tmp_path / "oe.json", split="all")
    ours = json.loads((tmp_path / "oe.json").read_text())
    assert n == len(ours) == load_dataset_folder(dataset).read("questions").num_rows
    assert {tuple(sorted(item)) for item in ours} <= allowed_keysets
    assert all(type(v) is ref_types[k] for item in ours for k, v in item.items())
    assert {item["category"] for item in ours} <= set(OPENEQA_CATEGORIES)
    assert all(all(isinstance(a, str) for a in item.get("extra_answers", [])) for item in ours)


def test_jsonl_export_of_one_split(dataset, tmp_path):
    n = export(dataset, "jsonl", tmp_path / "val.jsonl", split="val")  # val: the synonym of validation
    lines = (tmp_path / "val.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert n == len(rows) > 0 and {r["split"] for r in rows} == {"validation"}
    table = load_dataset_folder(dataset).read("questions").to_pylist()
    expected = sorted(r["question_id"] for r in table if r["split"] == "validation")
    assert [r["question_id"] for r in rows] == expected


def assert_each_example_beside_its_picture(page: str, stats: dict, dataset) -> None:
    """Each example question of ``stats`` has a picture in its row, and that picture is the drawing of
    ``eqagen show`` of that question (``question_png`` of the question and episode read back)."""
    from eqagen.outputs.picture import REPORT_DPI, example_ids, question_png
    from eqagen.outputs.readers import episode_from_row
    from eqagen.paraphrase.tables import records_from_table

    examples = [{"question_id": q, "episode_id": e} for q, e in example_ids(stats)]  # the first of each type
    assert len(examples) == len(stats["dataset"]["questions"]["examples"])
    rows = re.findall(r"<tr><td>(.*?)</td>.*?<img alt=\"question (\w+) in episode ([\w-]+), seen from above\" "
                      r"src=\"data:image/png;base64,([^\"]+)\">", page)  # fmt: skip
    assert examples and [(q, e) for _, q, e, _ in rows] == [(r["question_id"], r["episode_id"]) for r in examples]
    folder = load_dataset_folder(dataset)  # the fixture's tables, not this version's schema: no read_questions
    questions = folder.read("questions")  # by the rows' ids (the fixture's, not those a record derives)
    records = dict(zip(questions["question_id"].to_pylist(), records_from_table(questions)))
    episodes = {row["episode_id"]: episode_from_row(row) for row in folder.read("episodes").to_pylist()}
    for question, qid, eid, png in rows:
        record = records[qid]
        assert question == html.escape(record.question, quote=True)
        assert base64.b64decode(png) == question_png(record, episodes[eid], REPORT_DPI), qid


def test_the_report_drawn_on_forked_workers_equals_the_report_drawn_here(dataset, tmp_path) -> None:
    """A run draws the report's plots and its example questions' pictures on its workers, one unit each,
    beside the blind models' fits; the page must not depend on where, or in which order, they were drawn."""
    from eqagen.flows.pool import ForkedPool
    from eqagen.outputs.audit_files import write_audit_files
    from eqagen.outputs.shards import ShardInfo

    manifest = json.loads((dataset / "manifest.json").read_text())
    table_schema = manifest["schema_sha256"]
    shards = [ShardInfo(**s, schema_sha256=table_schema[s["path"].split("/")[0]]) for s in manifest["shards"]]
    pages = []
    for where in ("here", "workers"):
        out = tmp_path / where
        shutil.copytree(dataset, out)
        pool = ForkedPool(2) if where == "workers" else None
        try:
            write_audit_files(out, shards, {"programs": {"in": 9, "out": 4}}, {}, manifest,
                              executor=pool.executor if pool else None)  # fmt: skip
        finally:
            if pool:
                pool.close(cancel=False)
        pages.append((out / "report.html").read_text())
    stats = json.loads((tmp_path / "here" / "stats.json").read_text())
    n_pictured = len(stats["dataset"]["questions"]["examples"])  # the first example of each query type
    assert pages[0] == pages[1] and pages[0].count("data:image/png;base64,") == 9 + n_pictured
    assert_each_example_beside_its_picture(pages[0], stats, dataset)


def test_audit_report_shows_each_example_beside_its_picture(dataset, tmp_path) -> None:
    """``eqagen audit DIR --report`` draws the same pictures from the written folder."""
    from eqagen.cli import main

    page = tmp_path / "audit.html"
    main(["audit", str(dataset), "--report", str(page)])  # exit 1: the small fixture misses method criteria
    assert_each_example_beside_its_picture(page.read_text(), json.loads((dataset / "stats.json").read_text()), dataset)


def test_every_rejection_reason_a_stage_defines_has_a_meaning_in_the_report():
    from eqagen.curation.balance import REASONS as BALANCE_REASONS
    from eqagen.outputs.report import REJECTION_REASONS, rejection_glossary
    from eqagen.predicates.validity import RULES

    defined = {*(r for r in BALANCE_REASONS if r != "kept"), *RULES, "not_chosen"}
    assert defined <= {r for r, meaning in REJECTION_REASONS.items() if meaning}
    funnel = {"balance": {"rejected": {"surplus_scene": 3, "made_up": 1}}, "ask": {"rejected": {"empty_answer": 2}}}
    assert rejection_glossary(funnel) == [
        ("empty_answer", REJECTION_REASONS["empty_answer"]), ("made_up", ""),
        ("surplus_scene", REJECTION_REASONS["surplus_scene"]),
    ]  # fmt: skip


def test_the_report_says_how_it_was_made_and_lists_splits_and_funnel_in_run_order(dataset):
    from eqagen.config import load_config, resolved
    from eqagen.outputs.report import render_report

    stats = json.loads((dataset / "stats.json").read_text())
    stats["funnel"] = {"split": {"in": 9, "out": 9}, "ask": {"in": 20, "out": 9}, "programs": {"in": 30, "out": 20}}
    manifest = {"seed": 3, "config": resolved(load_config("demo", ["balance.records=900"])), "versions": {}}
    page = render_report(stats, plots=[], manifest=manifest)
    assert "<pre>eqagen generate demo --out OUT --seed 3 --set &#39;balance.records=900&#39;</pre>" in page
    rows = [page.index(f'<tr><th>{s}</th><td class="num">') for s in ("train", "validation", "test")]
    assert rows == sorted(rows)
    assert page.index("<td>programs</td>") < page.index("<td>ask</td>") < page.index("<td>split</td>")


def test_plot_targets_are_marked_met_or_missed_by_the_audits_bounds():
    from eqagen.outputs.report import target_marks

    # 10,000 items: bounds are +-0.03; a at 0.5 (target 0.5) met, b at 0.3 (target 0.2) missed, c has no target
    marks = target_marks(["a", "b", "c"], [5000.0, 3000.0, 2000.0], {"a": 0.5, "b": 0.2})
    assert [(y, round(t), met) for y, t, _, _, met in marks] == [(0, 5000, True), (1, 2000, False)]
    assert [(round(lo), round(hi)) for _, _, lo, hi, _ in marks] == [(4700, 5300), (1700, 2300)]
    # 100 items: b's 0.3 is within what 100 draws at 0.2 give (the 99% interval reaches 0.31)
    assert [met for *_, met in target_marks(["a", "b"], [70.0, 30.0], {"a": 0.8, "b": 0.2})] == [True, True]


def test_every_mix_plot_carries_the_compositions_targets():
    """Query types, filter families and the number of filters are composed to targets: each plot marks them
    (the number of filters had none)."""
    from eqagen.outputs.report import plot_specs

    d = {"query_type": {"count": 5}, "filter_family": {"state": 5}, "filter_family_combination": {},
         "n_filters": {"1": 3, "2": 2}, "answer_type": {}, "openeqa_category": {}}  # fmt: skip
    goal = {"query_type": {"count": 1.0}, "filter_family": {"state": 1.0}, "n_filters": {"1": 0.6, "2": 0.4}}
    stats = {"dataset": {"questions": {"distributions": d, "balance": {}}}, "stages": {"compose": {"targets": goal}}}
    targets = {title: args[3] for title, _, args in plot_specs(stats) if len(args) > 3}
    assert targets["Query types"] == goal["query_type"] and targets["Filter families"] == goal["filter_family"]
    assert targets["Number of filters"] == goal["n_filters"]


def test_the_report_renders_episodes_without_tasks_or_actions(dataset):
    # a blockworld run has no tasks: its success rate is null (pqb-minecraft's report failed on it)
    from eqagen.outputs.report import render_report

    stats = json.loads((dataset / "stats.json").read_text())
    episodes = stats["dataset"]["episodes"]
    episodes.update(task_success_rate=None, loop_share=None, action_failure_rate=None)
    page = render_report(stats, plots=[])
    assert "ended with their task done" not in page and "looped" not in page
    episodes.update(task_success_rate=0.5, loop_share=0.25, action_failure_rate=0.031)
    page = render_report(stats, plots=[])
    assert "50% of the episodes ended with their task done" in page and "3.1% failed" in page
    assert "In 25% of the episodes the agent looped: it arrived at one pose five or more separate times" in page
