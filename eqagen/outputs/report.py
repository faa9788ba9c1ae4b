"""``report.html``: the audit as one self-contained page (plots embedded as PNG data URIs).

matplotlib draws the plots (Agg backend: no display needed); jinja2 lays out the page. The page loads
nothing from the network and needs no server.
"""

from __future__ import annotations

import base64
import io
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

import jinja2

from eqagen.core import SPLITS
from eqagen.curation.criteria import share_bounds
from eqagen.outputs.atomic import write_text_atomic
from eqagen.outputs.card import make_command

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


def png_bytes(fig: Figure, dpi: int) -> bytes:
    """``fig`` as PNG (closed after): no software or time in its metadata, so the same figure gives the same
    bytes wherever it is drawn."""
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=dpi, bbox_inches="tight", metadata={"Software": None})
    pyplot().close(fig)
    return buf.getvalue()


def data_uri(png: bytes) -> str:
    """A PNG embedded in the page (the page loads nothing)."""
    return "data:image/png;base64," + base64.b64encode(png).decode()


def _png(fig: Figure) -> str:
    return data_uri(png_bytes(fig, dpi=80))


def _integer_keys(counts: Mapping[str, float]) -> bool:
    return bool(counts) and all(str(k).isdigit() for k in counts)


def bar_plot(title: str, counts: Mapping[str, float], top: int = 20, targets: Mapping[str, float] | None = None,
             unit: str = "questions") -> str:  # fmt: skip
    """Bars of ``counts`` (the ``top`` largest; integer keys, such as a number of filters, in their order with
    every integer on the axis). ``targets``: each bar's target share, drawn as a mark at target x total,
    green where the share is within the audit's bounds (:func:`share_bounds`), red where it is not."""
    from matplotlib.ticker import MaxNLocator

    items = sorted(counts.items(), key=lambda kv: int(kv[0])) if _integer_keys(counts) else list(counts.items())[:top]
    fig, ax = pyplot().subplots(figsize=(6.4, 0.3 * max(len(items), 3) + 1.0))
    labels = [str(k) for k, _ in items][::-1]
    values = [v for _, v in items][::-1]
    ax.barh(labels, values, color="#4C72B0")
    ax.xaxis.set_major_locator(MaxNLocator(integer=True))
    ax.set_xlabel(unit)
    if targets:
        _draw_targets(ax, labels, values, targets)
    ax.set_title(title)
    ax.tick_params(axis="y", labelsize=8)
    return _png(fig)


def target_marks(
    labels: list[str], values: list[float], targets: Mapping[str, float]
) -> list[tuple[int, float, float, float, bool]]:
    """Per bar with a target: its position, the target, the bounds (:func:`share_bounds`) in the bars' unit
    (shares times the total), and whether the bar is within them."""
    total = sum(values)
    marks = []
    for y, (label, value) in enumerate(zip(labels, values)):
        if label in targets:
            low, high = share_bounds(targets[label], int(total))
            met = low - 1e-9 <= value / max(total, 1) <= high + 1e-9
            marks.append((y, targets[label] * total, low * total, high * total, met))
    return marks


def _draw_targets(ax: Any, labels: list[str], values: list[float], targets: Mapping[str, float]) -> None:
    for y, target, low, high, met in target_marks(labels, values, targets):
        colour = "#2a9d2a" if met else "#c00000"
        ax.plot([target] * 2, [y - 0.4, y + 0.4], color=colour, linewidth=2.5)
        ax.plot([low, high], [y, y], color=colour, linewidth=1, alpha=0.7)
    ax.plot([], [], color="#2a9d2a", linewidth=2.5, label="target (met; line: bounds)")
    ax.plot([], [], color="#c00000", linewidth=2.5, label="target (missed)")
    ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.18 - 0.6 / len(labels)), ncol=2, frameon=False)


# The funnel's stages in the order a run runs them (stats.json keeps them sorted by name).
FUNNEL_ORDER = ("programs", "ask", "balance", "compose", "split", "paraphrase")


def in_run_order(names: Iterable[str]) -> list[str]:
    order = {name: i for i, name in enumerate(FUNNEL_ORDER)}
    return sorted(names, key=lambda n: (order.get(n, len(order)), n))


def funnel_plot(funnel: Mapping[str, Mapping[str, Any]]) -> str:
    """Candidates entering and leaving each stage, in run order, the first stage at the top."""
    stages = in_run_order(funnel)
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
    splits = sorted(per_split_family, key=lambda s: (SPLITS.index(s) if s in SPLITS else len(SPLITS), s))
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


# The order a measured entry's values are read in: what was measured, then against what, then the test.
MEASURED_ORDER = {k: i for i, k in enumerate(("share", "accuracy", "target", "chance", "minimum", "low", "high",
                                             "hits", "n", "p_value", "p_holm", "se", "within_2_points"))}  # fmt: skip


def measured_rows(measured: Mapping[str, Any], label: str = "") -> list[dict[str, Any]]:
    """A criterion's measured values as table rows ``{label, text, ok}``: one row per judged entry (a
    mapping with ``ok``) or plain value; ``ok`` None where nothing is judged."""
    rows: list[dict[str, Any]] = []
    for key, value in measured.items():
        name = f"{label} {key}".strip() if key != "per_query_type" else label  # "majority count", not "per_query_type"
        if isinstance(value, Mapping) and not ("ok" in value or all(_plain(v) for v in value.values())):
            rows += measured_rows(value, name)
        elif isinstance(value, Mapping):
            keys = sorted(
                (k for k in value if k != "ok"), key=lambda k: (MEASURED_ORDER.get(k, len(MEASURED_ORDER)), k)
            )
            text = ", ".join(f"{k} {_number(value[k])}" for k in keys)
            rows.append({"label": name, "text": text, "ok": value.get("ok")})
        else:
            rows.append({"label": name, "text": _number(value), "ok": None})
    return rows


def _plain(value: Any) -> bool:
    return not isinstance(value, Mapping)


def _number(value: Any) -> str:
    if value is None:  # stats.json's null: a value the criterion does not judge for this dataset
        return "not judged"
    return f"{value:.3f}" if isinstance(value, float) else str(value)


def criteria_view(criteria: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Each method criterion with its target, its verdict and its measured values as rows."""
    return [{"name": name, **c, "rows": measured_rows(c.get("measured", {}))} for name, c in criteria.items()]


# What each rejection reason of the funnel means (the report's glossary; the stages define the reasons:
# eqagen.predicates.sampler and .validity, eqagen.curation.balance and .compose; docs/questions.md and
# docs/curation.md say more).
REJECTION_REASONS = {
    "duplicate": "the episode already has a question with the same program",
    "forbidden_pair": "the filter gives the query's answer away (e.g. a location filter with getLocation)",
    "family_cap": "more filters of one family than questions.max_filters_per_family",
    "several_ambiguous_filters": "more than one filter names a type with several instances: the question "
    "could not say which instance it means",
    "empty_answer": "the program selects nothing in this scene",
    "too_many_items": "a listObjects answer would list more than questions.max_list_items objects",
    "too_many_targets": "a getState/getProperty/getLocation answer would be about more than "
    "questions.max_query_targets objects",
    "ineffective_filter": "dropping one of the filters leaves the answer unchanged: the filter does nothing",
    "same_as_unfiltered": "the one filter leaves the answer as it is without it",
    "indefinite_moment": "a position relation that changes during the episode, asked without saying when",
    "answer_given_by_event": "the moment filter's event names an object whose state is the answer",
    "trivial_answer": "the answer only repeats what the question says",
    "constant_property": "the asked property has one value for the object type anywhere: no need to look",
    "grounded_mix": "the episode already has its share of grounded questions (questions.grounded_share)",
    "no_satisfiable_filter": "no filter of an allowed family holds for the seed object and changes the answer",
    "no_seed": "nothing observed to ask about for the drawn query",
    "nothing_to_ask": "the episode has no query or filter that applies",
    "duplicate_in_scene": "the same question asked twice in one scene: one is kept",
    "single_scene": "the question is asked in only one scene: it cannot be balanced",
    "single_answer": "every scene gives the same answer: a model would not need to look",
    "too_few_answers": "fewer different answers than balance.min_answers",
    "too_few_per_answer": "an answer comes from fewer scenes than balance.min_per_answer",
    "answers_far_apart": "balanced over all scenes, but not within any window of scenes",
    "low_entropy": "(entropy mode) the answers are too uneven over the scenes",
    "too_few_scenes": "(entropy mode) seen in fewer than balance.min_scenes scenes",
    "outside_window": "a record of a kept question from a scene outside the window where it is balanced",
    "surplus_answer": "a rarer answer left out so that every kept answer is equally frequent",
    "surplus_scene": "more scenes for an answer than the balanced count needs",
    "not_chosen": "a balanced group the composition left out to meet the mix and balance.records",
}


def rejection_glossary(funnel: Mapping[str, Mapping[str, Any]]) -> list[tuple[str, str]]:
    """Each rejection reason the funnel counts, with its meaning ("" where none is written)."""
    reasons = sorted({r for stage in funnel.values() for r in stage.get("rejected", {})})
    return [(r, REJECTION_REASONS.get(r, "")) for r in reasons]


Plots = list[tuple[str, str]]  # (title, PNG data URI), in the page's order
PlotSpec = tuple[str, Callable[..., str], tuple[Any, ...]]  # (title, the function that draws it, its arguments)


def plot_specs(stats: Mapping[str, Any]) -> list[PlotSpec]:
    """The page's plots, in its order, each to be drawn by :func:`draw_plot` (one unit each on a run's
    workers): from the funnel and the question statistics, not the criteria (so they can be drawn while the
    criteria are computed)."""
    q = stats["dataset"]["questions"]
    d = q["distributions"]
    goal = stats.get("stages", {}).get("compose", {}).get("targets", {})  # the mix the composition aimed at
    bars = [
        ("Query types", d["query_type"], goal.get("query_type"), "questions"),
        ("Filter families", d["filter_family"], goal.get("filter_family"), "filters"),
        ("Filter-family combinations", d["filter_family_combination"], None, "questions"),
        ("Number of filters", d["n_filters"], goal.get("n_filters"), "questions"),
        ("Answer types", d["answer_type"], None, "questions"),
        ("OpenEQA categories", d["openeqa_category"], None, "questions"),
    ]
    specs: list[PlotSpec] = [(title, bar_plot, (title, counts, 20, targets, unit))
                             for title, counts, targets, unit in bars]  # fmt: skip
    answers = q["balance"].get("answers_per_group", {})
    specs.append(
        ("Answers per balance group", bar_plot, ("Distinct answers per balance group", answers, 20, None, "groups"))
    )
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


def how_made(manifest: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """The report's "how it was made": the command that makes the dataset again, the seed and the versions
    (None without a manifest)."""
    if not manifest:
        return None
    config = manifest.get("config", {})
    return {
        "preset": config.get("name", "custom"),
        "description": config.get("description", ""),
        "seed": manifest.get("seed", ""),
        "command": make_command(config, manifest.get("seed", "")),
        "versions": manifest.get("versions", {}),
    }


def render_report(
    stats: Mapping[str, Any],
    title: str = "eqagen dataset audit",
    plots: Plots | None = None,
    manifest: Mapping[str, Any] | None = None,
    pictures: Mapping[str, str] | None = None,
) -> str:
    """The page (``plots``: :func:`report_plots` of the same statistics, where they were drawn already;
    ``manifest``: the dataset's, for how it was made; ``pictures``: the example questions' episodes drawn
    from above, PNG data URIs by question id: :func:`eqagen.outputs.picture.example_picture`)."""
    plots = report_plots(stats) if plots is None else plots
    criteria = criteria_view(stats["dataset"].get("criteria", {}))
    return _TEMPLATES.get_template("report.html.j2").render(
        title=title,
        stats=stats,
        plots=plots,
        criteria=criteria,
        made=how_made(manifest),
        pictures=pictures or {},
        glossary=rejection_glossary(stats.get("funnel", {})),
        funnel=[(stage, stats["funnel"][stage]) for stage in in_run_order(stats.get("funnel", {}))],
        split_order=[s for s in SPLITS if s in stats["dataset"]["questions"]["per_split"]],
    )


def write_report(
    stats: Mapping[str, Any],
    path: Path,
    plots: Plots | None = None,
    manifest: Mapping[str, Any] | None = None,
    pictures: Mapping[str, str] | None = None,
) -> Path:
    write_text_atomic(Path(path), render_report(stats, plots=plots, manifest=manifest, pictures=pictures))
    return path
