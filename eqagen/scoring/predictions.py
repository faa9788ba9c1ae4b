"""A model's predictions file, read and checked row by row (the format: docs/scoring.md, "Predictions").

JSONL (one object a line), JSON (a list of objects, as OpenEQA's ``[{question_id, answer}]``) or Parquet, one
row per ``question_id``, every row in the same shape: ``choice`` (a choice's text or its index),
``answer`` (free text) or ``structured_answer`` (groups as the dataset stores them); ``final_position``
(``[x, y, z]``, metres, episode frame) may go with any shape. Other keys are ignored. Every problem is a
:class:`~eqagen.core.DataFileError` naming the file, the row (1-based; a JSONL file's line) and the fix.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from eqagen.core import AnswerGroup, DataFileError, ResultItem

SHAPES = ("choice", "answer", "structured_answer")
FORMAT_FIX = "see docs/scoring.md, 'Predictions'"
Point = tuple[float, float, float]


@dataclass(frozen=True)
class Prediction:
    question_id: str
    row: int  # 1-based, for messages
    choice: str | int | None = None
    answer: str | None = None
    structured_answer: tuple[AnswerGroup, ...] | None = None
    final_position: Point | None = None


@dataclass(frozen=True)
class Predictions:
    path: Path
    shape: str
    rows: dict[str, Prediction]  # by question id, in file order


def raw_rows(path: Path) -> Iterator[tuple[int, Any]]:
    """``(row number, value)`` of every row of the file, whatever it holds."""
    suffix = path.suffix.lower()
    if suffix == ".jsonl":
        with path.open(encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if line.strip():
                    yield n, _json(path, line, f"row {n}")
    elif suffix == ".json":
        data = _json(path, path.read_text(encoding="utf-8"), None)
        if not isinstance(data, list):
            problem = f"holds a JSON {type(data).__name__}, not a list of predictions"
            raise DataFileError(path, None, problem, 'write a JSON list: [{"question_id": ..., "answer": ...}, ...]')
        yield from enumerate(data, 1)
    elif suffix == ".parquet":
        try:
            table = pq.read_table(path)
        except (pa.ArrowException, OSError) as err:
            raise DataFileError(path, None, f"unreadable Parquet ({err})", "write it again with pyarrow") from err
        yield from enumerate(table.to_pylist(), 1)
    else:
        raise DataFileError(path, None, f"unknown predictions format '{suffix or path.name}'",
                            "name it .jsonl, .json or .parquet")  # fmt: skip


def _json(path: Path, text: str, where: str | None) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as err:
        raise DataFileError(path, where, f"not valid JSON ({err})", "write one JSON object per line (JSONL), "
                            "or one JSON list (.json)") from err  # fmt: skip


def read_predictions(path: Path) -> Predictions:
    """Every row checked: an object, a string ``question_id`` seen once, exactly one shape field of the right
    type, the same shape as the first row."""
    path = Path(path)
    if not path.is_file():
        raise DataFileError(path, None, "no such file", "pass the predictions file of a model")
    rows: dict[str, Prediction] = {}
    shape = ""
    for n, value in raw_rows(path):
        prediction, row_shape = parse_row(path, n, value)
        if not shape:
            shape = row_shape
        elif row_shape != shape:
            first = next(iter(rows.values())).row
            problem = f"a prediction of shape '{row_shape}', but row {first}'s is '{shape}' (one shape per file)"
            raise DataFileError(path, f"row {n}", problem, "write one file per shape")
        if prediction.question_id in rows:
            first = rows[prediction.question_id].row
            raise DataFileError(path, f"row {n}", f"question_id '{prediction.question_id}' again (first at row "
                                f"{first})", "keep one prediction per question")  # fmt: skip
        rows[prediction.question_id] = prediction
    if not rows:
        raise DataFileError(path, None, "holds no predictions", "write one row per question: " + FORMAT_FIX)
    return Predictions(path, shape, rows)


def parse_row(path: Path, n: int, value: Any) -> tuple[Prediction, str]:
    where = f"row {n}"
    if not isinstance(value, dict):
        raise DataFileError(path, where, f"a JSON {type(value).__name__}, not an object", FORMAT_FIX)
    qid = value.get("question_id")
    if not isinstance(qid, str) or not qid:
        raise DataFileError(path, f"{where}: question_id", f"{_shown(qid)} is not a question id (a string)",
                            "give each row the question_id of a dataset record")  # fmt: skip
    given = [s for s in SHAPES if value.get(s) is not None]
    if len(given) != 1:
        problem = "has none of" if not given else f"has {' and '.join(given)}: more than one of"
        raise DataFileError(path, where, f"{problem} {', '.join(SHAPES)}", "give exactly one per row: " + FORMAT_FIX)
    shape = given[0]
    final = value.get("final_position")
    fields: dict[str, Any] = {
        "final_position": None if final is None else point(path, f"{where}: final_position", final),
        shape: parse_shape(path, f"{where}: {shape}", shape, value[shape]),
    }
    return Prediction(qid, n, **fields), shape


def parse_shape(path: Path, where: str, shape: str, value: Any) -> Any:
    if shape == "choice":
        if isinstance(value, bool) or not isinstance(value, (int, str)):
            raise DataFileError(path, where, f"{_shown(value)} is not a choice", "give a choice's text or its index")
        return value
    if shape == "answer":
        if not isinstance(value, str):
            raise DataFileError(path, where, f"{_shown(value)} is not text", "give the answer as a string")
        return value
    return tuple(groups(path, where, value))


def groups(path: Path, where: str, value: Any) -> Iterator[AnswerGroup]:
    for i, g in enumerate(_list(path, where, value)):
        at = f"{where}[{i}]"
        _object(path, at, g)
        anchor = g.get("anchor")
        listed = _list(path, f"{at}.result", g.get("result", []))
        items = tuple(item(path, f"{at}.result[{j}]", r) for j, r in enumerate(listed))
        yield AnswerGroup(
            _text(path, f"{at}.predicate", g.get("predicate", "")),
            None if anchor is None else point(path, f"{at}.anchor", anchor),
            items,
            _text(path, f"{at}.value", g.get("value", "")),
        )


def item(path: Path, where: str, value: Any) -> ResultItem:
    _object(path, where, value)
    if "position" not in value:
        raise DataFileError(path, f"{where}.position", "missing", "give each result item its [x, y, z] in metres")
    return ResultItem(
        _text(path, f"{where}.entity", value.get("entity", "")),
        _text(path, f"{where}.type", value.get("type", "")),
        point(path, f"{where}.position", value["position"]),
        _text(path, f"{where}.caption", value.get("caption", "")),
        _text(path, f"{where}.value", value.get("value", "")),
    )


def point(path: Path, where: str, value: Any) -> Point:
    ok = isinstance(value, (list, tuple)) and len(value) == 3
    ok = ok and all(isinstance(c, (int, float)) and not isinstance(c, bool) and math.isfinite(c) for c in value)
    if not ok:
        raise DataFileError(path, where, f"{_shown(value)} is not a point", "give [x, y, z]: three finite numbers")
    x, y, z = (float(c) for c in value)
    return x, y, z


def _list(path: Path, where: str, value: Any) -> list:
    if not isinstance(value, list):
        raise DataFileError(path, where, f"{_shown(value)} is not a list", FORMAT_FIX)
    return value


def _object(path: Path, where: str, value: Any) -> None:
    if not isinstance(value, dict):
        raise DataFileError(path, where, f"{_shown(value)} is not an object", FORMAT_FIX)


def _text(path: Path, where: str, value: Any) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise DataFileError(path, where, f"{_shown(value)} is not text", "give a string")
    return value


def _shown(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 40 else text[:37] + "..."
