"""Question records: accepted programs turned into ``core.QARecord`` with their text.

Every accepted program yields its ungrounded record and, when it names an ambiguous object, a grounded
record that names one anchor by its coordinates and answers for that anchor's group only.
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from eqagen import GENERATOR_VERSION
from eqagen.core import AnswerGroup, Episode, QARecord
from eqagen.core.gcpause import gc_paused
from eqagen.predicates.config import QuestionConfig
from eqagen.predicates.context import EpisodeContext, context_for
from eqagen.predicates.evaluator import to_answer_group
from eqagen.predicates.registry import REGISTRY
from eqagen.predicates.sampler import Accepted, sample_programs
from eqagen.templates.render import readable_value, render_answer, render_question, render_structured
from eqagen.templates.words import coords

ANCHOR_PLACEHOLDER = "(x, y, z)"


def answer_key(groups: list[AnswerGroup], answer_type: str) -> str:
    """The canonical answer compared across scenes: the readable value(s), anchors left out."""
    return " | ".join(sorted(readable_value(answer_type, g.value) for g in groups))


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
    question = render_question(ctx, program)
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
            structured_question=render_structured(ctx, program),
            structured_answer=groups,
            answer_key=answer_key(groups, answer_type),
            question=question,
            answer=render_answer(ctx, program, groups, answer_type, where),
            grounded=False,
            **common,
        )
    ]
    if where >= 0:
        group = groups[int(rng.integers(0, len(groups)))]
        anchors = {where: group.anchor}
        grounded_question = render_question(ctx, program, anchors)
        records.append(
            QARecord(
                structured_question=render_structured(ctx, program, anchors),
                structured_answer=[group],
                answer_key=answer_key([group], answer_type),
                question=grounded_question,
                answer=render_answer(ctx, program, [group], answer_type, -1),
                grounded=True,
                **{**common, "balance_key": grounded_balance_key(grounded_question, group.anchor)},
            )
        )
    return records


def sample_questions(
    episode: Episode, config: QuestionConfig, rng: np.random.Generator
) -> tuple[list[QARecord], Counter[str]]:
    """Question records of one episode and the count of rejected candidate programs by reason (with the
    cyclic garbage collector paused: the episode's structures make no cycles, see ``core.gcpause``)."""
    with gc_paused():
        ctx = context_for(episode)
        accepted, rejections = sample_programs(ctx, config, rng)
        records = [r for acc in accepted for r in make_records(ctx, acc, rng)]
    return records, rejections
