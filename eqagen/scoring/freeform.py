"""Free-form answers offline: exact match after normalisation (SQuAD's, with number words as digits).

``normalise(s)``: lower case; number words (zero..twelve, once, twice, and never: a count of events of 0) as
digits; punctuation, the articles a, an, the, and extra white space removed.
``exact_match = 1[normalise(prediction) in {normalise(a) : a in answers}]``, the answers being the record's
template answer and its paraphrased answer.
"""

from __future__ import annotations

import string
from collections.abc import Iterable

from eqagen.templates.words import number_word

NUMBER_WORDS = {number_word(n): str(n) for n in range(13)} | {"never": "0", "once": "1", "twice": "2"}
_PUNCTUATION = str.maketrans({c: " " for c in string.punctuation})
_ARTICLES = frozenset({"a", "an", "the"})


def normalise(text: str) -> str:
    words = text.lower().translate(_PUNCTUATION).split()
    return " ".join(NUMBER_WORDS.get(w, w) for w in words if w not in _ARTICLES)


def exact_match(prediction: str | None, answers: Iterable[str]) -> float:
    """``1`` if the normalised prediction equals a normalised answer, else ``0`` (no prediction: 0)."""
    if prediction is None:
        return 0.0
    return float(normalise(prediction) in {normalise(a) for a in answers if a})
