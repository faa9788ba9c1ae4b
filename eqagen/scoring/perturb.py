"""TAG-EQA's validation of its scorer: gold structured answers perturbed at growing strength, in four ways.

Each perturbation takes a strength ``s`` in [0, 1] and one generator per record (the same draws at every
strength, so a stronger perturbation changes a superset of what a weaker one changed):

- ``object_tags``: the first ``ceil(s * n)`` of the n result items (in a drawn order) get a type the record
  does not name;
- ``positions``: every result item and anchor moves ``4 * s`` metres in a drawn horizontal direction;
- ``features``: the first ``ceil(s * n)`` items get a caption whose attribute words (all but the type's) are
  drawn from attribute words the item's caption does not use;
- ``predicates``: the first ``ceil(s * w)`` of the w words of each group's predicate are replaced by predicate
  words of the dataset that share no word with it (the coordinates naming its anchor left out: the scorer weighs
  the anchor instead).

:func:`random_answer` is another record's answer, for a floor.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np

from eqagen.core import AnswerGroup, QARecord, ResultItem
from eqagen.scoring.similarity import words
from eqagen.scoring.structured import without_coordinates
from eqagen.templates.words import label

MAX_SHIFT_M = 4.0


@dataclass(frozen=True)
class Pools:
    """What perturbations draw from: the dataset's types, caption attribute words and predicate words."""

    types: tuple[str, ...]
    attribute_words: tuple[str, ...]
    predicate_words: tuple[str, ...]

    @classmethod
    def of(cls, records: Sequence[QARecord]) -> Pools:
        items = [i for r in records for g in r.structured_answer for i in g.result]
        words = {w for i in items for w in attribute_words(i)}
        predicate_words = {
            w for r in records for g in r.structured_answer for w in without_coordinates(g.predicate).split()
        }
        return cls(tuple(sorted({i.type for i in items})), tuple(sorted(words)), tuple(sorted(predicate_words)))


def attribute_words(item: ResultItem) -> list[str]:
    """The caption's words before the type's name (``green plastic cup`` -> green, plastic)."""
    return item.caption.removesuffix(label(item.type)).split()


def first(n: int, strength: float) -> int:
    return math.ceil(strength * n - 1e-9)


def order(n: int, rng: np.random.Generator) -> list[int]:
    return rng.permutation(n).tolist()


def _items(groups: Sequence[AnswerGroup]) -> list[tuple[int, int]]:
    return [(gi, ii) for gi, g in enumerate(groups) for ii in range(len(g.result))]


def _with_items(groups: Sequence[AnswerGroup], changed: dict[tuple[int, int], ResultItem]) -> list[AnswerGroup]:
    return [
        replace(g, result=tuple(changed.get((gi, ii), item) for ii, item in enumerate(g.result)))
        for gi, g in enumerate(groups)
    ]


def object_tags(groups: Sequence[AnswerGroup], s: float, rng: np.random.Generator, pools: Pools) -> list[AnswerGroup]:
    cells = _items(groups)
    named = {i.type for g in groups for i in g.result}
    others = [t for t in pools.types if t not in named]
    picks = order(len(cells), rng)
    new_types = rng.integers(len(others), size=len(cells)) if others else []
    changed = {}
    for k in picks[: first(len(cells), s)]:
        gi, ii = cells[k]
        changed[gi, ii] = replace(groups[gi].result[ii], type=others[int(new_types[k])])
    return _with_items(groups, changed)


def positions(groups: Sequence[AnswerGroup], s: float, rng: np.random.Generator, pools: Pools) -> list[AnswerGroup]:
    def moved(point: tuple[float, float, float], angle: float) -> tuple[float, float, float]:
        d = MAX_SHIFT_M * s
        return point[0] + d * math.cos(angle), point[1], point[2] + d * math.sin(angle)

    out = []
    for g in groups:
        angles = rng.uniform(0, 2 * math.pi, len(g.result) + 1).tolist()
        anchor = moved(g.anchor, angles[-1]) if g.anchor is not None else None
        items = tuple(replace(i, position=moved(i.position, a)) for i, a in zip(g.result, angles))
        out.append(replace(g, anchor=anchor, result=items))
    return out


def features(groups: Sequence[AnswerGroup], s: float, rng: np.random.Generator, pools: Pools) -> list[AnswerGroup]:
    cells = _items(groups)
    picks = order(len(cells), rng)
    draws = rng.random((len(cells), 4))
    changed = {}
    for k in picks[: first(len(cells), s)]:
        gi, ii = cells[k]
        item = groups[gi].result[ii]
        own = attribute_words(item)
        others = [w for w in pools.attribute_words if w not in own] or ["unknown"]
        words = [others[int(d * len(others))] for d in draws[k][: max(1, len(own))]]
        changed[gi, ii] = replace(item, caption=" ".join([*words, label(item.type)]))
    return _with_items(groups, changed)


def predicates(groups: Sequence[AnswerGroup], s: float, rng: np.random.Generator, pools: Pools) -> list[AnswerGroup]:
    out = []
    for g in groups:
        own = without_coordinates(g.predicate).split()  # the scorer reads the anchor, not its coordinate text
        said = words(" ".join(own))
        others = [w for w in pools.predicate_words if not words(w) & said] or ["unknown"]  # no word it has
        picks = order(len(own), rng)
        draws = rng.integers(len(others), size=len(own))
        for k in picks[: first(len(own), s)]:
            own[k] = others[int(draws[k])]
        out.append(replace(g, predicate=" ".join(own)))
    return out


Perturbation = Callable[[Sequence[AnswerGroup], float, np.random.Generator, Pools], list[AnswerGroup]]
PERTURBATIONS: dict[str, Perturbation] = {
    "object_tags": object_tags,
    "positions": positions,
    "features": features,
    "predicates": predicates,
}


def random_answer(records: Sequence[QARecord], i: int, rng: np.random.Generator) -> list[AnswerGroup]:
    """Another record's structured answer (one drawn from the others)."""
    j = int(rng.integers(len(records) - 1))
    return list(records[j + (j >= i)].structured_answer)
