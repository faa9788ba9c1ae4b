"""The phrasing data (``phrasing.yaml``) and which of its variants a question uses.

A question's wording is drawn with the question's own generator, seeded by a stable hash of its program's
scene-independent form (the ungrounded structured question: it names types, values and events, never
instance ids or coordinates). So the same program reads the same in every scene, and balancing, which
groups questions by their text, sees one question; the grounded twin uses the same wording with its anchor.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Any

import yaml

from eqagen.core import FilterSpec, QuerySpec

PHRASING_FILE = Path(__file__).with_name("phrasing.yaml")
SECTIONS = ("questions", "either_or", "filters", "event", "event_ordinal", "answers", "paraphrase")


@dataclass(frozen=True)
class FilterPhrases:
    """A filter's phrase texts and where they go (None: where the filter's registration says)."""

    texts: tuple[str, ...]
    slot: str | None


@dataclass(frozen=True)
class PhrasingData:
    """The parsed ``phrasing.yaml``: per key, its texts (str.format sources)."""

    questions: dict[str, tuple[str, ...]]
    either_or: dict[str, str]
    filters: dict[str, FilterPhrases]
    event: str
    event_ordinal: str
    answers: dict[str, str]
    answer_openings: tuple[str, ...]
    word_swaps: dict[str, str]


@lru_cache(maxsize=1)
def phrasing() -> PhrasingData:
    """The phrasing data, read once per process."""
    raw = yaml.safe_load(PHRASING_FILE.read_text())
    missing = [s for s in SECTIONS if s not in raw]
    if missing:
        raise ValueError(f"{PHRASING_FILE}: section '{missing[0]}' is missing")
    return PhrasingData(
        questions={k: _texts(v, f"questions.{k}") for k, v in raw["questions"].items()},
        either_or={str(k): str(v) for k, v in raw["either_or"].items()},
        filters={k: _filter_phrases(v, f"filters.{k}") for k, v in raw["filters"].items()},
        event=str(raw["event"]),
        event_ordinal=str(raw["event_ordinal"]),
        answers={str(k): str(v) for k, v in raw["answers"].items()},
        answer_openings=_texts(raw["paraphrase"]["answer_openings"], "paraphrase.answer_openings"),
        word_swaps={str(k): str(v) for k, v in raw["paraphrase"]["word_swaps"].items()},
    )


def _texts(value: Any, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not value or not all(isinstance(v, str) for v in value):
        raise ValueError(f"{PHRASING_FILE}: '{where}' must be a non-empty list of texts")
    return tuple(value)


def _filter_phrases(value: Any, where: str) -> FilterPhrases:
    """A filter's entry: a list of texts, or ``{slot: ..., texts: [...]}``."""
    if not isinstance(value, dict):
        return FilterPhrases(_texts(value, where), None)
    if value.get("slot") not in ("pre", "post", "when"):
        raise ValueError(f"{PHRASING_FILE}: '{where}.slot' must be pre, post or when, not {value.get('slot')!r}")
    return FilterPhrases(_texts(value.get("texts"), f"{where}.texts"), value["slot"])


def most_specific(table: dict[str, Any], keys: list[str]) -> Any | None:
    """The entry of the first key ``table`` has (keys from the most specific to the least), or None."""
    for key in keys:
        if key in table:
            return table[key]
    return None


def question_keys(q: QuerySpec) -> list[str]:
    """``name.arg.subject``, ``name.arg``, ``name``: where a query's question variants are looked up."""
    subject = q.args.get("subject", "")
    keys = [f"{q.name}.{q.arg}.{subject}"] if subject else []
    return [*keys, f"{q.name}.{q.arg}", q.name] if q.arg else [*keys, q.name]


def question_variants(q: QuerySpec) -> tuple[str, ...] | None:
    """The question texts of a query (None: the phrasing data has none; a registered template is used)."""
    return most_specific(phrasing().questions, question_keys(q))


def filter_keys(spec: FilterSpec) -> list[str]:
    """``family.key.value`` (a state's true/false, ``you``), ``family.key``: where a filter's words are looked up."""
    return [f"{spec.family}.{spec.key}.{spec.value}", f"{spec.family}.{spec.key}"]


def filter_phrases(spec: FilterSpec) -> FilterPhrases | None:
    """A filter's phrases (None: the data has none; a phrase registered with the filter is used)."""
    return most_specific(phrasing().filters, filter_keys(spec))


@dataclass(frozen=True)
class Wording:
    """Which variant of its question text and of each filter's phrase a question uses."""

    question: int
    filters: tuple[int, ...]


def own_draws(canonical: str, n: int) -> list[float]:
    """``n`` uniform draws in [0, 1): the question's own generator, BLAKE2b in counter mode keyed by the
    question's scene-independent form (eight draws of 64 bits per digest). Stable across processes and
    versions, and cheap: 1-2 µs per question, where seeding a ``random.Random`` costs about 15 µs and a numpy
    generator 15-45 µs."""
    out: list[float] = []
    for block in range((n + 7) // 8):
        digest = hashlib.blake2b(f"{block}:{canonical}".encode(), digest_size=64).digest()
        out += [int.from_bytes(digest[i : i + 8], "big") / 2**64 for i in range(0, 64, 8)]
    return out[:n]


def below(u: float, n: int) -> int:
    """An integer in [0, n) from a uniform draw ``u``."""
    return min(int(u * n), n - 1)


def wording_for(q: QuerySpec, filters: tuple[FilterSpec, ...], canonical: str) -> Wording:
    """The wording a program's question uses, drawn with its own generator (``own_draws(canonical, ...)``)."""
    u = own_draws(canonical, 1 + len(filters))
    question = below(u[0], len(question_variants(q) or ("",)))
    counts = [len(p.texts) if p else 1 for p in map(filter_phrases, filters)]
    return Wording(question, tuple(below(x, n) for x, n in zip(u[1:], counts)))
