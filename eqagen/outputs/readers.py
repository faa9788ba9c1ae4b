"""Read an output directory back: Episode and QARecord objects rebuilt from the shards alone."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from eqagen.core import (
    AnswerGroup,
    DataFileError,
    Episode,
    FilterSpec,
    Paraphrase,
    Program,
    QARecord,
    QuerySpec,
    ResultItem,
)
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA


def episode_from_row(row: dict[str, Any]) -> Episode:
    """Inverse of :func:`eqagen.outputs.schemas.episode_row`."""
    return Episode.from_dict(row)


def _filter(d: dict[str, Any]) -> FilterSpec:
    return FilterSpec(d["family"], d["key"], d["value"], json.loads(d["args"]))


def _group(d: dict[str, Any]) -> AnswerGroup:
    items = tuple(
        ResultItem(r["entity"], r["type"], tuple(r["position"]), r["caption"], r.get("value") or "")
        for r in d["result"]
    )
    anchor = tuple(d["anchor"]) if d["anchor"] is not None else None
    return AnswerGroup(d["predicate"], anchor, items, d["value"])


def record_from_row(row: dict[str, Any]) -> QARecord:
    """Inverse of :meth:`QARecord.to_dict`. A paraphrase column that records nothing (no model, not
    validated, no reason: the text itself) is read back as None."""
    p, q = row["program"], row["program"]["query"]
    para = row["paraphrase"]
    paraphrase = Paraphrase(**para) if para and (para["model"] or para["validated"] or para["reason"]) else None
    return QARecord(
        episode_id=row["episode_id"],
        scene_id=row["scene_id"],
        family=row["family"],
        backend=row["backend"],
        program=Program(tuple(_filter(f) for f in p["filters"]), QuerySpec(q["name"], q["arg"], json.loads(q["args"]))),
        structured_question=row["structured_question"],
        structured_answer=[_group(g) for g in row["structured_answer"]],
        answer_type=row["answer_type"],
        answer_key=row["answer_key"],
        question=row["question"],
        answer=row["answer"],
        grounded=row["grounded"],
        category=row["category"],
        express_category=row["express_category"],
        balance_key=row["balance_key"],
        query_type=row["query_type"],
        split=row["split"],
        choices=list(row["choices"]),
        paraphrase=paraphrase,
        generator_version=row["generator_version"],
        config_hash=row["config_hash"],
    )


def _shards(out_dir: Path, table: str, split: str | None = None) -> list[Path]:
    base = Path(out_dir) / table
    if split is not None:
        base = base / f"split={split}"
    paths = sorted(base.rglob("part-*.parquet"))
    if not paths:
        raise DataFileError(base, None, "no Parquet shards found", "run `eqagen generate` into this directory first")
    return paths


def read_shards(paths: list[Path], schema: pa.Schema) -> pa.Table:
    """Shards concatenated in path order, checked against the expected schema."""
    tables = []
    for path in paths:
        table = pq.read_table(path, partitioning=None)
        if not table.schema.equals(schema, check_metadata=False):
            raise DataFileError(path, None, "schema differs from this eqagen version's", "regenerate the dataset")
        tables.append(table)
    return pa.concat_tables(tables) if tables else schema.empty_table()


def iter_episodes(out_dir: Path) -> Iterator[Episode]:
    for path in _shards(out_dir, "episodes"):
        for row in read_shards([path], EPISODES_SCHEMA).to_pylist():
            yield episode_from_row(row)


def read_episodes(out_dir: Path) -> dict[str, Episode]:
    """Every episode of an output directory, by id."""
    return {ep.episode_id: ep for ep in iter_episodes(out_dir)}


def read_questions(out_dir: Path, split: str | None = None) -> list[QARecord]:
    table = read_shards(_shards(out_dir, "questions", split), QUESTIONS_SCHEMA)
    return [record_from_row(r) for r in table.to_pylist()]
