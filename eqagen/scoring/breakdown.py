"""Per-record scores grouped by condition (TAG-EQA's fine-grained evaluation), each cell with its count and a
95% interval.

A metric's interval: Wilson's score interval where its values are all 0 or 1 (an accuracy), else the
t-interval ``mean ± t(0.975, n-1) * s / sqrt(n)`` clipped to the values the metric can take (:data:`SCALES`);
one value: ``[mean, mean]``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from scipy.stats import binomtest
from scipy.stats import t as student_t

from eqagen.core import QARecord

LEVEL = 0.95
# The values each metric can take (a mean near an end of a 1-5 score has a t-interval past it).
SCALES = {
    "structured": (1.0, 5.0), "structured_no_grounding": (1.0, 5.0), "readback": (1.0, 5.0),
    "readback_no_grounding": (1.0, 5.0), "judge_mark": (1.0, 5.0), "count_mra": (0.0, 1.0), "chance": (0.0, 1.0),
    "llm_match": (0.0, 100.0), "express_c": (20.0, 100.0), "d_t": (0.0, math.inf),
}  # fmt: skip
DIGITS = 6
Scores = dict[str, float]


def interval(values: Sequence[float], scale: tuple[float, float] = (-math.inf, math.inf)) -> tuple[float, float]:
    """The 95% interval of the mean of ``values`` (see the module's docstring), within ``scale``."""
    a = np.asarray(values, dtype=float)
    n = a.size
    if n == 1:
        return float(a[0]), float(a[0])
    if np.isin(a, (0.0, 1.0)).all():
        ci = binomtest(int(a.sum()), n).proportion_ci(LEVEL, method="wilson")
        return float(ci.low), float(ci.high)
    half = float(student_t.ppf((1 + LEVEL) / 2, n - 1) * a.std(ddof=1) / math.sqrt(n))
    return max(scale[0], float(a.mean()) - half), min(scale[1], float(a.mean()) + half)


def cell(rows: Sequence[Scores], metrics: Sequence[str]) -> dict[str, Any]:
    """``{metric: mean, metric_ci: [low, high], ..., "n": rows}`` over the rows that have each metric."""
    out: dict[str, Any] = {}
    for metric in metrics:
        values = [r[metric] for r in rows if metric in r]
        if values:
            low, high = interval(values, SCALES.get(metric, (-math.inf, math.inf)))
            out[metric] = round(float(np.mean(values)), DIGITS)
            out[f"{metric}_ci"] = [round(low, DIGITS), round(high, DIGITS)]
            if len(values) != len(rows):
                out[f"{metric}_n"] = len(values)
    out["n"] = len(rows)
    return out


def family_combination(record: QARecord) -> list[str]:
    return ["+".join(record.predicate_families) or "none"]


def conditions(seen_scenes: set[str]) -> dict[str, Callable[[QARecord], list[str]]]:
    """Each condition: the values a record takes (a record has one value of each, or one per filter family)."""
    return {
        "query_type": lambda r: [r.query_type],
        "filter_family": lambda r: list(r.predicate_families) or ["none"],
        "filter_families": family_combination,
        "n_filters": lambda r: [str(r.n_filters)],
        "grounded": lambda r: [str(r.grounded).lower()],
        "world_family": lambda r: [r.family],
        "openeqa_category": lambda r: [r.category],
        "scene": lambda r: ["seen" if r.scene_id in seen_scenes else "unseen"],
    }


def breakdown(
    records: Sequence[QARecord], scores: Sequence[Scores], metrics: Sequence[str], seen_scenes: set[str]
) -> dict[str, dict[str, dict[str, Any]]]:
    """``{condition: {value: cell}}``, values sorted."""
    out = {}
    for name, values_of in conditions(seen_scenes).items():
        groups: dict[str, list[Scores]] = defaultdict(list)
        for record, row in zip(records, scores):
            for value in values_of(record):
                groups[value].append(row)
        out[name] = {value: cell(groups[value], metrics) for value in sorted(groups)}
    return out
