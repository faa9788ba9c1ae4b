"""Every record of a split scored against its prediction: one row of metric values per record.

The metrics a shape gives (docs/scoring.md, "Metrics"); a metric that does not apply to a record is left out
of its row (``count_*`` outside count questions, ``d_t`` without a final position). A record without a
prediction scores as wrong: 0 on the accuracies, 1 on the 1-5 scores.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from eqagen.core import AnswerGroup, DataFileError, QARecord
from eqagen.scoring.choice import accuracy, chance, content_of
from eqagen.scoring.counts import count_exact, mean_relative_accuracy, read_count
from eqagen.scoring.freeform import exact_match
from eqagen.scoring.navigation import distance_to_goal
from eqagen.scoring.predictions import Point, Prediction, Predictions
from eqagen.scoring.readback import Vocabulary, read_anchor, read_back
from eqagen.scoring.similarity import TextSimilarity, token_jaccard
from eqagen.scoring.structured import group_match, structured_score
from eqagen.templates.answers import readable_value

COUNT_TYPES = ("number", "count")
# What each shape reports, in the report's order.
SHAPE_METRICS = {
    "choice": ("accuracy", "chance", "count_exact", "count_mra"),
    "structured_answer": ("structured", "structured_no_grounding", "accuracy", "chance", "count_exact", "count_mra"),
    "answer": ("exact_match", "accuracy", "chance", "readback", "readback_no_grounding", "count_exact", "count_mra"),
}
Scores = dict[str, float]


@dataclass(frozen=True)
class Scorer:
    """What scoring a record needs besides the record and its prediction."""

    shape: str
    vocabulary: Vocabulary
    similarity: TextSimilarity = token_jaccard
    goals: Mapping[str, Point] | None = None  # episode id -> goal (episode frame), for d_T


def chosen_content(path: object, record: QARecord, prediction: Prediction) -> str:
    """The content a ``choice`` names: the choice's text, or the choice at its index."""
    choice = prediction.choice
    fix = f"choose one of the record's {len(record.choices)} choices, by text or by index from 0"
    if isinstance(choice, int):
        if not 0 <= choice < len(record.choices):
            raise DataFileError(path, f"row {prediction.row}: choice", f"index {choice} is out of range", fix)
        return record.choices[choice]
    if choice not in record.choices:
        raise DataFileError(path, f"row {prediction.row}: choice", f"'{choice}' is not one of the choices of "
                            f"question {record.question_id} ({' / '.join(record.choices)})", fix)  # fmt: skip
    return str(choice)


def count_scores(record: QARecord, content: str | None) -> Scores:
    """``count_exact`` and ``count_mra`` for a count question whose answer is one number."""
    truth = read_count(record.answer_key)
    if record.answer_type not in COUNT_TYPES or truth is None:
        return {}
    predicted = read_count(content) if content is not None else None
    return {"count_exact": count_exact(predicted, truth), "count_mra": mean_relative_accuracy(predicted, truth)}


def content_scores(record: QARecord, content: str | None) -> Scores:
    return {"accuracy": accuracy(content, record.answer_key), "chance": chance(record.choices),
            **count_scores(record, content)}  # fmt: skip


def readable_groups(answer_type: str, groups: Sequence[AnswerGroup]) -> list[AnswerGroup]:
    """Groups with their values as the answer sentences say them, for comparing values said in text."""
    return [AnswerGroup("", g.anchor, (), readable_value(answer_type, g.value)) for g in groups]


def structured_scores(record: QARecord, groups: Sequence[AnswerGroup] | None, scorer: Scorer) -> Scores:
    gold, sim = record.structured_answer, scorer.similarity
    if groups is None:
        return {"structured": 1.0, "structured_no_grounding": 1.0, **content_scores(record, None)}
    return {
        "structured": structured_score(groups, gold, True, sim),
        "structured_no_grounding": structured_score(groups, gold, False, sim),
        **content_scores(record, content_of(record.answer_type, groups)),
    }


def answer_scores(record: QARecord, text: str | None, scorer: Scorer) -> Scores:
    if text is None:
        return {"exact_match": 0.0, "readback": 1.0, "readback_no_grounding": 1.0, **content_scores(record, None)}
    answers = [record.answer, record.paraphrase.answer if record.paraphrase else ""]
    asked = read_anchor(record.question) if record.grounded else None
    groups = read_back(text, record.answer_type, scorer.vocabulary, asked)
    said = readable_groups(record.answer_type, groups)
    gold = readable_groups(record.answer_type, record.structured_answer)
    return {
        "exact_match": exact_match(text, answers),
        "readback": group_match(said, gold, True, scorer.similarity),
        "readback_no_grounding": group_match(said, gold, False, scorer.similarity),
        **content_scores(record, content_of(record.answer_type, groups) if groups else None),
    }


def score_record(path: object, record: QARecord, prediction: Prediction | None, scorer: Scorer) -> Scores:
    """The metrics of one record under the file's shape (``path`` names the file in errors)."""
    if scorer.shape == "choice":
        content = chosen_content(path, record, prediction) if prediction is not None else None
        scores = content_scores(record, content)
    elif scorer.shape == "structured_answer":
        scores = structured_scores(record, prediction.structured_answer if prediction else None, scorer)
    else:
        scores = answer_scores(record, prediction.answer if prediction else None, scorer)
    final = prediction.final_position if prediction is not None else None
    if final is not None and scorer.goals is not None and record.episode_id in scorer.goals:
        scores["d_t"] = distance_to_goal(final, scorer.goals[record.episode_id])
    return scores


def score_records(records: Sequence[QARecord], predictions: Predictions, scorer: Scorer) -> list[Scores]:
    """One row of scores per record, in the records' order."""
    rows = predictions.rows
    return [score_record(predictions.path, r, rows.get(r.question_id), scorer) for r in records]
