"""Progress: each step of a run said as it starts and ends; the end-of-run stage table in run order."""

from __future__ import annotations

import io
from pathlib import Path

from eqagen.flows.pipeline import RunSummary
from eqagen.flows.progress import STAGE_ORDER, STEP_LABELS, BatchProgress, stage_table
from eqagen.flows.timeline import Timeline


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
    timeline = Timeline(on_section=lambda stage, seconds: heard.append((stage, seconds)))
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
