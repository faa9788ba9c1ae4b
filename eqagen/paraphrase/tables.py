"""Between question tables (pyarrow, the shape of ``QARecord.to_dict``) and ``QARecord`` objects."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import asdict
from typing import Any

import pyarrow as pa

from eqagen.core.errors import DataFileError
from eqagen.core.records import AnswerGroup, FilterSpec, Paraphrase, Program, QARecord, QuerySpec, ResultItem

# The ``paraphrase`` column of the questions table (``outputs.schemas`` uses this one definition).
PARAPHRASE_TYPE = pa.struct(
    [
        ("question", pa.string()),
        ("answer", pa.string()),
        ("model", pa.string()),  # "offline", the chat model that answered, or "" when none did
        ("validated", pa.bool_()),
        ("attempts", pa.int32()),  # rewrites checked: the model's replies, or offline variants tried
        ("reason", pa.string()),  # why the template text was kept; "" when validated
    ]
)
_REQUIRED = ("episode_id", "program", "structured_answer", "answer_type", "question", "answer")


def _args(value: Any) -> dict[str, Any]:
    if isinstance(value, str):
        return json.loads(value) if value else {}
    return dict(value or {})


def _program(data: dict[str, Any]) -> Program:
    filters = tuple(FilterSpec(f["family"], f["key"], f["value"], _args(f.get("args"))) for f in data["filters"])
    q = data["query"]
    return Program(filters, QuerySpec(q["name"], q.get("arg") or "", _args(q.get("args"))))


def _group(data: dict[str, Any]) -> AnswerGroup:
    anchor = tuple(float(c) for c in data["anchor"]) if data.get("anchor") is not None else None
    result = tuple(
        ResultItem(r["entity"], r["type"], tuple(float(c) for c in r["position"]), r.get("caption") or "")  # type: ignore[arg-type]
        for r in data.get("result") or ()
    )
    return AnswerGroup(data.get("predicate") or "", anchor, result, str(data.get("value") or ""))  # type: ignore[arg-type]


def record_from_row(row: dict[str, Any]) -> QARecord:
    """A ``QARecord`` from one row of a questions table."""
    missing = [name for name in _REQUIRED if name not in row]
    if missing:
        raise DataFileError("questions table", missing[0], "column missing", "paraphrase needs a questions table")
    return QARecord(
        episode_id=row["episode_id"],
        scene_id=row.get("scene_id", ""),
        family=row.get("family", ""),
        backend=row.get("backend", ""),
        program=_program(row["program"]),
        structured_question=row.get("structured_question", ""),
        structured_answer=[_group(g) for g in row["structured_answer"]],
        answer_type=row["answer_type"],
        answer_key=row.get("answer_key", ""),
        question=row["question"],
        answer=row["answer"],
        grounded=bool(row.get("grounded", False)),
        category=row.get("category", ""),
        express_category=row.get("express_category", ""),
        balance_key=row.get("balance_key", ""),
        query_type=row.get("query_type", "") or row["program"]["query"]["name"],
        split=row.get("split", "") or "",
        choices=list(row.get("choices") or []),
        generator_version=row.get("generator_version", ""),
        config_hash=row.get("config_hash", ""),
    )


def records_from_table(table: pa.Table) -> list[QARecord]:
    return [record_from_row(row) for row in table.to_pylist()]


def paraphrase_array(paraphrases: Sequence[Paraphrase]) -> pa.StructArray:
    """The ``paraphrase`` column (:data:`PARAPHRASE_TYPE`)."""
    rows = [asdict(p) for p in paraphrases]
    return pa.array(rows, type=PARAPHRASE_TYPE)
