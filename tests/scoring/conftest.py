"""A small dataset made by the real engine: household and navigation episodes of the embedded backends, their
questions sampled and worded as ``eqagen generate`` does, written with the project's dataset writer.

Balancing is not run (it needs hundreds of scenes): each record's ``choices`` are its own content and the
contents of the next two records of its query type, so chance and accuracy still have their meaning. The
episodes of the last household scene and of one navigation scene are the test split (unseen in train)."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

from eqagen.config import load_config
from eqagen.core import QARecord, derive_rng
from eqagen.generators import get_backend
from eqagen.outputs.folder import write_dataset
from eqagen.outputs.readers import read_episodes, read_questions
from eqagen.outputs.schemas import episodes_table, questions_table
from eqagen.templates.records import sample_questions

SEED = 3


def with_choices(records: list[QARecord]) -> list[QARecord]:
    out = []
    for i, r in enumerate(records):
        same = [s.answer_key for s in records[i + 1 :] + records[:i] if s.query_type == r.query_type]
        others = [k for k in dict.fromkeys(same) if k != r.answer_key][:2]
        out.append(replace(r, choices=sorted([r.answer_key, *others])))
    return out


def engine_records() -> tuple[list, list[QARecord]]:
    episodes, records = [], []
    household, navigation = get_backend("household", "embedded"), get_backend("navigation", "embedded")
    specs = [
        *((household, s, "tag-eqa") for s in household.plan(5, SEED, {"max_steps": 120, "n_scenes": 5})),
        *((navigation, s, "express-bench") for s in navigation.plan(3, SEED, {"policy": "express", "n_scenes": 2})),
    ]
    test_scenes = {specs[4][1].scene_id, specs[-1][1].scene_id}
    for backend, spec, preset in specs:
        ep = backend.run(spec)
        episodes.append(ep)
        qs, _ = sample_questions(ep, load_config(preset).questions, derive_rng(SEED, "questions", ep.episode_id))
        split = "test" if ep.scene_id in test_scenes else "train"
        records.extend(replace(q, split=split) for q in qs)
    return episodes, with_choices(records)


@pytest.fixture(scope="session")
def scored_dataset(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("scoring") / "dataset"
    episodes, records = engine_records()
    fields = {"config": {}, "seed": SEED, "config_hash": "scoring-test"}
    write_dataset(out, questions_table(records), episodes_table(episodes), fields, 1000)
    return out


@pytest.fixture(scope="session")
def split_records(scored_dataset) -> list[QARecord]:
    return read_questions(scored_dataset, "test")


@pytest.fixture(scope="session")
def episodes(scored_dataset):
    return read_episodes(scored_dataset)


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path
