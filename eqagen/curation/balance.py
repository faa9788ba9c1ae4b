"""Per-question balancing across scenes (PQB-EQA), or EmbodiedQA's entropy filter.

Candidates are grouped by ``balance_key`` (the ungrounded canonical question). Within a question,
each scene counts once: of several candidates with the same (question, scene) -- several episodes of
one scene, or the grounded and ungrounded form of one question -- one is kept, chosen by a seeded
random priority, and the others are rejected as ``duplicate_in_scene``. In ``exact`` mode a question
is kept with the k most frequent answers and n scenes for each, choosing (k, n) to keep the most
records (ties: more answers), with k >= ``min_answers`` and n <= ``max_per_answer``; so every kept
question's answers are equally frequent and yes/no questions are exactly 50/50. The scenes of a question
all come from one window of consecutive scene blocks (see ``SCENE_BLOCKS``), the window where it
keeps the most records, so that balance groups cluster and the split can hold whole blocks of scenes
out of train; within the window, which n scenes an answer keeps is decided by the seeded priority.

Everything is columnar: codes from Arrow's dictionary encoding, groups by sorting, no Python loop
over records. Rows are visited in ``question_id`` order, so the result does not depend on row order.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from eqagen.core import derive_rng, derive_seed
from eqagen.curation.columns import (
    SCENE_BLOCKS,
    combined_key,
    encode,
    rank_in_runs,
    require_columns,
    run_starts,
    scene_blocks,
)
from eqagen.curation.config import BalanceConfig
from eqagen.curation.partition import HELD_OUT, held_out_rows

BALANCE_COLUMNS = ("question_id", "scene_id", "balance_key", "answer_key")
REASONS = (
    "kept",
    "duplicate_in_scene",
    "single_scene",
    "single_answer",
    "too_few_answers",
    "too_few_per_answer",
    "answers_far_apart",
    "low_entropy",
    "too_few_scenes",
    "outside_window",
    "surplus_answer",
    "surplus_scene",
)
R = {name: i for i, name in enumerate(REASONS)}


@dataclass
class Codes:
    """The balancing columns as integer codes, in canonical (question_id) order."""

    order: np.ndarray  # canonical position -> table row
    question: np.ndarray
    scene: np.ndarray
    answer: np.ndarray
    question_values: list
    scene_values: list
    answer_values: list


@dataclass
class Tallies:
    """Distinct (question, answer) pairs among the scene representatives, sorted by question then by
    count (descending) then answer; ``rank`` is 1 for a question's most frequent answer."""

    question: np.ndarray
    answer: np.ndarray
    count: np.ndarray
    rank: np.ndarray
    of_row: np.ndarray  # for each representative row (canonical order), its pair index; -1 otherwise


@dataclass
class BalanceSelection:
    rows: np.ndarray  # kept table rows, ascending
    choices: pa.Array  # list<string>, aligned with rows
    stats: dict


def balance(table: pa.Table, config: BalanceConfig, seed: int) -> tuple[pa.Table, dict]:
    """The balanced subset of a candidate table, with ``choices`` set to each question's answer set.

    The pipeline's ``balance`` stage; ``config`` may also be a mapping or None (the defaults)."""
    selection = select_balanced(table, config, seed)
    out = table.take(pa.array(selection.rows, pa.int64()))
    field = pa.field("choices", pa.list_(pa.string()))
    if "choices" in out.column_names:
        out = out.set_column(out.column_names.index("choices"), field, selection.choices)
    else:
        out = out.append_column(field, selection.choices)
    return out, {**selection.stats, "blind_baseline": blind_baseline(out)}


def select_balanced(table: pa.Table, config: BalanceConfig, seed: int) -> BalanceSelection:
    """Which rows balancing keeps, their ``choices`` and the statistics, without building the table."""
    require_columns(table, BALANCE_COLUMNS, "balance input")
    codes = encode_table(table)
    rng = derive_rng(seed, "curation", "balance")
    priority = rng.random(len(codes.order))
    reason = np.full(len(codes.order), R["duplicate_in_scene"], dtype=np.int8)
    reps = scene_representatives(codes.question, codes.scene, priority)
    tallies = tally_answers(codes.question, codes.answer, reps, len(codes.answer_values), seed)
    n_questions = len(codes.question_values)
    scenes_per_question = np.bincount(codes.question[reps], minlength=n_questions)
    if config.mode == "exact":
        all_tallies = tallies
        feasible, _ = choose_answer_counts(all_tallies, config, n_questions)
        in_window = window_members(codes, reps, config, seed)
        tallies = tally_answers(codes.question, codes.answer, in_window, len(codes.answer_values), seed)
        keep_k, keep_n = choose_answer_counts(tallies, config, n_questions)
        reason[reps & ~in_window] = R["outside_window"]
        reason[in_window] = exact_reasons(codes, tallies, in_window, keep_k, keep_n, priority)
        question_reason = rejected_question_reasons(all_tallies, scenes_per_question, keep_k > 0, feasible > 0, config)
    else:
        kept_q, question_reason = entropy_filter(tallies, scenes_per_question, config)
        keep_k = np.where(kept_q, np.bincount(tallies.question, minlength=n_questions), 0)
        reason[reps] = R["kept"]
    rejected_rep = reps & (question_reason[codes.question] != R["kept"])
    reason[rejected_rep] = question_reason[codes.question[rejected_rep]]
    kept_pos = np.flatnonzero(reason == R["kept"])
    rows, choices = kept_rows_and_choices(codes, tallies, keep_k, kept_pos)
    stats = balance_stats(codes, reason, keep_k, config)
    return BalanceSelection(rows=rows, choices=choices, stats=stats)


def encode_table(table: pa.Table) -> Codes:
    order = pc.sort_indices(table, sort_keys=[("question_id", "ascending")]).to_numpy().astype(np.int64)
    question, qv = encode(table.column("balance_key"))
    if HELD_OUT in table.column_names:  # a question is balanced within its partition of scenes
        question = combined_key(held_out_rows(table.column(HELD_OUT)).astype(np.int64), question)
        qv = list(range(int(question.max()) + 1 if len(question) else 0))
    scene, sv = encode(table.column("scene_id"))
    answer, av = encode(table.column("answer_key"), numeric=True)
    return Codes(order, question[order], scene[order], answer[order], qv, sv, av)


def scene_representatives(question: np.ndarray, scene: np.ndarray, priority: np.ndarray) -> np.ndarray:
    """Mask of the one candidate kept per (question, scene): the one with the lowest priority."""
    n_scenes = int(scene.max()) + 1 if len(scene) else 1
    pair = question * n_scenes + scene
    order = np.lexsort((priority, pair))
    mask = np.zeros(len(pair), dtype=bool)
    mask[order[run_starts(pair[order])]] = True
    return mask


def tally_answers(question: np.ndarray, answer: np.ndarray, reps: np.ndarray, n_answers: int, seed: int) -> Tallies:
    """Answer counts per question over the ``reps`` rows; equally frequent answers in a seeded order
    (so that when only some of them can be kept, no answer value is favoured)."""
    rows = np.flatnonzero(reps)
    key = question[rows] * max(n_answers, 1) + answer[rows]
    unique, inverse, count = np.unique(key, return_inverse=True, return_counts=True)
    pair_q, pair_a = unique // max(n_answers, 1), unique % max(n_answers, 1)
    order = np.lexsort((pair_a, _mix(unique, seed), -count, pair_q))
    position = np.empty_like(order)
    position[order] = np.arange(len(order))
    of_row = np.full(len(question), -1, dtype=np.int64)
    of_row[rows] = position[inverse.reshape(-1)]
    pair_q, pair_a, count = pair_q[order], pair_a[order], count[order]
    return Tallies(pair_q, pair_a, count, rank_in_runs(pair_q) + 1, of_row)


def _mix(values: np.ndarray, seed: int) -> np.ndarray:
    """A seeded pseudo-random 64-bit key per value (splitmix64's finaliser): order-independent."""
    x = values.astype(np.uint64) ^ np.uint64(derive_seed(seed, "curation", "answer-ties"))
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return x ^ (x >> np.uint64(31))


def choose_answer_counts(tallies: Tallies, config: BalanceConfig, n_questions: int) -> tuple[np.ndarray, np.ndarray]:
    """Per question (or any key of the tallies), how many answers (k) and scenes per answer (n) to
    keep; k = 0 rejects it.

    Keeping the k most frequent answers with n = min(count of the k-th, cap) keeps k*n records; take
    the k with the most records, and on a tie the larger k (a lower blind baseline). With
    ``max_group_records``, n is also at most max_group_records // k.
    """
    cap = config.max_per_answer or np.iinfo(np.int64).max
    per_answer = np.minimum(tallies.count, cap)
    if config.max_group_records:  # k answers may hold at most max_group_records // k scenes each
        per_answer = np.minimum(per_answer, config.max_group_records // tallies.rank)
    valid = (tallies.rank >= config.min_answers) & (per_answer >= config.min_per_answer)
    span = int(tallies.rank.max()) + 1 if len(tallies.rank) else 1
    score = np.where(valid, tallies.rank * per_answer * span + tallies.rank, -1)
    best = np.full(n_questions, -1, dtype=np.int64)
    np.maximum.at(best, tallies.question, score)
    keep_k = np.where(best >= 0, best % span, 0)
    keep_n = np.where(keep_k > 0, best // span // np.maximum(keep_k, 1), 0)
    return keep_k, keep_n


def window_members(codes: Codes, reps: np.ndarray, config: BalanceConfig, seed: int) -> np.ndarray:
    """Mask of the scene representatives inside their question's window: the run of
    ``window_blocks`` consecutive scene blocks (cyclic) in which the question keeps the most records
    (ties: more answers, then a seeded draw). Questions with no such window get an empty mask."""
    width = window_width(config, len(codes.scene_values))
    rows = np.flatnonzero(reps)
    if width >= SCENE_BLOCKS:
        return reps.copy()
    block = scene_blocks(codes.scene_values)
    row_block = block[codes.scene[rows]]
    start = (row_block[:, None] - np.arange(width)[None, :]) % SCENE_BLOCKS
    window = (codes.question[rows][:, None] * SCENE_BLOCKS + start).reshape(-1)
    answer = np.repeat(codes.answer[rows], width)
    n_answers = max(len(codes.answer_values), 1)
    unique, count = np.unique(window * n_answers + answer, return_counts=True)
    del window, answer, start
    tallies = _ranked(unique // n_answers, unique % n_answers, count)
    n_windows = len(codes.question_values) * SCENE_BLOCKS
    keep_k, keep_n = choose_answer_counts(tallies, config, n_windows)
    records = (keep_k * keep_n).astype(np.float64)
    draw = derive_rng(seed, "curation", "balance-window").random(n_windows)
    span = float(keep_k.max() + 1) if len(keep_k) else 1.0
    score = np.where(keep_k > 0, (records * span + keep_k) + draw, -1.0).reshape(-1, SCENE_BLOCKS)
    best = np.argmax(score, axis=1)
    chosen = np.where(score[np.arange(len(best)), best] >= 0, best, -1)
    question = codes.question[rows]
    inside = (chosen[question] >= 0) & ((row_block - chosen[question]) % SCENE_BLOCKS < width)
    mask = np.zeros(len(reps), dtype=bool)
    mask[rows[inside]] = True
    return mask


def window_width(config: BalanceConfig, n_scenes: int) -> int:
    """Blocks per window: ``window_blocks``, widened until the window holds ``min_window_scenes``."""
    needed = -(-config.min_window_scenes * SCENE_BLOCKS // max(n_scenes, 1))
    return min(SCENE_BLOCKS, max(config.window_blocks, needed))


def _ranked(key: np.ndarray, answer: np.ndarray, count: np.ndarray) -> Tallies:
    order = np.lexsort((answer, -count, key))
    key, answer, count = key[order], answer[order], count[order]
    return Tallies(key, answer, count, rank_in_runs(key) + 1, np.zeros(0, dtype=np.int64))


def exact_reasons(
    codes: Codes, tallies: Tallies, reps: np.ndarray, keep_k: np.ndarray, keep_n: np.ndarray, priority: np.ndarray
) -> np.ndarray:
    """Reason code of each scene representative: kept, surplus answer or surplus scene."""
    rows = np.flatnonzero(reps)
    pair = tallies.of_row[rows]
    question = codes.question[rows]
    answer_kept = tallies.rank[pair] <= keep_k[question]
    order = np.lexsort((priority[rows], pair))
    rank = np.empty(len(rows), dtype=np.int64)
    rank[order] = rank_in_runs(pair[order])
    scene_kept = rank < keep_n[question]
    out = np.where(answer_kept, np.where(scene_kept, R["kept"], R["surplus_scene"]), R["surplus_answer"])
    return out.astype(np.int8)


def rejected_question_reasons(
    tallies: Tallies, scenes_per_question: np.ndarray, kept: np.ndarray, feasible: np.ndarray, config: BalanceConfig
) -> np.ndarray:
    """Why each question was rejected (``kept`` where it was not). ``feasible``: it could be balanced
    over all its scenes, so only the window (its answers lie in scenes far apart) rejected it."""
    answers = np.bincount(tallies.question, minlength=len(kept))
    reason = np.full(len(kept), R["too_few_per_answer"], dtype=np.int8)
    reason[feasible] = R["answers_far_apart"]
    reason[answers < config.min_answers] = R["too_few_answers"]
    reason[answers == 1] = R["single_answer"]
    reason[scenes_per_question <= 1] = R["single_scene"]
    reason[kept] = R["kept"]
    return reason


def entropy_filter(
    tallies: Tallies, scenes_per_question: np.ndarray, config: BalanceConfig
) -> tuple[np.ndarray, np.ndarray]:
    """EmbodiedQA's filter: normalised answer entropy (by log of the number of distinct answers) at
    least the threshold, and the question seen in at least ``min_scenes`` scenes."""
    n_questions = len(scenes_per_question)
    p = tallies.count / scenes_per_question[tallies.question]
    entropy = np.bincount(tallies.question, weights=-p * np.log(p), minlength=n_questions)
    answers = np.bincount(tallies.question, minlength=n_questions)
    normalised = np.where(answers > 1, entropy / np.log(np.maximum(answers, 2)), 0.0)
    kept = (normalised >= config.entropy_threshold - 1e-12) & (scenes_per_question >= config.min_scenes)
    kept &= answers >= 2
    reason = np.full(n_questions, R["kept"], dtype=np.int8)
    reason[~kept & (scenes_per_question < config.min_scenes)] = R["too_few_scenes"]
    reason[~kept & (scenes_per_question >= config.min_scenes)] = R["low_entropy"]
    reason[answers == 1] = R["single_answer"]
    reason[scenes_per_question <= 1] = R["single_scene"]
    return kept, reason


def kept_rows_and_choices(
    codes: Codes, tallies: Tallies, keep_k: np.ndarray, kept_pos: np.ndarray
) -> tuple[np.ndarray, pa.Array]:
    """Kept table rows (ascending) and, for each, its question's answer set in value order."""
    in_set = tallies.rank <= keep_k[tallies.question]
    pair_q, pair_a = tallies.question[in_set], tallies.answer[in_set]
    order = np.lexsort((pair_a, pair_q))
    pair_q, pair_a = pair_q[order], pair_a[order]
    offsets = np.zeros(len(keep_k) + 1, dtype=np.int32)
    np.cumsum(np.bincount(pair_q, minlength=len(keep_k)), out=offsets[1:])
    answers = pa.array([str(v) for v in codes.answer_values], pa.string())
    per_question = pa.ListArray.from_arrays(pa.array(offsets), answers.take(pa.array(pair_a)))
    rows = codes.order[kept_pos]
    order_rows = np.argsort(rows, kind="stable")
    rows = rows[order_rows]
    question = codes.question[kept_pos][order_rows]
    return rows, per_question.take(pa.array(question))


def balance_stats(codes: Codes, reason: np.ndarray, keep_k: np.ndarray, config: BalanceConfig) -> dict:
    n_candidates = len(reason)
    kept = reason == R["kept"]
    n_questions = len(codes.question_values)
    kept_questions = np.zeros(n_questions, dtype=bool)
    kept_questions[codes.question[kept]] = True
    candidates_per_question = np.bincount(codes.question, minlength=n_questions)
    n_kept_q = int(kept_questions.sum())
    per_kept = candidates_per_question[kept_questions]
    records_per_kept = np.bincount(codes.question[kept], minlength=n_questions)[kept_questions]
    counts = np.bincount(reason, minlength=len(REASONS))
    k_hist = np.bincount(keep_k[kept_questions]) if n_kept_q else np.zeros(0, dtype=np.int64)
    return {
        "mode": config.mode,
        "candidates": n_candidates,
        "kept": int(kept.sum()),
        "kept_share": float(kept.mean()) if n_candidates else 0.0,
        "questions": n_questions,
        "questions_kept": n_kept_q,
        "candidates_per_kept_question": float(n_candidates / n_kept_q) if n_kept_q else None,
        "candidates_per_kept_record": float(n_candidates / kept.sum()) if kept.any() else None,
        "kept_question_candidates": _summary(per_kept),
        "kept_question_records": _summary(records_per_kept),
        "answers_per_kept_question": {str(k): int(c) for k, c in enumerate(k_hist) if c},
        "rejected": {name: int(counts[i]) for i, name in enumerate(REASONS) if i and counts[i]},
    }


def _summary(values: np.ndarray) -> dict:
    if len(values) == 0:
        return {"mean": None, "median": None, "p90": None, "max": None}
    return {
        "mean": float(values.mean()),
        "median": float(np.median(values)),
        "p90": float(np.quantile(values, 0.9)),
        "max": int(values.max()),
    }


def blind_baseline(table: pa.Table) -> dict:
    """Accuracy of answering every question with its most frequent answer (per ``balance_key``),
    measured on ``table``, and the chance level: the mean over records of 1/(distinct answers)."""
    if table.num_rows == 0:
        return {"accuracy": None, "chance": None, "records": 0}
    question, _ = encode(table.column("balance_key"))
    answer, _ = encode(table.column("answer_key"))
    return blind_baseline_codes(question, answer)


def blind_baseline_codes(question: np.ndarray, answer: np.ndarray) -> dict:
    """:func:`blind_baseline` over integer codes of ``balance_key`` and ``answer_key``."""
    if len(question) == 0:
        return {"accuracy": None, "chance": None, "records": 0}
    radix = int(answer.max()) + 1
    unique, count = np.unique(question * radix + answer, return_counts=True)
    pair_q = unique // radix
    majority = np.zeros(int(question.max()) + 1, dtype=np.int64)
    np.maximum.at(majority, pair_q, count)
    distinct = np.bincount(pair_q, minlength=len(majority))
    return {
        "accuracy": float(majority.sum() / len(question)),
        "chance": float(np.mean(1.0 / distinct[question])),
        "records": len(question),
    }
