"""Exports of a dataset to other benchmarks' formats.

- ``openeqa``: OpenEQA's JSON list (``question, answer, category, question_id, episode_history`` and,
  where a validated paraphrase gives a second wording of the answer, ``extra_answers``), so OpenEQA's
  own LLM-Match evaluation scores models on our data.
- ``jsonl``: every column of the questions table, one JSON object per line.
- ``history`` and ``scenegraph``: what a model observes, one JSON file per episode in a folder
  (:mod:`eqagen.outputs.model_inputs`, docs/models.md).
- ``vlmevalkit`` and ``lmms-eval``: text multiple choice for those harnesses (:mod:`eqagen.outputs.harness`).
- ``replay``: per episode, what its simulator needs to reproduce it, and a manifest (:mod:`eqagen.outputs.replay`).

The benchmark formats (openeqa, vlmevalkit, lmms-eval) export the test split unless ``--split`` names
another (``all``: every split), as a benchmark is scored on its test split: OpenEQA's evaluation asserts
that the predictions cover exactly the questions of the file.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow.compute as pc

from eqagen.core import OPENEQA_CATEGORIES, ConfigError, DataFileError, split_name
from eqagen.outputs.atomic import write_text_atomic
from eqagen.outputs.dataset import check_one_schema, open_dataset
from eqagen.outputs.harness import export_lmms_eval, export_vlmevalkit
from eqagen.outputs.model_inputs import episode_reference, export_histories, export_scenegraphs
from eqagen.outputs.replay import export_replay

EXPORT_FORMATS = ("openeqa", "jsonl", "express", "history", "scenegraph", "vlmevalkit", "lmms-eval", "replay")
DEFAULT_SPLIT = {"openeqa": "test", "vlmevalkit": "test", "lmms-eval": "test"}  # what a benchmark is scored on
ALL_SPLITS = "all"  # --split all: every split


def chosen_split(fmt: str, split: str | None) -> str | None:
    """The split to export: the one asked for, ``all`` -> every split, none -> the format's default."""
    if split == ALL_SPLITS:
        return None
    return split or DEFAULT_SPLIT.get(fmt)


OPENEQA_COLUMNS = (
    "question_id",
    "episode_id",
    "backend",
    "split",
    "question",
    "answer",
    "category",
    "paraphrase",
)


def _questions(out_dir: Path, split: str | None, columns: tuple[str, ...] | None = None) -> list[dict]:
    """The questions of a verified dataset (:func:`open_dataset`: only the shards its manifest lists, with
    their checksums and row counts, ids unique), every shard of one schema (a shard of another schema whose
    checksum was fixed to match is refused), one split or all, sorted by id."""
    dataset = open_dataset(Path(out_dir))
    check_one_schema(dataset.shards("questions"))
    table = dataset.read("questions", columns)
    if split:
        split = split_name(split)
        present = sorted(set(table["split"].to_pylist()))
        if split not in present:
            raise ConfigError("--split", f"no questions in split '{split}'", ", ".join(present))
        table = table.filter(pc.equal(table["split"], split))
    return table.sort_by("question_id").to_pylist()


def openeqa_item(row: dict[str, Any]) -> dict[str, Any]:
    """One question in OpenEQA's record form; the paraphrase is used where it was validated."""
    if row["category"] not in OPENEQA_CATEGORIES:
        raise DataFileError("questions", "category", f"'{row['category']}' is not an OpenEQA category")
    para = row.get("paraphrase") or {}
    validated = bool(para.get("validated"))
    question = para["question"] if validated else row["question"]
    item = {
        "question": question,
        "answer": row["answer"],
        "category": row["category"],
        "question_id": row["question_id"],
        "episode_history": episode_reference(row["backend"], row["episode_id"]),
    }
    if validated and para.get("answer") and para["answer"] != row["answer"]:
        item["extra_answers"] = [para["answer"]]
    return item


def export_openeqa(out_dir: Path, dest: Path, split: str | None = None) -> int:
    items = [openeqa_item(r) for r in _questions(out_dir, split, OPENEQA_COLUMNS)]
    write_text_atomic(Path(dest), json.dumps(items, indent=2, ensure_ascii=False) + "\n")
    return len(items)


def _jsonl_lines(rows: list[dict[str, Any]]) -> Iterator[str]:
    for row in rows:
        yield json.dumps(row, sort_keys=True, ensure_ascii=False) + "\n"


def export_jsonl(out_dir: Path, dest: Path, split: str | None = None) -> int:
    rows = _questions(out_dir, split)
    write_text_atomic(Path(dest), "".join(_jsonl_lines(rows)))
    return len(rows)


def export(
    out_dir: Path,
    fmt: str,
    dest: Path,
    split: str | None = None,
    *,
    max_observations: int | None = None,
    at_step: int | None = None,
) -> int:
    """Write ``dest`` in format ``fmt``; returns the number of records written (episodes for the folder
    formats). ``max_observations`` subsamples histories (``history``, and the harness formats' histories),
    ``at_step`` dates scene graphs."""
    split = chosen_split(fmt, split)
    if fmt == "openeqa":
        return export_openeqa(out_dir, dest, split)
    if fmt == "jsonl":
        return export_jsonl(out_dir, dest, split)
    if fmt == "express":
        from eqagen.outputs.export_express import export_express  # navigation only; imported on demand

        return export_express(out_dir, dest, split=split)
    if fmt == "history":
        return export_histories(out_dir, dest, split, max_observations)
    if fmt == "replay":
        return export_replay(out_dir, dest, split)
    if fmt == "vlmevalkit":
        return export_vlmevalkit(out_dir, dest, split, max_observations)
    if fmt == "lmms-eval":
        return export_lmms_eval(out_dir, dest, split, max_observations)
    if fmt == "scenegraph":
        return export_scenegraphs(out_dir, dest, split, at_step)
    raise ConfigError("--format", f"unknown export format '{fmt}'", ", ".join(EXPORT_FORMATS))
