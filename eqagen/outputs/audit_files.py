"""The audit files every writer of a dataset directory leaves: ``stats.json``, the card, the report.

``eqagen generate``, ``eqagen resplit`` and ``eqagen paraphrase`` all end here, so the three files are
always made the same way from the tables just written.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pyarrow as pa

from eqagen.curation.audit import build_stats
from eqagen.outputs.card import render_card, write_card
from eqagen.outputs.manifest import write_json_atomic
from eqagen.outputs.report import write_report
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA


def write_audit_files(
    out_dir: Path,
    questions: pa.Table,
    episodes: pa.Table | Iterable[pa.Table],
    funnel: dict[str, Any],
    stage_stats: dict[str, Any],
    manifest: dict[str, Any],
    report: bool = True,
) -> dict[str, Any]:
    """Write stats.json, the dataset card (README.md) and, unless ``report`` is false, report.html; returns the
    statistics written."""
    stats = build_stats(questions, episodes, funnel, stage_stats, manifest.get("config"))
    write_json_atomic(stats, Path(out_dir) / "stats.json")
    write_card(render_card(stats, manifest, QUESTIONS_SCHEMA, EPISODES_SCHEMA), Path(out_dir))
    if report:
        write_report(stats, Path(out_dir) / "report.html")
    return stats
