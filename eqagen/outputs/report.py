"""``report.html``: the audit as one self-contained page (plots embedded as PNG data URIs).

matplotlib draws the plots (Agg backend: no display needed); jinja2 lays out the page. The page loads
nothing from the network and needs no server.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import jinja2

from eqagen.outputs.atomic import write_text_atomic

if TYPE_CHECKING:
    from matplotlib.figure import Figure

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("eqagen", "templates/report"),
    autoescape=jinja2.select_autoescape(["html", "j2"]),
    undefined=jinja2.StrictUndefined,
)


def pyplot() -> ModuleType:
    """matplotlib's pyplot on the Agg backend (no display needed), imported where a plot is drawn: 0.3 s that a
    command drawing nothing, and a run before its workers start, need not pay."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt  # the backend must be chosen before this import

    return plt


def _png(fig: Figure) -> str:
    plt = pyplot()
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=80, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def bar_plot(title: str, counts: Mapping[str, float], top: int = 20) -> str:
    items = list(counts.items())[:top]
    fig, ax = pyplot().subplots(figsize=(6.4, 0.3 * max(len(items), 3) + 1.0))
    labels = [str(k) for k, _ in items][::-1]
    ax.barh(labels, [v for _, v in items][::-1], color="#4C72B0")
    ax.set_title(title)
    ax.tick_params(axis="y", labelsize=8)
    return _png(fig)


def funnel_plot(funnel: Mapping[str, Mapping[str, Any]]) -> str:
    """Candidates entering and leaving each stage, with the largest rejection reasons."""
    stages = list(funnel)
    fig, ax = pyplot().subplots(figsize=(6.4, 0.5 * max(len(stages), 2) + 1.0))
    ins = [funnel[s].get("in", 0) for s in stages][::-1]
    outs = [funnel[s].get("out", 0) for s in stages][::-1]
    ax.barh(stages[::-1], ins, color="#DD8452", label="in")
    ax.barh(stages[::-1], outs, color="#55A868", label="kept")
    ax.legend(loc="lower right")
    ax.set_title("Funnel per stage")
    return _png(fig)


def split_plot(per_split_family: Mapping[str, Mapping[str, int]]) -> str:
    """Stacked bars: each split's composition by query type."""
    splits = list(per_split_family)
    kinds = sorted({k for v in per_split_family.values() for k in v})
    fig, ax = pyplot().subplots(figsize=(6.4, 3.2))
    bottom = [0.0] * len(splits)
    for kind in kinds:
        vals = [per_split_family[s].get(kind, 0) / max(sum(per_split_family[s].values()), 1) for s in splits]
        ax.bar(splits, vals, bottom=bottom, label=kind)
        bottom = [b + v for b, v in zip(bottom, vals)]
    ax.set_ylabel("share of split")
    ax.legend(fontsize=7, bbox_to_anchor=(1.02, 1), loc="upper left")
    ax.set_title("Split composition by query type")
    return _png(fig)


def measured_rows(measured: Mapping[str, Any], label: str = "") -> list[dict[str, Any]]:
    """A criterion's measured values as table rows ``{label, text, ok}``: one row per judged entry (a
    mapping with ``ok``) or plain value; ``ok`` None where nothing is judged."""
    rows: list[dict[str, Any]] = []
    for key, value in measured.items():
        name = f"{label} {key}".strip() if key != "per_query_type" else label  # "majority count", not "per_query_type"
        if isinstance(value, Mapping) and not ("ok" in value or all(_plain(v) for v in value.values())):
            rows += measured_rows(value, name)
        elif isinstance(value, Mapping):
            text = ", ".join(f"{k} {_number(v)}" for k, v in value.items() if k != "ok")
            rows.append({"label": name, "text": text, "ok": value.get("ok")})
        else:
            rows.append({"label": name, "text": _number(value), "ok": None})
    return rows


def _plain(value: Any) -> bool:
    return not isinstance(value, Mapping)


def _number(value: Any) -> str:
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def criteria_view(criteria: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each method criterion with its target, its verdict and its measured values as rows."""
    return [{"name": name, **c, "rows": measured_rows(c.get("measured", {}))} for name, c in criteria.items()]


Plots = list[tuple[str, str]]  # (title, PNG data URI), in the page's order
PlotSpec = tuple[str, Callable[..., str], tuple[Any, ...]]  # (title, the function that draws it, its arguments)


def plot_specs(stats: Mapping[str, Any]) -> list[PlotSpec]:
    """The page's plots, in its order, each to be drawn by :func:`draw_plot` (one unit each on a run's
    workers): from the funnel and the question statistics, not the criteria (so they can be drawn while the
    criteria are computed)."""
    q = stats["dataset"]["questions"]
    d = q["distributions"]
    bars = [
        ("Query types", d["query_type"]),
        ("Filter families", d["filter_family"]),
        ("Filter-family combinations", d["filter_family_combination"]),
        ("Number of filters", d["n_filters"]),
        ("Answer types", d["answer_type"]),
        ("OpenEQA categories", d["openeqa_category"]),
    ]
    specs: list[PlotSpec] = [(title, bar_plot, (title, counts)) for title, counts in bars]
    answers = q["balance"].get("answers_per_group", {})
    specs.append(("Answers per balance group", bar_plot, ("Distinct answers per balance group", answers)))
    if stats.get("funnel"):
        specs.insert(0, ("Funnel", funnel_plot, (stats["funnel"],)))
    if q.get("per_split_query_type"):
        specs.append(("Splits", split_plot, (q["per_split_query_type"],)))
    return specs


def draw_plot(spec: PlotSpec) -> tuple[str, str]:
    title, draw, args = spec
    return title, draw(*args)


def report_plots(stats: Mapping[str, Any]) -> Plots:
    """The page's plots, drawn here."""
    return [draw_plot(spec) for spec in plot_specs(stats)]


def render_report(stats: Mapping[str, Any], title: str = "eqagen dataset audit", plots: Plots | None = None) -> str:
    """The page (``plots``: :func:`report_plots` of the same statistics, where they were drawn already)."""
    plots = report_plots(stats) if plots is None else plots
    criteria = criteria_view(stats["dataset"].get("criteria", {}))
    return _TEMPLATES.get_template("report.html.j2").render(title=title, stats=stats, plots=plots, criteria=criteria)


def write_report(stats: Mapping[str, Any], path: Path, plots: Plots | None = None) -> Path:
    write_text_atomic(Path(path), render_report(stats, plots=plots))
    return path
