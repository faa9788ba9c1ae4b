"""Question records: accepted programs turned into ``core.QARecord`` with their text.

Every accepted program yields its ungrounded record and, when it names an ambiguous object, a grounded
record that names one anchor by its coordinates and answers for that anchor's group only.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from eqagen import GENERATOR_VERSION
from eqagen.core import Episode, QARecord
from eqagen.predicates.config import QuestionConfig
from eqagen.predicates.context import EpisodeContext, context_for
from eqagen.predicates.evaluator import to_answer_group
from eqagen.predicates.registry import REGISTRY
from eqagen.predicates.sampler import Accepted, sample_programs
from eqagen.templates.render import (
    anchored_words,
    answer_text,
    program_texts,
    program_words,
    readable_value,
)
from eqagen.templates.words import coords

ANCHOR_PLACEHOLDER = "(x, y, z)"


def answer_key(values: list[str]) -> str:
    """The canonical answer compared across scenes: the groups' readable values, anchors left out."""
    return " | ".join(sorted(values))


def grounded_balance_key(question: str, anchor: tuple[float, float, float]) -> str:
    """A grounded question's balance key: its text with the anchor's coordinates replaced by a placeholder
    ("... on the countertop at (x, y, z)?"), so that grounded questions recur across scenes as a question
    of their own, distinct from their ungrounded twin (see docs/questions.md)."""
    return question.replace(coords(anchor), ANCHOR_PLACEHOLDER)


def make_records(ctx: EpisodeContext, acc: Accepted, rng: np.random.Generator) -> list[QARecord]:
    program, ep = acc.program, ctx.episode
    groups = [to_answer_group(ctx, program, g) for g in acc.groups]
    qdef = REGISTRY.query(program.query.name)
    answer_type = qdef.answer_type(program.query)
    category, express = qdef.categories(program.query)
    where = next((g.filter_index for g in acc.groups if g.anchor >= 0), -1)
    values = [readable_value(answer_type, g.value) for g in groups]
    anchored = anchored_words(ctx, program, groups, where)
    words = program_words(ctx, program)
    question, structured = program_texts(program, words)
    common = {
        "episode_id": ep.episode_id,
        "scene_id": ep.scene_id,
        "family": ep.family,
        "backend": ep.backend,
        "program": program,
        "answer_type": answer_type,
        "category": category,
        "express_category": express,
        "balance_key": question,
        "query_type": program.query.name,
        "generator_version": GENERATOR_VERSION,
    }
    records = [
        QARecord(
            structured_question=structured,
            structured_answer=groups,
            answer_key=answer_key(values),
            question=question,
            answer=answer_text(anchored, values),
            grounded=False,
            **common,
        )
    ]
    if acc.grounded is not None:
        pick = acc.grounded
        group = groups[pick]
        words[where] = anchored[pick]
        grounded_question, grounded_structured = program_texts(program, words)
        records.append(
            QARecord(
                structured_question=grounded_structured,
                structured_answer=[group],
                answer_key=answer_key([values[pick]]),
                question=grounded_question,
                answer=answer_text([None], [values[pick]]),
                grounded=True,
                **{**common, "balance_key": grounded_balance_key(grounded_question, group.anchor)},
            )
        )
    return records


def sample_questions(
    episode: Episode, config: QuestionConfig, rng: np.random.Generator
) -> tuple[list[QARecord], Counter[str]]:
    """Question records of one episode and the count of rejected candidate programs by reason."""
    ctx = context_for(episode)
    accepted, rejections = sample_programs(ctx, config, rng)
    records = [r for acc in accepted for r in make_records(ctx, acc, rng)]
    return records, rejections
