"""The score report of ``eqagen score`` as one self-contained HTML page (jinja2; no plot, nothing loaded from
the network): the scorer, the overall metrics with their 95% intervals, the tests against chance, one table
per condition and the questions without a prediction."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2

from eqagen.outputs.atomic import write_text_atomic
from eqagen.scoring.choice import p_text

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("eqagen", "templates/report"),
    autoescape=jinja2.select_autoescape(["html", "j2"]),
    undefined=jinja2.StrictUndefined,
)
_TEMPLATES.filters["p_text"] = p_text


def score_metrics(report: Mapping[str, Any]) -> list[str]:
    """The metrics the report holds, in its order (every key of the overall cell but intervals and counts)."""
    return [k for k in report["overall"] if k != "n" and not k.endswith(("_ci", "_n"))]


def render_score_report(report: Mapping[str, Any]) -> str:
    scorer = report["scorer"]
    title = f"Scores of {Path(scorer['predictions']).name} on {Path(scorer['dataset']).name} ({scorer['split']})"
    return _TEMPLATES.get_template("score.html.j2").render(title=title, report=report, metrics=score_metrics(report))


def write_score_report(report: Mapping[str, Any], path: Path) -> None:
    write_text_atomic(Path(path), render_score_report(report))
