"""Synthetic candidate pools for tests and benchmarks of the curation stages.

A pool imitates what the question engine emits before balancing: many scenes in three families,
several questions per scene drawn from a family vocabulary with Zipf popularity (a few questions are
asked almost everywhere, most rarely), skewed answer distributions (a Dirichlet with small
concentration per question, yes/no questions among them), repeated (question, scene) pairs from
several episodes of one scene, and grounded and ungrounded forms. Only the columns the curation
stages read are filled with meaningful values; the rest have the right types.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa

from eqagen.core import derive_rng

FAMILY_NAMES = ("household", "navigation", "blockworld")
QUERY_TYPES = ("count", "getState", "getProperty", "getLocation", "listObjects", "exists")
FILTER_FAMILIES = ("property", "location", "state", "position", "moment")
MAX_ANSWERS = 8


def candidate_pool(
    n_records: int,
    seed: int,
    *,
    n_scenes: int | None = None,
    vocabulary: int | None = None,
    zipf: float = 1.0,
    concentration: float = 0.6,
    grounded_share: float = 0.3,
    n_signatures: int | None = None,
) -> pa.Table:
    """A pool of about ``n_records`` candidate question records (columns of ``QARecord.to_dict()``)."""
    rng = derive_rng(seed, "synthetic-pool")
    n_scenes = n_scenes or max(20, n_records // 40)
    vocabulary = vocabulary or max(30, n_records // 12)
    scene_family = rng.integers(0, len(FAMILY_NAMES), n_scenes)
    question_family = rng.integers(0, len(FAMILY_NAMES), vocabulary)
    scene, question = _scene_question_pairs(rng, n_records, scene_family, question_family, zipf)
    answer_count, answer_probs = _answer_models(rng, vocabulary, concentration)
    answer = _draw_answers(rng, question, answer_probs)
    query = rng.integers(0, len(QUERY_TYPES), vocabulary)
    filters = _filter_signatures(rng, vocabulary, n_signatures)
    grounded = rng.random(len(question)) < grounded_share
    return _pool_table(scene, question, answer, answer_count, query, filters, grounded, scene_family)


def _scene_question_pairs(
    rng: np.random.Generator, n: int, scene_family: np.ndarray, question_family: np.ndarray, zipf: float
) -> tuple[np.ndarray, np.ndarray]:
    """Rows of (scene, question): scenes uniform, questions Zipf-popular within the scene's family."""
    scene = np.sort(rng.integers(0, len(scene_family), n))
    question = np.empty(n, dtype=np.int64)
    for family in range(len(FAMILY_NAMES)):
        vocab = np.flatnonzero(question_family == family)
        rows = np.flatnonzero(scene_family[scene] == family)
        weights = 1.0 / np.arange(1, len(vocab) + 1) ** zipf
        question[rows] = vocab[rng.choice(len(vocab), len(rows), p=weights / weights.sum())]
    return scene, question


def _answer_models(rng: np.random.Generator, vocabulary: int, concentration: float) -> tuple[np.ndarray, np.ndarray]:
    """Per question: number of possible answers (2 = yes/no for a third of them) and skewed probabilities."""
    count = np.where(rng.random(vocabulary) < 0.35, 2, rng.integers(3, MAX_ANSWERS + 1, vocabulary))
    probs = rng.gamma(concentration, 1.0, (vocabulary, MAX_ANSWERS)) + 1e-9
    probs[np.arange(MAX_ANSWERS)[None, :] >= count[:, None]] = 0.0
    return count, probs / probs.sum(axis=1, keepdims=True)


def _draw_answers(rng: np.random.Generator, question: np.ndarray, probs: np.ndarray) -> np.ndarray:
    cumulative = np.cumsum(probs, axis=1)[question]
    draw = rng.random(len(question))[:, None]
    return np.minimum((draw > cumulative).sum(axis=1), MAX_ANSWERS - 1)


def _filter_signatures(rng: np.random.Generator, vocabulary: int, n_signatures: int | None) -> list[list[str]]:
    """Filter families of each question; with ``n_signatures``, drawn from that many distinct sets."""
    n_sets = vocabulary if n_signatures is None else n_signatures
    n_filters = rng.integers(1, 4, n_sets)
    picks = np.argsort(rng.random((n_sets, len(FILTER_FAMILIES))), axis=1)
    sets = [sorted(FILTER_FAMILIES[j] for j in picks[i, : n_filters[i]]) for i in range(n_sets)]
    if n_signatures is None:
        return sets
    return [sets[i] for i in rng.integers(0, n_sets, vocabulary)]


def _pool_table(
    scene: np.ndarray,
    question: np.ndarray,
    answer: np.ndarray,
    answer_count: np.ndarray,
    query: np.ndarray,
    filters: list[list[str]],
    grounded: np.ndarray,
    scene_family: np.ndarray,
) -> pa.Table:
    n = len(scene)
    yes_no = answer_count[question] == 2
    answer_text = np.where(yes_no, np.where(answer == 0, "yes", "no"), answer.astype(str))
    scene_names = np.array([f"scene-{i:05d}" for i in range(len(scene_family))])
    question_names = np.array([f"q{i:06d}" for i in range(len(answer_count))])
    families = np.array(FAMILY_NAMES)[scene_family[scene]]
    filter_lists = pa.array([filters[q] for q in question.tolist()], pa.list_(pa.string()))
    return pa.table(
        {
            "question_id": pa.array(np.char.add("id", np.arange(n).astype(str)), pa.string()),
            "episode_id": pa.array(np.char.add(scene_names[scene], "-ep0"), pa.string()),
            "scene_id": pa.array(scene_names[scene], pa.string()),
            "family": pa.array(families, pa.string()),
            "backend": pa.array(np.full(n, "embedded"), pa.string()),
            "split": pa.array(np.full(n, ""), pa.string()),
            "answer_type": pa.array(np.where(yes_no, "yes/no", "number"), pa.string()),
            "answer_key": pa.array(answer_text, pa.string()),
            "grounded": pa.array(grounded, pa.bool_()),
            "balance_key": pa.array(question_names[question], pa.string()),
            "query_type": pa.array(np.array(QUERY_TYPES)[query[question]], pa.string()),
            "choices": pa.array([[] for _ in range(n)], pa.list_(pa.string())),
            "predicate_families": filter_lists,
            "n_filters": pa.array([len(filters[q]) for q in question.tolist()], pa.int32()),
        }
    )
