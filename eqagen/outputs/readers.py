"""Read a dataset folder back: Episode and QARecord objects rebuilt from the shards alone (the shards its
manifest lists, verified first: :mod:`eqagen.outputs.dataset`)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from eqagen.core import (
    AnswerGroup,
    Episode,
    FilterSpec,
    Paraphrase,
    Program,
    QARecord,
    QuerySpec,
    ResultItem,
)
from eqagen.outputs.dataset import Dataset, open_dataset, read_shards
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


def program_from_row(p: dict[str, Any]) -> Program:
    """Inverse of :meth:`Program.to_dict`."""
    q = p["query"]
    return Program(tuple(_filter(f) for f in p["filters"]), QuerySpec(q["name"], q["arg"], json.loads(q["args"])))


def record_from_row(row: dict[str, Any]) -> QARecord:
    """Inverse of :meth:`QARecord.to_dict`. A paraphrase column that records nothing (no model, not
    validated, no reason: the text itself) is read back as None."""
    para = row["paraphrase"]
    paraphrase = Paraphrase(**para) if para and (para["model"] or para["validated"] or para["reason"]) else None
    return QARecord(
        episode_id=row["episode_id"],
        scene_id=row["scene_id"],
        family=row["family"],
        backend=row["backend"],
        program=program_from_row(row["program"]),
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


DatasetSource = Path | str | Dataset


def as_dataset(source: DatasetSource) -> Dataset:
    """A dataset already opened, or a folder opened and verified now (:func:`open_dataset`)."""
    return source if isinstance(source, Dataset) else open_dataset(Path(source))


def iter_episodes(source: DatasetSource) -> Iterator[Episode]:
    """The episodes of a dataset folder (verified against its manifest first), shard by shard."""
    for path in as_dataset(source).shards("episodes"):
        for row in read_shards([path], EPISODES_SCHEMA).to_pylist():
            yield episode_from_row(row)


def read_episodes(source: DatasetSource) -> dict[str, Episode]:
    """Every episode of a dataset folder, by id."""
    return {ep.episode_id: ep for ep in iter_episodes(source)}


def read_questions(source: DatasetSource, split: str | None = None) -> list[QARecord]:
    """The questions of a dataset folder (verified against its manifest first), all or one split's."""
    table = read_shards(as_dataset(source).shards("questions"), QUESTIONS_SCHEMA)
    if split is not None:
        table = table.filter(pc.equal(table["split"], split))
    return [record_from_row(r) for r in table.to_pylist()]
