"""The end-of-run stage table lists the stages in the order a run runs them."""

from __future__ import annotations

from pathlib import Path

from eqagen.flows.pipeline import RunSummary
from eqagen.flows.progress import STAGE_ORDER, stage_table


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
