"""Progress: each step of a run said as it starts and ends; the end-of-run stage table in run order."""

from __future__ import annotations

import io
import json
import re
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from eqagen.core.stages import StageLog
from eqagen.flows import ask, stages, stream
from eqagen.flows.pipeline import RunSummary, generate_inline, make_context
from eqagen.flows.progress import STAGE_ORDER, STEP_LABELS, BatchProgress, stage_table
from eqagen.flows.timeline import Timeline
from tests.outputs.builders import fixture_sampler


def test_stage_table_is_in_run_order() -> None:
    # as finish() records them: the batched stages, then ask, read, balance, compose, split, ..., audit
    recorded = ["plan", "episodes", "programs", "checkpoint", "read", "balance", "split", "paraphrase", "write",
                "audit", "ask", "compose"]  # fmt: skip
    summary = RunSummary(Path("out"), stage_seconds={name: 1.0 for name in recorded})
    rows = list(stage_table(summary).columns[0].cells)
    stages = [r for r in rows if r in recorded]
    assert stages == [s for s in STAGE_ORDER if s in recorded]
    assert stages.index("ask") < stages.index("read") < stages.index("balance") < stages.index("compose")
    assert stages.index("compose") < stages.index("split") < stages.index("audit") == len(stages) - 1


def test_timeline_tells_its_listener_each_section_as_it_starts_and_ends() -> None:
    heard: list[tuple[str, float | None]] = []
    timeline = Timeline(on_section=lambda stage, seconds, detail: heard.append((stage, seconds)))
    with timeline.section("ask"):
        assert heard == [("ask", None)]  # said before the work, so a display shows what runs
        with timeline.section("read"):
            pass
    assert [(s, secs is None) for s, secs in heard] == [("ask", True), ("read", True), ("read", False), ("ask", False)]
    assert heard[-1][1] == next(span for span in timeline.spans if span.stage == "ask").seconds


def test_batch_progress_shows_each_step_running_then_with_its_seconds() -> None:
    progress = BatchProgress(3, enabled=False, file=io.StringIO())
    for name, seconds in [("run_batch", None), ("ask", None), ("ask", 2.25), ("audit", None)]:
        progress.stage(name, seconds)
    tasks = {t.description: t for t in progress.progress.tasks}
    assert list(tasks) == ["episodes + programs", STEP_LABELS["ask"], STEP_LABELS["audit"]]  # no batch line
    assert tasks[STEP_LABELS["ask"]].finished and tasks[STEP_LABELS["ask"]].fields["unit"] == "2.2 s"
    assert not tasks[STEP_LABELS["audit"]].finished  # still running


@pytest.mark.slow  # a whole run, with its audit: several seconds
def test_each_step_after_the_batches_is_said_in_run_order_with_its_counts(tmp_path, small_config) -> None:
    """A whole (tiny) run told to a listener: ask, read, select then the balance, compose and split it ran,
    paraphrase then write, then audit; each with its counts, equal to stats.json's funnel."""
    heard: list[tuple[str, float | None, str]] = []
    generate_inline(small_config(), tmp_path / "out", sampler=fixture_sampler, on_stage=lambda *t: heard.append(t))
    done = [(stage, detail) for stage, seconds, detail in heard if seconds is not None and stage in STEP_LABELS]
    assert [stage for stage, _ in done] == ["ask", "read", "select", "balance", "compose", "split", "paraphrase",
                                            "write", "audit"]  # fmt: skip
    funnel = json.loads((tmp_path / "out" / "stats.json").read_text())["funnel"]
    details = dict(done)
    for stage in ("balance", "compose", "split"):
        assert details[stage] == f"{funnel[stage]['in']:,} -> {funnel[stage]['out']:,} rows"
    assert details["ask"].endswith(f"{funnel['ask']['out']:,} answered")
    assert details["paraphrase"] == f"{funnel['paraphrase']['in']:,} rows"
    assert re.fullmatch(r"\d+ of \d+ criteria met", details["audit"])
    started = [(stage, detail) for stage, seconds, detail in heard if seconds is None and stage in STEP_LABELS]
    # said before the work, so the display shows what runs; the paraphrase says its rows shard by shard
    assert list(dict.fromkeys(stage for stage, _ in started)) == [
        "ask",
        "read",
        "select",
        "write",
        "paraphrase",
        "audit",
    ]
    rows = [detail for stage, detail in started if stage == "paraphrase"]
    total = funnel["paraphrase"]["in"]
    assert rows[0] == f"0 of {total:,} rows" and rows[-1] == f"{total:,} of {total:,} rows" and len(rows) >= 3
    manifest = json.loads((tmp_path / "out" / "manifest.json").read_text())
    audit = [detail for stage, detail in started if stage == "audit"]
    assert audit == ["", f"statistics of {len(manifest['shards'])} shards",
                     f"criteria of {manifest['rows']['questions_total']:,} questions (blind baselines fitted)",
                     "report: plots and example pictures"]  # fmt: skip


def test_a_step_told_only_when_done_gets_its_line_with_counts() -> None:
    progress = BatchProgress(1, enabled=False, file=io.StringIO())
    progress.stage("paraphrase", None, "0 of 10 rows")
    progress.stage("paraphrase", None, "4 of 10 rows")  # the same line, its counts moving
    progress.stage("select", None)
    progress.stage("balance", 0.5, "7,201 -> 2,100 rows")
    tasks = {t.description: t for t in progress.progress.tasks}
    assert tasks[STEP_LABELS["balance"]].finished
    assert tasks[STEP_LABELS["balance"]].fields["unit"] == "7,201 -> 2,100 rows, 0.5 s"
    assert not tasks[STEP_LABELS["select"]].finished
    assert tasks[STEP_LABELS["paraphrase"]].fields["unit"] == "4 of 10 rows" and len(tasks) == 4


def test_paraphrase_rows_are_told_piece_by_piece_while_the_units_run(tmp_path, small_config) -> None:
    """On an executor the paraphrase says its rows as each piece is done, before any shard is written (it
    had said them all once every shard was written: a long silent stretch on a big run)."""
    config = small_config()
    generate_inline(config, tmp_path / "out", sampler=fixture_sampler)  # the checkpoints a finish reads
    ctx = make_context(config, tmp_path / "out")
    names = [b.name for b in stages.plan_batches(config.generation, config.seed)]
    files = ask.candidate_files(ctx.store, names, [])
    kept = stream.select(stream.CandidateKeys(stream.key_columns(config)).read(files), config, StageLog(), None)
    shards = stream.plan_question_shards(files, kept, 40)
    staging = tmp_path / "staging"
    told: list[tuple[int, int]] = []  # (rows, question shards written by then)

    def on_rows(rows: int) -> None:
        told.append((rows, len(list((staging / "questions").glob("*.parquet")))))

    with ThreadPoolExecutor(2) as executor:
        results = stream.write_offline_questions(
            shards, staging, ctx.config_hash, config.paraphrase, config.seed, executor, on_rows
        )
    pieces = [p.rows.num_rows for s in shards for p in stream.shard_pieces(s, stream.PARAPHRASE_CHUNK_ROWS)]
    assert sorted(rows for rows, _ in told) == sorted(pieces) and sum(pieces) == kept.num_rows > 0
    assert told[0][1] == 0  # the first rows are said before any shard is written
    assert sum(info.rows for info, *_ in results) == kept.num_rows
