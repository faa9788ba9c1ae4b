"""``eqagen audit``: recompute a dataset's statistics from its shards and check them.

Checks: the folder against ``manifest.json`` (no unlisted or missing shard, every sha256 and row count,
the row totals, unique ids, a readable ``stats.json``: :mod:`eqagen.outputs.dataset`); ``stats.json``
against the statistics recomputed from the listed shards; per-question balance; no question (balance
key) in two splits. With
``--against`` it prints two datasets side by side: another eqagen output, or an OpenEQA-format JSON
file such as OpenEQA's ``open-eqa-v0.json``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np

from eqagen.commands.validity_audit import REASONS, check_output
from eqagen.core import ConfigError, DataFileError
from eqagen.core.limits import load_json
from eqagen.curation.audit import EPISODE_COLUMNS, QUESTION_COLUMNS, stats_from_tables
from eqagen.outputs.dataset import Dataset, integrity_checks, load_dataset_folder


@dataclass
class Check:
    name: str
    ok: bool
    detail: str = ""
    measured: bool = False  # a method criterion: its detail (measured vs target) is printed even when met


CRITERION_PREFIX = "criterion "


def _load_json(path: Path) -> Any:
    """``path`` read as JSON within bounds (:func:`eqagen.core.limits.load_json`)."""
    if not path.exists() and not path.is_symlink():
        raise DataFileError(path, None, "missing", "is this an eqagen output directory?")
    return load_json(path, "pass an eqagen output directory or a JSON file")


def integrity(dataset: Dataset) -> list[Check]:
    """The dataset folder against its manifest (:func:`eqagen.outputs.dataset.integrity_checks`): no
    unlisted or missing shard, checksums, row counts (per shard and the totals), unique ids, stats.json."""
    return [Check(c.name, c.ok, c.detail()) for c in integrity_checks(dataset)]


def recomputed_stats(dataset: Dataset) -> dict[str, Any]:
    """The statistics of the shards the manifest lists and that are present (a missing one is a failed check)."""
    present = {rel: path for rel, path in dataset.shard_paths.items() if path.is_file()}
    readable = Dataset(dataset.root, dataset.manifest, present)
    questions = readable.read("questions", QUESTION_COLUMNS)
    try:
        return stats_from_tables(questions, readable.iter_tables("episodes", EPISODE_COLUMNS), dataset.manifest.config)
    except ConfigError as err:  # the manifest's config sets the criteria's targets
        raise DataFileError(dataset.root / "manifest.json", err.key, err.problem, "regenerate the dataset") from err


def _diff_paths(a: Any, b: Any, path: str = "") -> list[str]:
    """Where two JSON-like values differ (floats compared to 1e-6)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for k in sorted(set(a) | set(b), key=str):
            if k not in a or k not in b:
                out.append(f"{path}/{k}")
            else:
                out += _diff_paths(a[k], b[k], f"{path}/{k}")
        return out
    if isinstance(a, float) or isinstance(b, float):
        numbers = all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in (a, b))
        ok = numbers and abs(float(a) - float(b)) <= 1e-6  # a text where a number was recorded differs
        return [] if ok else [path]
    return [] if a == b else [path]


def check_stats(recorded: Any, recomputed: dict[str, Any]) -> Check:
    dataset = recorded.get("dataset", {}) if isinstance(recorded, dict) else recorded
    diffs = _diff_paths(dataset, recomputed)
    return Check("stats.json equals the statistics recomputed from the shards", not diffs, ", ".join(diffs[:10]))


def check_dataset(stats: dict[str, Any]) -> list[Check]:
    q = stats["questions"]
    bal, leak = q["balance"], q["leakage"]
    shared = {k: v for k, v in leak["balance_keys_in_several_splits"].items() if v}
    return [
        Check(
            "every question group exactly balanced",
            bal["groups"] == 0 or bal["exactly_balanced_share"] == 1.0,
            f"share {bal['exactly_balanced_share']}",
        ),
        Check("no question in two splits", not shared, json.dumps(shared)),
    ]


def check_criteria(stats: dict[str, Any]) -> list[Check]:
    """One check per method criterion (:mod:`eqagen.curation.criteria`), as recomputed from the shards."""
    return [
        Check(f"{CRITERION_PREFIX}{name}", c["ok"], criterion_line(c), measured=True)
        for name, c in stats["criteria"].items()
    ]


def criterion_line(c: Mapping[str, Any]) -> str:
    """A criterion as the audit prints it: its verdict, its test and what was measured."""
    verdict = "passed" if c["ok"] else "MISSED"
    return f"{verdict}; test: {c.get('test') or c['target']}; measured: {c['detail']}"


def failed_criteria(checks: list[Check]) -> list[str]:
    return [c.name.removeprefix(CRITERION_PREFIX) for c in checks if c.measured and not c.ok]


def audit_dir(out_dir: Path) -> tuple[dict[str, Any], list[Check]]:
    """Recomputed statistics and the checks; raises DataFileError for a directory that is no dataset."""
    out_dir = Path(out_dir)
    dataset = load_dataset_folder(out_dir)
    checks = integrity(dataset)
    recomputed = recomputed_stats(dataset)
    readable = all(c.ok for c in checks if c.name == "stats.json readable")  # else that check failed already
    if (out_dir / "stats.json").exists() and readable:
        checks.append(check_stats(_load_json(out_dir / "stats.json"), recomputed))
    elif readable:
        checks.append(Check("stats.json present", False, "missing"))
    checks += check_dataset(recomputed)
    checks += check_criteria(recomputed)
    return recomputed, checks


def validity_checks(out_dir: Path) -> list[Check]:
    """One check per validity rule and data check of ``validity_audit`` (``eqagen audit --rules``): every
    question re-evaluated from the shards and judged by every rule."""
    report = check_output(Path(out_dir))
    counts = report.counts("reason")
    checks = []
    for reason in REASONS:
        n = counts.get((reason,), 0)
        detail = f"{n} violations, e.g. {report.examples(reason, 1)[0].text!r}" if n else ""
        checks.append(Check(f"validity: {reason}", n == 0, detail))
    return checks


def openeqa_stats(path: Path) -> dict[str, Any]:
    """The comparable part of the statistics of an OpenEQA-format JSON file."""
    items = _load_json(path)
    if not isinstance(items, list) or not all(isinstance(i, dict) for i in items):
        raise DataFileError(path, None, "expected a JSON list of question objects (OpenEQA format)")
    for i, item in enumerate(items):
        missing = {"question", "answer", "category"} - set(item)
        if missing:
            raise DataFileError(path, f"[{i}]", f"missing keys {sorted(missing)}")
        wrong = sorted(k for k in ("question", "answer", "category") if not isinstance(item[k], str))
        if wrong:
            raise DataFileError(
                path, f"[{i}].{wrong[0]}", f"is not text: {item[wrong[0]]!r}"[:200], "OpenEQA's strings"
            )
    cats: dict[str, int] = {}
    for item in items:
        cats[item["category"]] = cats.get(item["category"], 0) + 1
    q_words = np.array([len(i["question"].split()) for i in items], float)
    a_words = np.array([len(i["answer"].split()) for i in items], float)
    return {
        "questions": len(items),
        "openeqa_category": dict(sorted(cats.items(), key=lambda kv: (-kv[1], kv[0]))),
        "question_words_mean": round(float(q_words.mean()), 3) if len(items) else 0.0,
        "answer_words_mean": round(float(a_words.mean()), 3) if len(items) else 0.0,
    }


def comparable(stats: dict[str, Any]) -> dict[str, Any]:
    """The same shape as :func:`openeqa_stats` from an eqagen dataset's statistics."""
    q = stats["questions"]
    d = q["distributions"]
    return {
        "questions": q["questions"],
        "openeqa_category": d["openeqa_category"],
        "question_words_mean": d["question_words"]["mean"],
        "answer_words_mean": d["answer_words"]["mean"],
        "query_type": d["query_type"],
        "filter_family": d["filter_family"],
        "grounded_share": d["grounded_share"],
        "blind_baseline": q["balance"]["blind_baseline"],
    }


NOT_AVAILABLE = "n/a"  # a statistic one of the two datasets does not have (OpenEQA has no query types)


def _share(distribution: dict[str, Any] | None, key: str) -> str:
    if distribution is None:
        return NOT_AVAILABLE
    return f"{distribution.get(key, 0) / (sum(distribution.values()) or 1):.3f}"


def side_by_side(a: dict[str, Any], b: dict[str, Any], names: tuple[str, str]) -> str:
    """A text table: scalars as values, distributions as shares of each dataset's total, ``n/a`` where a
    dataset lacks the statistic (not 0, which would claim it was measured)."""
    rows = [("", names[0], names[1])]
    for key in list(dict.fromkeys(list(a) + list(b))):
        va, vb = a.get(key), b.get(key)
        if isinstance(va, dict) or isinstance(vb, dict):
            rows.append((f"{key}:", "", ""))
            for k in list(dict.fromkeys(list(va or {}) + list(vb or {}))):
                rows.append((f"  {k}", _share(va, k), _share(vb, k)))
        else:
            rows.append((key, NOT_AVAILABLE if va is None else str(va), NOT_AVAILABLE if vb is None else str(vb)))
    widths = [max(len(r[i]) for r in rows) for i in range(3)]
    return "\n".join(f"{r[0]:<{widths[0]}}  {r[1]:>{widths[1]}}  {r[2]:>{widths[2]}}" for r in rows)


def compare_with(stats: dict[str, Any], other: Path) -> str:
    other = Path(other)
    if other.is_dir():
        other_stats, _ = audit_dir(other)
        theirs = comparable(other_stats)
    else:
        theirs = openeqa_stats(other)
    return side_by_side(comparable(stats), theirs, ("this", other.name))


def checks_as_dicts(checks: list[Check]) -> list[dict[str, Any]]:
    return [asdict(c) for c in checks]
