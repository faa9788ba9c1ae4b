"""A small dataset of real embedded episodes of the three world families with their sampled questions,
written through the dataset writer, for the model-input exports' tests."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from functools import lru_cache
from pathlib import Path

from eqagen.core import Episode, QARecord, derive_rng
from eqagen.generators import get_backend
from eqagen.outputs.folder import write_dataset
from eqagen.outputs.schemas import episodes_table, questions_table
from eqagen.predicates import QuestionConfig
from eqagen.templates.records import sample_questions

# family -> (episodes, plan seed, params); navigation's seed 1 has questions on events of objects never seen
FAMILY_PLANS = {
    "household": (4, 3, {"max_steps": 120}),
    "navigation": (3, 1, {"policy": "express", "n_scenes": 2}),
    "blockworld": (2, 3, {}),
}
SPLITS = ("train", "validation", "test")


@lru_cache(maxsize=1)
def episodes_and_records() -> tuple[tuple[Episode, ...], tuple[QARecord, ...]]:
    """Episodes of each family and their questions, each question group in a split (a third each, by position)."""
    episodes, records = [], []
    for family, (n, seed, params) in FAMILY_PLANS.items():
        backend = get_backend(family, "embedded")
        for spec in backend.plan(n, seed, params):
            ep = backend.run(spec)
            episodes.append(ep)
            qs, _ = sample_questions(ep, QuestionConfig(), derive_rng(3, "model-inputs", ep.episode_id))
            records += [replace(q, split=SPLITS[i % 3]) for i, q in enumerate(qs)]
    return tuple(episodes), tuple(with_choices(records))


def with_choices(records: list[QARecord]) -> list[QARecord]:
    """Each record's choices: the distinct answer contents of the records sharing its question text, as
    balancing sets them (a question of one split only keeps its group in that split: here the split of the
    group's first record)."""
    contents: dict[str, set[str]] = {}
    first_split: dict[str, str] = {}
    for r in records:
        contents.setdefault(r.balance_key, set()).add(r.answer_key)
        first_split.setdefault(r.balance_key, r.split)
    return [replace(r, choices=sorted(contents[r.balance_key]), split=first_split[r.balance_key]) for r in records]


def write_family_dataset(out: Path, records: Sequence[QARecord] | None = None) -> Path:
    """The episodes with their questions (``records``: others of the same episodes in their place)."""
    episodes, own = episodes_and_records()
    records = own if records is None else records
    n, seed, params = FAMILY_PLANS["blockworld"]
    # the config a Minecraft replay bundle rebuilds its worlds from (the blockworld episodes' plan)
    config = {"generation": {"family": "blockworld", "backend": "embedded", "n_episodes": n, "params": params}}
    write_dataset(out, questions_table(list(records)), episodes_table(list(episodes)), {"config": config,
                  "seed": seed, "config_hash": "model-inputs"}, 1000)  # fmt: skip
    return out
