"""The score report: one fixed layout (docs/scoring.md, "The report").

``{"overall": cell, "by": {condition: {value: cell}}, "missing": [question ids], "chance_tests": {"overall":
test, "query_type": {value: test}}, "scorer": {what scored what}}``, a cell being ``{metric: mean, metric_ci:
[low, high], "n": records}`` (:mod:`eqagen.scoring.breakdown`), a test ``{n, hits, accuracy, chance, p_value}``
(:mod:`eqagen.scoring.choice`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

from eqagen.core import DataFileError, QARecord
from eqagen.scoring.breakdown import breakdown, cell
from eqagen.scoring.choice import binomial_against_chance
from eqagen.scoring.judge import JudgeRun, express_score, llm_match
from eqagen.scoring.predictions import Predictions
from eqagen.scoring.records import SHAPE_METRICS, Scorer, Scores, score_records
from eqagen.scoring.similarity import similarity_name

JUDGE_METRICS = ("judge_mark", "llm_match", "express_c")
SHOWN_IDS = 5


def check_ids(predictions: Predictions, split: str, split_ids: set[str], dataset_splits: Mapping[str, str]) -> None:
    """Every predicted question is in the split: else one error naming the first few and their rows."""
    unknown = [p for qid, p in predictions.rows.items() if qid not in split_ids]
    if not unknown:
        return

    def where(qid: str) -> str:
        return f"in {dataset_splits[qid]}" if qid in dataset_splits else "not in the dataset"

    named = ", ".join(f"'{p.question_id}' (row {p.row}, {where(p.question_id)})" for p in unknown[:SHOWN_IDS])
    more = f" and {len(unknown) - SHOWN_IDS} more" if len(unknown) > SHOWN_IDS else ""
    ids = "question id" if len(unknown) == 1 else "question ids"
    problem = f"{len(unknown)} {ids} not in the dataset's {split} split: {named}{more}"
    fix = f"predict only the {split} split's questions, or pass --split with the split they are from"
    raise DataFileError(predictions.path, f"row {unknown[0].row}", problem, fix)


def with_judge(records: Sequence[QARecord], scores: list[Scores], predictions: Predictions, run: JudgeRun) -> None:
    """Each record's mark (a record without a prediction: 1, as wrong as can be; one the judge could not mark:
    none) and the metrics made of it."""
    for record, row in zip(records, scores):
        mark = run.marks.get(record.question_id) if record.question_id in predictions.rows else 1
        if mark is not None:
            row.update(judge_mark=float(mark), llm_match=llm_match(mark), express_c=express_score(mark))


def chance_tests(records: Sequence[QARecord], scores: Sequence[Scores]) -> dict[str, Any]:
    """PQB's test of accuracy against chance, overall and per query type."""
    by_type: dict[str, list[Scores]] = defaultdict(list)
    for record, row in zip(records, scores):
        by_type[record.query_type].append(row)

    def test(rows: Sequence[Scores]) -> dict[str, Any]:
        return binomial_against_chance([r["accuracy"] for r in rows], [r["chance"] for r in rows]).to_dict()

    return {"overall": test(scores), "query_type": {q: test(rows) for q, rows in sorted(by_type.items())}}


def score_report(
    records: Sequence[QARecord],
    predictions: Predictions,
    scorer: Scorer,
    seen_scenes: set[str],
    about: Mapping[str, Any],
    judge: JudgeRun | None = None,
) -> dict[str, Any]:
    """The report of one predictions file on one split's records (``about``: the dataset and split, for the
    ``scorer`` section)."""
    scores = score_records(records, predictions, scorer)
    if judge is not None:
        with_judge(records, scores, predictions, judge)
    metrics = [*SHAPE_METRICS[predictions.shape], *(JUDGE_METRICS if judge else ()),
               *(("d_t",) if any("d_t" in r for r in scores) else ())]  # fmt: skip
    missing = [r.question_id for r in records if r.question_id not in predictions.rows]
    return {
        "overall": cell(scores, metrics),
        "by": breakdown(records, scores, metrics, seen_scenes),
        "missing": missing,
        "chance_tests": chance_tests(records, scores) if "accuracy" in metrics and records else {},
        "scorer": {
            **about,
            "predictions": str(predictions.path),
            "shape": predictions.shape,
            "predicted": len(predictions.rows),
            "records": len(records),
            "missing": len(missing),
            "similarity": similarity_name(scorer.similarity),
            "judge": judge.summary() if judge else None,
        },
    }
