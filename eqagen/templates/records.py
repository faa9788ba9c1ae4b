"""Question records: accepted programs turned into ``core.QARecord`` with their text.

Every accepted program yields its ungrounded record and, when it names an ambiguous object, a grounded
record that names one anchor by its coordinates and answers for that anchor's group only. Both are worded
alike: the wording is drawn from the program's scene-independent form (``phrasing.wording_for``).
"""

from __future__ import annotations

from collections import Counter

import numpy as np

from eqagen import GENERATOR_VERSION
from eqagen.core import AnswerGroup, Episode, Program, QARecord
from eqagen.predicates.config import QuestionConfig
from eqagen.predicates.context import EpisodeContext, context_for
from eqagen.predicates.index import EpisodeIndex
from eqagen.predicates.registry import REGISTRY
from eqagen.predicates.sampler import Accepted, sample_programs
from eqagen.templates.answers import answer_groups, answer_text, readable_value
from eqagen.templates.phrasing import Wording, wording_for
from eqagen.templates.render import filter_phrase, question_text, structured_question
from eqagen.templates.words import coords

ANCHOR_PLACEHOLDER = "(x, y, z)"


def answer_key(values: list[str]) -> str:
    """The canonical answer compared across scenes: its content, what a reader must say (the groups'
    distinct readable values, anchors left out): "1" for one group answering 1 and for two groups both
    answering 1, so balancing never counts as different two answers that differ only in their number of
    anchor groups."""
    return " | ".join(sorted(set(values)))


def grounded_balance_key(question: str, anchor: tuple[float, float, float]) -> str:
    """A grounded question's balance key: its text with the anchor's coordinates replaced by a placeholder
    ("... on the countertop at (x, y, z)?"), so that grounded questions recur across scenes as a question
    of their own, distinct from their ungrounded twin (see docs/questions.md)."""
    return question.replace(coords(anchor), ANCHOR_PLACEHOLDER)


def group_labels(program: Program, wording: Wording, groups: list[AnswerGroup], where: int) -> list[str]:
    """What introduces each group in the answer: the ambiguous filter (at ``where``; -1: none) in the
    question's wording, naming the group's anchor ("above the drawer at (x=.., y=.., z=..)")."""
    if where < 0:
        return [""] * len(groups)
    return [filter_phrase(program.filters[where], wording.filters[where], g.anchor) for g in groups]


def make_records(ctx: EpisodeContext, acc: Accepted) -> list[QARecord]:
    program, ep, q = acc.program, ctx.episode, acc.program.query
    qdef = REGISTRY.query(q.name)
    answer_type = qdef.answer_type(q)
    category, express = qdef.categories(q)
    structured = structured_question(program)
    wording = wording_for(q, program.filters, structured)  # as program_wording(program), its form computed once
    question = question_text(program, wording)
    groups = answer_groups(ctx, program, acc.groups)
    values = [readable_value(answer_type, g.value) for g in groups]
    where = next((g.filter_index for g in acc.groups if g.anchor >= 0), -1)
    labels = group_labels(program, wording, groups, where)
    common = {
        "episode_id": ep.episode_id,
        "scene_id": ep.scene_id,
        "family": ep.family,
        "backend": ep.backend,
        "program": program,
        "answer_type": answer_type,
        "category": category,
        "express_category": express,
        "query_type": q.name,
        "generator_version": GENERATOR_VERSION,
    }
    records = [
        QARecord(
            structured_question=structured,
            structured_answer=groups,
            answer_key=answer_key(values),
            question=question,
            answer=answer_text(ctx, q, answer_type, groups, labels),
            grounded=False,
            balance_key=question,
            **common,
        )
    ]
    if acc.grounded is not None:  # the anchor the sampler drew among the valid ones
        pick = acc.grounded
        group, anchors = groups[pick], {where: groups[pick].anchor}
        grounded_question = question_text(program, wording, anchors)
        records.append(
            QARecord(
                structured_question=structured_question(program, anchors),
                structured_answer=[group],
                answer_key=answer_key([values[pick]]),
                question=grounded_question,
                answer=answer_text(ctx, q, answer_type, [group], [""]),
                grounded=True,
                balance_key=grounded_balance_key(grounded_question, group.anchor),
                **common,
            )
        )
    return records


def sample_questions(
    episode: Episode, config: QuestionConfig, rng: np.random.Generator
) -> tuple[list[QARecord], Counter[str]]:
    """Question records of one episode and the count of rejected candidate programs by reason."""
    return questions_in_context(context_for(episode), config, rng)


def questions_in_context(
    ctx: EpisodeContext, config: QuestionConfig, rng: np.random.Generator, index: EpisodeIndex | None = None
) -> tuple[list[QARecord], Counter[str]]:
    """:func:`sample_questions` on an episode's context (and index) already built (the pipeline builds them
    once per episode for the questions and the ask stage's vocabulary)."""
    accepted, rejections = sample_programs(ctx, config, rng, index)
    records = [r for acc in accepted for r in make_records(ctx, acc)]
    return records, rejections
