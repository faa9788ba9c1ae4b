"""Per-question balancing: exact balance, optimal choice of scenes, windows, entropy mode, stats."""

from __future__ import annotations

import math
from collections import Counter, defaultdict

import numpy as np
import pyarrow as pa
import pytest

from eqagen.core import DataFileError
from eqagen.curation.balance import balance, blind_baseline
from eqagen.curation.columns import SCENE_BLOCKS, scene_blocks
from eqagen.curation.config import BalanceConfig
from eqagen.curation.synthetic import candidate_pool
from tests.curation.curation_checks import assert_blind_baseline_at_chance, assert_exactly_balanced, rows


def consistent_pool(n: int, seed: int, **kwargs) -> pa.Table:
    """A pool where repeated (question, scene) candidates agree on the answer, so that which duplicate
    balancing keeps cannot change what the optimum is."""
    pool = candidate_pool(n, seed, **kwargs)
    first: dict[tuple[str, str], str] = {}
    answers = []
    for key, scene, answer in rows(pool, "balance_key", "scene_id", "answer_key"):
        answers.append(first.setdefault((key, scene), answer))
    return pool.set_column(pool.column_names.index("answer_key"), "answer_key", pa.array(answers, pa.string()))


def scenes_per_answer(pool: pa.Table) -> dict[str, dict[str, set[str]]]:
    out: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for key, scene, answer in rows(pool, "balance_key", "scene_id", "answer_key"):
        out[key][answer].add(scene)
    return out


def best_records(counts: list[int], cap: int | None, group_cap: int | None = 16) -> tuple[int, int]:
    """Brute force: (records kept, answers kept) of the best k >= 2, ties to the larger k."""
    ordered = sorted(counts, reverse=True)
    best = (0, 0)
    for k in range(2, len(ordered) + 1):
        n = min(ordered[k - 1], cap or ordered[k - 1], (group_cap or 10**9) // k)
        if n >= 1:
            best = max(best, (k * n, k))
    return best


@pytest.fixture(scope="module")
def pool() -> pa.Table:
    return consistent_pool(12000, 3, n_scenes=400)


def test_every_group_exactly_balanced_and_at_chance(pool):
    out, _ = balance(pool, BalanceConfig(), seed=5)
    assert out.num_rows > 500
    assert_exactly_balanced(out)
    assert_blind_baseline_at_chance(out)
    measured = blind_baseline(out)
    assert measured["accuracy"] == pytest.approx(measured["chance"])
    assert balance(pool, BalanceConfig(), seed=5)[1]["blind_baseline"] == measured


def test_global_mode_keeps_the_optimum_per_question(pool):
    config = BalanceConfig(window_blocks=SCENE_BLOCKS, max_per_answer=3, max_group_records=8)
    out, stats = balance(pool, config, seed=5)
    candidates = scenes_per_answer(pool)
    kept = Counter(out.column("balance_key").to_pylist())
    kept_answers = {k: set(v) for k, v in _answer_sets(out).items()}
    for key, by_answer in candidates.items():
        records, k = best_records([len(s) for s in by_answer.values()], 3, 8)
        assert kept.get(key, 0) == records, key
        if records:  # the k kept answers are k of the most frequent (ties broken either way)
            kept_set = kept_answers[key]
            assert len(kept_set) == k
            least_kept = min(len(by_answer[a]) for a in kept_set)
            assert all(len(by_answer[a]) <= least_kept for a in by_answer if a not in kept_set)
    assert stats["questions_kept"] == len(kept)


def _answer_sets(table: pa.Table) -> dict[str, list[str]]:
    out: dict[str, list[str]] = defaultdict(list)
    for key, answer in rows(table, "balance_key", "answer_key"):
        out[key].append(answer)
    return out


def test_window_mode_keeps_scenes_of_one_window_and_its_optimum(pool):
    config = BalanceConfig(window_blocks=8, min_window_scenes=2)
    out, _ = balance(pool, config, seed=9)
    scene_names = sorted(set(pool.column("scene_id").to_pylist()))
    block = dict(zip(scene_names, scene_blocks(scene_names).tolist()))
    kept_blocks: dict[str, set[int]] = defaultdict(set)
    kept_count = Counter()
    for key, scene in rows(out, "balance_key", "scene_id"):
        kept_blocks[key].add(block[scene])
        kept_count[key] += 1
    for key, blocks in kept_blocks.items():
        assert any(all((b - s) % SCENE_BLOCKS < 8 for b in blocks) for s in range(SCENE_BLOCKS)), key
    for key, by_answer in scenes_per_answer(pool).items():
        best = 0
        for start in range(SCENE_BLOCKS):
            counts = [sum((block[s] - start) % SCENE_BLOCKS < 8 for s in sc) for sc in by_answer.values()]
            best = max(best, best_records([c for c in counts if c], config.max_per_answer)[0])
        assert kept_count.get(key, 0) == best, key


def test_one_record_per_question_and_scene_among_duplicates():
    pool = candidate_pool(8000, 11, n_scenes=150, zipf=1.3)
    pairs = Counter(rows(pool, "balance_key", "scene_id"))
    assert max(pairs.values()) > 1  # the pool does repeat (question, scene)
    out, stats = balance(pool, BalanceConfig(), seed=1)
    assert max(Counter(rows(out, "balance_key", "scene_id")).values()) == 1
    assert stats["rejected"]["duplicate_in_scene"] == sum(c - 1 for c in pairs.values())


def test_stats_account_for_every_candidate(pool):
    out, stats = balance(pool, BalanceConfig(), seed=2)
    assert stats["kept"] == out.num_rows
    assert stats["kept"] + sum(stats["rejected"].values()) == stats["candidates"] == pool.num_rows
    assert stats["candidates_per_kept_question"] == pytest.approx(pool.num_rows / stats["questions_kept"])
    kept_keys = set(out.column("balance_key").to_pylist())
    all_counts = Counter(pool.column("balance_key").to_pylist())
    per_kept = [all_counts[k] for k in kept_keys]
    assert stats["kept_question_candidates"]["mean"] == pytest.approx(np.mean(per_kept))
    hist = Counter(len(set(v)) for v in _answer_sets(out).values())
    assert stats["answers_per_kept_question"] == {str(k): v for k, v in sorted(hist.items())}
    single = [k for k, by_answer in scenes_per_answer(pool).items() if len(set().union(*by_answer.values())) == 1]
    # one representative per question is counted here; its repeats in the same scene are duplicates
    assert stats["rejected"]["single_scene"] == len(single) > 0


def test_result_does_not_depend_on_row_order(pool):
    shuffled = pool.take(pa.array(np.random.default_rng(0).permutation(pool.num_rows)))
    a, _ = balance(pool, BalanceConfig(), seed=4)
    b, _ = balance(shuffled, BalanceConfig(), seed=4)
    assert sorted(a.column("question_id").to_pylist()) == sorted(b.column("question_id").to_pylist())


def test_seeded(pool):
    a, _ = balance(pool, BalanceConfig(), seed=4)
    b, _ = balance(pool, BalanceConfig(), seed=4)
    c, _ = balance(pool, BalanceConfig(), seed=5)
    assert a.equals(b)
    assert set(a.column("question_id").to_pylist()) != set(c.column("question_id").to_pylist())


def test_entropy_mode_matches_embodiedqa_filter(pool):
    config = BalanceConfig(mode="entropy", entropy_threshold=0.6, min_scenes=4)
    out, stats = balance(pool, config, seed=1)
    kept = Counter(out.column("balance_key").to_pylist())
    candidates = scenes_per_answer(pool)
    for key, by_answer in candidates.items():
        counts = [len(s) for s in by_answer.values()]
        total = sum(counts)
        entropy = -sum(c / total * math.log(c / total) for c in counts)
        normalised = entropy / math.log(len(counts)) if len(counts) > 1 else 0.0
        expected = total if normalised >= 0.6 and total >= 4 else 0
        assert kept.get(key, 0) == expected, key
    assert stats["rejected"].get("low_entropy", 0) > 0
    for key, choices in rows(out, "balance_key", "choices"):
        assert set(choices) == set(candidates[key])


def test_missing_column_names_it():
    pool = candidate_pool(500, 1).drop_columns(["answer_key"])
    with pytest.raises(DataFileError, match="answer_key"):
        balance(pool, BalanceConfig(), seed=0)


def test_config_rejects_unknown_keys():
    with pytest.raises(ValueError):
        BalanceConfig.model_validate({"mode": "exact", "windows": 3})
    out, _ = balance(candidate_pool(3000, 2), BalanceConfig(max_per_answer=2), seed=0)
    assert max(Counter(rows(out, "balance_key", "answer_key")).values()) <= 2


def test_tied_answers_left_out_without_favouring_a_value():
    """300 questions with answers 1, 2, 3 in four scenes each; groups of at most 8 keep two answers."""
    keys, scenes, answers = [], [], []
    for q in range(300):
        for i, answer in enumerate(["1", "2", "3"] * 4):
            keys.append(f"q{q}")
            scenes.append(f"s{i}")
            answers.append(answer)
    n = len(keys)
    table = pa.table(
        {
            "question_id": [f"id{i}" for i in range(n)],
            "scene_id": scenes,
            "balance_key": keys,
            "answer_key": answers,
        }
    )
    config = BalanceConfig(window_blocks=SCENE_BLOCKS, max_group_records=8)
    out, _ = balance(table, config, seed=0)
    assert out.num_rows == 300 * 8
    left_out = Counter()
    for _key, choices in {(k, tuple(c)) for k, c in rows(out, "balance_key", "choices")}:
        (missing,) = {"1", "2", "3"} - set(choices)
        left_out[missing] += 1
    assert sum(left_out.values()) == 300
    assert all(70 <= left_out[a] <= 130 for a in "123"), left_out
