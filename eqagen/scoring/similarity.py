"""Text similarity for the structured match: pluggable, with a deterministic default that needs no download.

A similarity is any ``(a, b) -> float`` in [0, 1] with ``sim(a, a) == 1``. The default,
:func:`token_jaccard`, compares the sets of lower-cased words (camel case split: ``CounterTop`` is
``counter top``). :class:`EmbeddingSimilarity` uses a sentence-embedding model where the user has installed
``sentence-transformers`` and the model; the score report names the similarity used (:func:`similarity_name`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache

from eqagen.core import ConfigError

TextSimilarity = Callable[[str, str], float]
DEFAULT_SIMILARITY = "token-jaccard"
_WORD = re.compile(r"[A-Z]+(?=[A-Z][a-z]|\d|\b)|[A-Z]?[a-z]+|[A-Z]+|\d+(?:\.\d+)?")


@lru_cache(maxsize=8192)  # a dataset's few hundred types and captions recur in every record
def words(text: str) -> frozenset[str]:
    """The lower-cased words of ``text``, camel case split (``CounterTop`` -> {counter, top})."""
    return frozenset(w.lower() for w in _WORD.findall(text))


def token_jaccard(a: str, b: str) -> float:
    """``|W(a) & W(b)| / |W(a) | W(b)|`` over the word sets W; 1 for two texts without words."""
    wa, wb = words(a), words(b)
    union = wa | wb
    return len(wa & wb) / len(union) if union else 1.0


class EmbeddingSimilarity:
    """Cosine similarity of sentence embeddings, clipped to [0, 1] (identical texts: exactly 1)."""

    def __init__(self, model_name: str):
        try:
            from sentence_transformers import SentenceTransformer
        except ImportError as err:
            raise ConfigError(
                "--similarity", f"'{model_name}' needs the sentence-transformers package, which is not installed",
                allowed=f"{DEFAULT_SIMILARITY} (the default), or pip install sentence-transformers",
            ) from err  # fmt: skip
        self.name = model_name
        self._model = SentenceTransformer(model_name)
        self._vectors: dict[str, object] = {}  # text -> unit vector, for the lifetime of this object

    def _vector(self, text: str) -> object:
        if text not in self._vectors:
            self._vectors[text] = self._model.encode(text, normalize_embeddings=True)
        return self._vectors[text]

    def __call__(self, a: str, b: str) -> float:
        if a == b:
            return 1.0
        return min(1.0, max(0.0, float(self._vector(a) @ self._vector(b))))  # type: ignore[operator]


def make_similarity(name: str) -> TextSimilarity:
    """The similarity a name selects: ``token-jaccard``, or a sentence-embedding model's name."""
    return token_jaccard if name == DEFAULT_SIMILARITY else EmbeddingSimilarity(name)


def similarity_name(sim: TextSimilarity) -> str:
    return getattr(sim, "name", DEFAULT_SIMILARITY)
