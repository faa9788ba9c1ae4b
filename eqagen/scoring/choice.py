"""Accuracy by answer content, and PQB-EQA's two-sided exact binomial test against chance.

A record's content is its ``answer_key``: the distinct readable values of its answer groups
(:func:`eqagen.templates.records.answer_key`); its ``choices`` are the contents of its balance group, so a
guesser is right with probability ``1/k``, k the number of choices.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from scipy.stats import binomtest

from eqagen.core import AnswerGroup
from eqagen.templates.answers import readable_value
from eqagen.templates.records import answer_key


def content_of(answer_type: str, groups: Sequence[AnswerGroup]) -> str:
    """The content a structured answer says: ``answer_key`` of its groups' readable values."""
    return answer_key([readable_value(answer_type, g.value) for g in groups])


def accuracy(predicted_content: str | None, gold_content: str) -> float:
    """``1`` if the predicted content is the record's ``answer_key``, else ``0`` (no prediction: 0)."""
    return float(predicted_content == gold_content)


def chance(choices: Sequence[str]) -> float:
    """``1 / k``, k the record's number of choices."""
    return 1.0 / len(choices) if choices else 1.0


SMALLEST_P = 1e-300  # below this a binomial p-value underflows towards 0 in double precision


def p_text(p: float) -> str:
    """A p-value as a reader should see it: three significant digits, and ``< 1e-300`` rather than a 0 that
    only says the number underflowed."""
    return f"< {SMALLEST_P:.0e}" if p < SMALLEST_P else f"{p:.3g}"


@dataclass(frozen=True)
class ChanceTest:
    """``hits`` of ``n`` against ``chance`` (the mean of the records' 1/k): two-sided exact binomial p."""

    n: int
    hits: int
    accuracy: float
    chance: float
    p_value: float

    def to_dict(self) -> dict[str, float | int]:
        return {
            "n": self.n, "hits": self.hits, "accuracy": round(self.accuracy, 6), "chance": round(self.chance, 6),
            "p_value": float(f"{self.p_value:.6g}"),
        }  # fmt: skip


def binomial_against_chance(hits: Sequence[float], chances: Sequence[float]) -> ChanceTest:
    """``binomtest(sum(hits), n, p = mean(1/k), alternative="two-sided")``. With equal k this is exact; where k
    varies, the number of hits of a guesser is Poisson-binomial, whose variance is at most the binomial's with
    the mean p, so the test is conservative."""
    n, k = len(hits), round(sum(hits))
    p = sum(chances) / n if n else 0.0
    if n == 0:
        return ChanceTest(0, 0, 0.0, 0.0, 1.0)
    return ChanceTest(n, k, k / n, p, float(binomtest(k, n, p, alternative="two-sided").pvalue))
