"""TAG-EQA's structured match ("Code-Judge", its section 3.1): a predicted structured answer against the gold
one, on TAG-EQA's 1-5 scale.

The groups of the two answers are matched one to one (Hungarian, :func:`scipy.optimize.linear_sum_assignment`)
and so are the result items inside each pair of groups:

- item similarity ``s(a, b) = (sim(type) + sim(caption) + possim(|pos_a - pos_b|) + sim(value)) / 4``;
- ``possim(d) = exp(-d^2 / (2 * 1.65^2))``, d in metres;
- group similarity ``g(p, q) = (sim(predicate) + sim(value)) / 2`` ignoring grounding, and
  ``(sim(predicate) + sim(value) + possim(|anchor_p - anchor_q|)) / 3`` with grounding where the gold group has an
  anchor (a predicted group without one: 0 for that term); predicates are compared without the coordinates that
  name their anchor (the anchor term weighs those);
- pair score ``g(p, q) * sum(matched s) / max(|items_p|, |items_q|)`` (1 for the item part when both are empty);
- ``raw = sum(matched pair scores) / max(|P|, |Q|)``, and the score is ``1 + 4 * raw``.

Gold scores exactly 5 (every similarity of a text with itself and ``possim(0)`` are 1); an empty prediction
scores 1. :func:`group_match` is the same match over what answer text can carry (each group's anchor and value,
no predicate text, no items): the read-back's score (:mod:`eqagen.scoring.readback`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from eqagen.core import AnswerGroup, ResultItem
from eqagen.scoring.similarity import TextSimilarity, token_jaccard

POSITION_SIGMA_M = 1.65  # TAG-EQA's positional similarity scale, metres
_COORDINATES = re.compile(r"\s*\(x=[^)]*\)")


def possim(d: float) -> float:
    """``exp(-d^2 / (2 * 1.65^2))``: 1 at the same place, 0.5 at 1.94 m, 0.11 at 3.3 m."""
    return math.exp(-(d * d) / (2 * POSITION_SIGMA_M**2))


def distance(a: Sequence[float], b: Sequence[float]) -> float:
    return math.dist(a, b)


def without_coordinates(text: str) -> str:
    """A predicate text without the coordinates that name its anchor (``countertop (x=.., y=.., z=..)``)."""
    return _COORDINATES.sub("", text)


def item_similarity(pred: ResultItem, gold: ResultItem, sim: TextSimilarity = token_jaccard) -> float:
    """``(sim(type) + sim(caption) + possim(|pos_p - pos_g|) + sim(value)) / 4``."""
    near = possim(distance(pred.position, gold.position))
    return (sim(pred.type, gold.type) + sim(pred.caption, gold.caption) + near + sim(pred.value, gold.value)) / 4


def best_assignment_sum(similarity: np.ndarray) -> float:
    """The largest sum of similarities over one-to-one pairings of rows and columns (Hungarian)."""
    if similarity.size == 0:
        return 0.0
    rows, cols = linear_sum_assignment(similarity, maximize=True)
    return float(similarity[rows, cols].sum())


def items_match(pred: Sequence[ResultItem], gold: Sequence[ResultItem], sim: TextSimilarity) -> float:
    """``sum(matched s) / max(|pred|, |gold|)``; 1 when both are empty."""
    if not pred and not gold:
        return 1.0
    matrix = np.array([[item_similarity(p, g, sim) for g in gold] for p in pred]).reshape(len(pred), len(gold))
    return best_assignment_sum(matrix) / max(len(pred), len(gold))


def group_similarity(pred: AnswerGroup, gold: AnswerGroup, grounding: bool, sim: TextSimilarity) -> float:
    """``g(p, q)``: predicate and value, and with grounding the anchors' positional similarity."""
    predicate = sim(without_coordinates(pred.predicate), without_coordinates(gold.predicate))
    if not grounding or gold.anchor is None:
        return (predicate + sim(pred.value, gold.value)) / 2
    anchor = possim(distance(pred.anchor, gold.anchor)) if pred.anchor is not None else 0.0
    return (predicate + sim(pred.value, gold.value) + anchor) / 3


def raw_match(pred: Sequence[AnswerGroup], gold: Sequence[AnswerGroup], grounding: bool, sim: TextSimilarity) -> float:
    """``sum(matched pair scores) / max(|P|, |Q|)`` in [0, 1]; 1 when both are empty."""
    if not pred and not gold:
        return 1.0
    pairs = np.array(
        [[group_similarity(p, g, grounding, sim) * items_match(p.result, g.result, sim) for g in gold] for p in pred]
    ).reshape(len(pred), len(gold))
    return best_assignment_sum(pairs) / max(len(pred), len(gold))


def structured_score(
    pred: Sequence[AnswerGroup],
    gold: Sequence[AnswerGroup],
    grounding: bool = True,
    sim: TextSimilarity = token_jaccard,
) -> float:
    """TAG-EQA's score on 1-5: ``1 + 4 * raw`` (see the module's docstring)."""
    return 1.0 + 4.0 * raw_match(pred, gold, grounding, sim)


def anchor_value_similarity(pred: AnswerGroup, gold: AnswerGroup, grounding: bool, sim: TextSimilarity) -> float:
    """What answer text carries of a group: ``sim(value)``, and with grounding where the gold group has an anchor
    ``(sim(value) + possim(|anchor_p - anchor_q|)) / 2`` (0 for that term when the text names no anchor)."""
    value = sim(pred.value, gold.value)
    if not grounding or gold.anchor is None:
        return value
    anchor = possim(distance(pred.anchor, gold.anchor)) if pred.anchor is not None else 0.0
    return (value + anchor) / 2


def group_match(
    pred: Sequence[AnswerGroup],
    gold: Sequence[AnswerGroup],
    grounding: bool = True,
    sim: TextSimilarity = token_jaccard,
) -> float:
    """The structured match over anchors and values only, on 1-5: ``1 + 4 * sum(matched) / max(|P|, |Q|)``."""
    if not pred and not gold:
        return 5.0
    pairs = np.array([[anchor_value_similarity(p, g, grounding, sim) for g in gold] for p in pred])
    return 1.0 + 4.0 * best_assignment_sum(pairs.reshape(len(pred), len(gold))) / max(len(pred), len(gold))
