"""Reference predictions that need no model (docs/scoring.md, "Reference runs"):

- gold: each record's own answer, in each of the three shapes;
- blind: the audit's blind baselines (:mod:`eqagen.curation.criteria`: the majority content of each question, the
  TF-IDF text model on the template and on the paraphrased question, fitted on train) as ``choice`` predictions;
- oracle: each question's program executed on its episode as a perceiving agent saw it
  (:func:`perceived_episode`: missed sightings, position noise, attribute confusion, at set rates, seeded per
  episode), as ``structured_answer`` predictions. Without noise it reproduces the gold answer.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pyarrow as pa

from eqagen.core import AnswerGroup, Episode, QARecord, Timeline, derive_rng
from eqagen.curation.criteria import (
    TEXT_MODELS,
    answer_contents,
    blind_setup,
    majority_answers,
    text_model_all_answers,
    text_model_answers,
    text_model_fits,
)
from eqagen.predicates.context import context_for
from eqagen.templates.answers import evaluate_context, readable_value
from eqagen.templates.records import answer_key

Row = dict[str, Any]
CONFUSED_ATTRIBUTES = ("color", "material")


def gold_rows(records: Iterable[QARecord], shape: str) -> list[Row]:
    """Each record's own answer as a prediction of ``shape``."""
    value = {
        "choice": lambda r: r.answer_key,
        "answer": lambda r: r.answer,
        "structured_answer": lambda r: [g.to_dict() for g in r.structured_answer],
    }[shape]
    return [{"question_id": r.question_id, shape: value(r)} for r in records]


# -- blind baselines -------------------------------------------------------------------------------------
def readable_content(answer_type: str, raw: str) -> str:
    """The audit's content (group values joined with " | ") as the record's choices say it."""
    return answer_key([readable_value(answer_type, v) for v in raw.split(" | ")])


def blind_rows(questions: pa.Table) -> dict[str, list[Row]]:
    """The audit's blind models' answers to every test record, as ``choice`` predictions, by model."""
    contents = answer_contents(questions)
    setup = blind_setup(questions, contents)
    fitted = {key: text_model_answers(*fit) for key, fit in text_model_fits(questions, setup).items()}
    answers = {
        "majority": majority_answers(setup.keys, contents, setup.test),
        **{model: text_model_all_answers(setup, model, fitted) for model in TEXT_MODELS},
    }
    ids, types = questions["question_id"].to_pylist(), questions["answer_type"].to_pylist()
    return {
        model: [{"question_id": ids[i], "choice": readable_content(types[i], a)} for i, a in zip(setup.test, chosen)]
        for model, chosen in answers.items()
    }


# -- the oracle ------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PerceptionNoise:
    """What a perceiving agent gets wrong: each sighting ``(t, entity)`` missed with probability ``miss_rate``;
    each entity's position off by a fixed offset drawn from N(0, ``position_sigma_m``) in x and z; each entity's
    color and material replaced by another of the episode's values with probability ``confusion_rate``."""

    miss_rate: float = 0.0
    position_sigma_m: float = 0.0
    confusion_rate: float = 0.0

    @classmethod
    def at(cls, level: float) -> PerceptionNoise:
        """All three at one level: ``level`` of sightings missed and attributes confused, ``level`` metres."""
        return cls(level, level, level)


def confused_attributes(episode: Episode, rate: float, rng: np.random.Generator) -> list[dict[str, str]]:
    attributes = [dict(a) for a in episode.entities.attributes]
    for name in CONFUSED_ATTRIBUTES:
        values = sorted({a[name] for a in attributes if a.get(name)})
        for a in attributes:
            others = [v for v in values if v != a.get(name)]
            if a.get(name) and others and rng.random() < rate:
                a[name] = others[int(rng.integers(len(others)))]
    return attributes


def perceived_episode(episode: Episode, noise: PerceptionNoise, rng: np.random.Generator) -> Episode:
    """The episode as the noisy agent perceived it (the same episode where every rate is 0)."""
    if noise == PerceptionNoise():
        return episode
    timeline = episode.timeline
    dense = {name: np.array(timeline.field(name)) for name in timeline.fields}
    dense["visible"] &= rng.random(dense["visible"].shape) >= noise.miss_rate
    offset = rng.normal(0.0, noise.position_sigma_m, (timeline.n_entities, 3)) * np.array([1.0, 0.0, 1.0])
    dense["position"] = dense["position"] + offset[None].astype(dense["position"].dtype)
    entities = dataclasses.replace(episode.entities, attributes=confused_attributes(episode, noise.confusion_rate, rng))
    return dataclasses.replace(episode, timeline=Timeline.from_dense(dense), entities=entities)


def asked_groups(record: QARecord, groups: Sequence[AnswerGroup]) -> list[AnswerGroup]:
    """The groups a record asks about: a grounded question's the one whose anchor is nearest the question's."""
    asked = record.structured_answer[0].anchor if record.grounded and record.structured_answer else None
    if asked is None or not groups:
        return list(groups)
    located = [g for g in groups if g.anchor is not None]
    if not located:
        return list(groups)
    return [min(located, key=lambda g: float(np.linalg.norm(np.subtract(g.anchor, asked))))]


def oracle_rows(
    records: Sequence[QARecord], episodes: Mapping[str, Episode], noise: PerceptionNoise, seed: int
) -> list[Row]:
    """``structured_answer`` predictions: each record's program evaluated on its perceived episode (one generator
    per episode, from ``seed``, the noise and the episode id). A program the noisy episode cannot answer (the
    evaluator raises) is answered with no group."""
    by_episode: dict[str, list[QARecord]] = {}
    for r in records:
        by_episode.setdefault(r.episode_id, []).append(r)
    answers: dict[str, list[AnswerGroup]] = {}
    for episode_id, mine in sorted(by_episode.items()):
        rng = derive_rng(seed, "oracle", dataclasses.astuple(noise), episode_id)
        ctx = context_for(perceived_episode(episodes[episode_id], noise, rng))
        for r in mine:
            try:
                answers[r.question_id] = asked_groups(r, evaluate_context(ctx, r.program))
            except ValueError:
                answers[r.question_id] = []
    return [{"question_id": r.question_id, "structured_answer": [g.to_dict() for g in answers[r.question_id]]}
            for r in records]  # fmt: skip
