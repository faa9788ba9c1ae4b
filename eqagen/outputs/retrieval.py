"""The retrieval API of TAG-EQA's LLM + API baseline, over an episode's history export (what the model sees).

An *observation* is one visible object at one step: ``Observation(t, id, caption, position, agent)``. The
model calls two filters and reads what they return:

- :func:`filter_by_semantic_similarity` ``(history, text, threshold=0.5)``: the observations whose caption
  is similar to ``text`` (``"red mug"``, ``"fridge"``), most similar first.
- :func:`filter_by_position` ``(history, position, radius=0.25)``: the observations made where the agent
  stood within ``radius`` metres (one step length, 0.25 m) of ``position`` ``(x, y, z)``, measured in the
  floor plane (x-z).

The similarity test is :func:`word_similarity` by default: the cosine of the two texts' word counts, words
split at spaces and at capitals (``CounterTop`` -> ``counter top``), lower-cased. It is deterministic and
needs no network and no model; pass another ``similarity(a, b) -> float`` (an embedding model's) to replace
it. Everything is ordered by step, then object id, so the same history and call give the same list.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

STEP_LENGTH = 0.25  # m: TAG-EQA's position filter radius, one step of the agent
WORD = re.compile(r"[A-Z]?[a-z]+|[A-Z]+(?![a-z])|\d+")

Similarity = Callable[[str, str], float]


@dataclass(frozen=True)
class Observation:
    t: int
    id: str
    caption: str
    position: tuple[float, float, float]  # the object's, episode frame
    agent: tuple[float, float, float]  # where the agent stood


def observations(history: dict[str, Any]) -> Iterator[Observation]:
    """Every visible object of every step of a history, by step then object id."""
    for step in history["steps"]:
        pose = step["pose"]
        agent = (pose["x"], pose["y"], pose["z"])
        for v in sorted(step["visible"], key=lambda v: v["id"]):
            yield Observation(step["t"], v["id"], v["caption"], tuple(v["position"]), agent)


def words(text: str) -> Counter[str]:
    return Counter(w.lower() for w in WORD.findall(text))


def word_similarity(a: str, b: str) -> float:
    """Cosine similarity of the texts' word counts, in [0, 1]."""
    wa, wb = words(a), words(b)
    dot = sum(wa[w] * wb[w] for w in wa)
    norm = math.sqrt(sum(v * v for v in wa.values()) * sum(v * v for v in wb.values()))
    return dot / norm if norm else 0.0


def filter_by_semantic_similarity(
    history: dict[str, Any], text: str, threshold: float = 0.5, similarity: Similarity = word_similarity
) -> list[Observation]:
    """Observations whose caption is at least ``threshold`` similar to ``text``, most similar first (ties in
    step order)."""
    scored = [(similarity(text, o.caption), i, o) for i, o in enumerate(observations(history))]
    return [o for s, _, o in sorted(scored, key=lambda x: (-x[0], x[1])) if s >= threshold]


def filter_by_position(
    history: dict[str, Any], position: tuple[float, float, float], radius: float = STEP_LENGTH
) -> list[Observation]:
    """Observations made where the agent stood within ``radius`` of ``position`` in the x-z plane."""
    x, _, z = position
    return [o for o in observations(history) if math.hypot(o.agent[0] - x, o.agent[2] - z) <= radius]
