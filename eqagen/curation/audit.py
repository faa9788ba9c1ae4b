"""Audit statistics of a dataset, computed column-wise from its tables.

The same functions serve the run (``stats.json`` is written from the shards just written, together with
the funnel counters the stages collected) and ``eqagen audit DIR`` (which reads the shards back and
recomputes everything, then checks it against ``stats.json`` and the manifest). They take tables, never
files: the dataset layer (:mod:`eqagen.outputs.dataset`) reads the questions with the columns the
statistics need (:data:`QUESTION_COLUMNS`) and streams the episodes shard by shard (their steps are the
bulk).
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from eqagen.core import looped_poses
from eqagen.curation.criteria import CRITERIA_COLUMNS, method_criteria

QUESTION_COLUMNS = (
    "question_id", "episode_id", "scene_id", "family", "backend", "split", "query_type", "answer_type",
    "answer_key", "grounded", "category", "express_category", "balance_key", "predicate_families",
    "n_filters", "question", "answer", "paraphrase", "program", "structured_answer",
)  # fmt: skip
EPISODE_COLUMNS = ("episode_id", "family", "backend", "scene_id", "meta", "steps")


def _counts(counts: Mapping) -> dict[str, int]:
    """Counts with keys as text, sorted by descending count then key (stable across runs)."""
    return dict(sorted(((str(k), int(v)) for k, v in counts.items()), key=lambda p: (-p[1], p[0])))


def counter_of(array: pa.ChunkedArray | pa.Array) -> Counter:
    """Rows per value (nulls as None): what :func:`value_counts` reports, as a counter partials can add."""
    vc = pc.value_counts(array)
    return Counter(dict(zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist())))


def value_counts(array: pa.ChunkedArray | pa.Array) -> dict[str, int]:
    """Counts per value, keys as text, sorted by descending count then key (stable across runs)."""
    return _counts(counter_of(array))


def word_counts(texts: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Words per text, as Python's ``str.split()`` counts them."""
    trimmed = pc.utf8_trim_whitespace(texts)
    n = pc.list_value_length(pc.split_pattern_regex(trimmed, r"\s+"))
    n = pc.if_else(pc.equal(pc.utf8_length(trimmed), 0), 0, n)
    return np.asarray(n.to_numpy(zero_copy_only=False), float)


def _word_lengths(n: np.ndarray) -> dict[str, float]:
    if n.size == 0:
        return {"mean": 0.0, "p50": 0.0, "p95": 0.0, "max": 0.0}
    return {
        "mean": round(float(n.mean()), 3),
        "p50": float(np.percentile(n, 50)),
        "p95": float(np.percentile(n, 95)),
        "max": float(n.max()),
    }


def _family_signature(families: pa.ChunkedArray) -> pa.Array:
    joined = pc.binary_join(pc.list_sort(families) if hasattr(pc, "list_sort") else families, "+")
    return pc.if_else(pc.equal(pc.list_value_length(families), 0), "none", joined)


def _share(part: tuple[int, int]) -> float:
    """A mean of booleans from ``(trues, non-null rows)``: 0.0 where there is no row."""
    trues, n = part
    return round(trues / n, 6) if n else 0.0


def _trues(values: pa.ChunkedArray | pa.Array) -> tuple[int, int]:
    """``(trues, non-null rows)`` of a boolean column: its mean, as a partial that adds up exactly."""
    return int(pc.sum(pc.cast(values, pa.int64())).as_py() or 0), len(values) - values.null_count


def _add_pair(a: tuple[int, int], b: tuple[int, int]) -> tuple[int, int]:
    return a[0] + b[0], a[1] + b[1]


# The value counts of the distributions section: stats.json's name -> the questions column counted.
DISTRIBUTION_COLUMNS = {
    "query_type": "query_type", "n_filters": "n_filters", "answer_type": "answer_type",
    "openeqa_category": "category", "express_category": "express_category", "family": "family",
    "backend": "backend",
}  # fmt: skip
EXAMPLES_PER_QUERY_TYPE = 5


@dataclass
class QuestionPartial:
    """What the question statistics need from some of a dataset's rows (one shard, say): counters, sets and
    word counts that add up exactly. :func:`question_partial` makes one from a table, :func:`merge_questions`
    is the one place partials combine, and :func:`question_stats_from` turns the merged one into stats.json's
    ``questions`` section; :func:`question_stats` of a whole table is the three in turn."""

    rows: int = 0
    split_scenes: dict[str, Counter] = field(default_factory=dict)  # split -> scene -> rows
    split_queries: dict[str, Counter] = field(default_factory=dict)  # split -> query type -> rows
    split_keys: dict[str, set] = field(default_factory=dict)  # split -> balance keys
    episodes: set = field(default_factory=set)
    question_ids: set = field(default_factory=set)
    counts: dict[str, Counter] = field(default_factory=dict)  # DISTRIBUTION_COLUMNS and the filter families
    answers: dict[str, Counter] = field(default_factory=dict)  # query type -> answer key -> rows
    grounded: tuple[int, int] = (0, 0)
    question_words: np.ndarray = field(default_factory=lambda: np.zeros(0))
    answer_words: np.ndarray = field(default_factory=lambda: np.zeros(0))
    pairs: Counter = field(default_factory=Counter)  # (balance key, answer key) -> rows
    yes_no_pairs: Counter = field(default_factory=Counter)  # the same, yes/no questions only
    paraphrased: bool = False  # the table has a paraphrase column
    validated: tuple[int, int] = (0, 0)
    models: Counter = field(default_factory=Counter)
    test_examples: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # per query type, smallest ids
    any_examples: dict[str, list[dict[str, str]]] = field(default_factory=dict)  # the same over every split
    # The rows' CRITERIA_COLUMNS (the method criteria need rows, not counts): a shard's partial keeps them where
    # the rows are in memory, so the audit reads no shard back. Not merged: the audit joins the shards' own.
    criteria_rows: pa.Table | None = None


def _per_value(q: pa.Table, by: str, counted: str) -> dict[str, Counter]:
    """``{value of by: counter of counted}`` over ``q``'s rows."""
    if q.num_rows == 0:
        return {}
    grouped = q.group_by([by, counted], use_threads=False).aggregate([([], "count_all")])
    out: dict[str, Counter] = {}
    for b, c, n in zip(*(grouped[name].to_pylist() for name in (by, counted, "count_all"))):
        out.setdefault(b, Counter())[c] = n
    return out


def _per_split_sets(q: pa.Table, column: str) -> dict[str, set]:
    return {s: set(c) for s, c in _per_value(q, "split", column).items()}


def _first_examples(q: pa.Table, n: int = EXAMPLES_PER_QUERY_TYPE) -> dict[str, list[dict[str, str]]]:
    """Per query type, the ``n`` rows with the smallest question ids, with their question, answer, paraphrase
    (its question, "" where there is none) and episode."""
    columns = [c for c in ("question_id", "query_type", "question", "answer", "paraphrase", "episode_id")
               if c in q.column_names]  # fmt: skip
    out: dict[str, list[dict[str, str]]] = {}
    for row in q.select(columns).sort_by("question_id").to_pylist():
        chosen = out.setdefault(row.pop("query_type"), [])
        if len(chosen) < n:
            chosen.append({**row, "paraphrase": (row.get("paraphrase") or {}).get("question") or ""})
    return out


def _pairs(q: pa.Table) -> Counter:
    return Counter(
        {(b, a): n for b, answers in _per_value(q, "balance_key", "answer_key").items() for a, n in answers.items()}
    )


def _yes_no(q: pa.Table) -> pa.Table:
    return q.filter(pc.equal(q["answer_type"], "yes/no"))


def question_partial(q: pa.Table) -> QuestionPartial:
    """The partial statistics of a questions table (with :data:`QUESTION_COLUMNS`)."""
    counts = {name: counter_of(q[column]) for name, column in DISTRIBUTION_COLUMNS.items() if column in q.column_names}
    counts["filter_family"] = counter_of(pc.list_flatten(q["predicate_families"]))
    counts["filter_family_combination"] = counter_of(_family_signature(q["predicate_families"]))
    paraphrased = "paraphrase" in q.column_names
    para = q["paraphrase"].combine_chunks() if paraphrased else None
    test = q.filter(pc.equal(q["split"], "test"))
    return QuestionPartial(
        rows=q.num_rows,
        split_scenes=_per_value(q, "split", "scene_id"),
        split_queries=_per_value(q, "split", "query_type"),
        split_keys=_per_split_sets(q, "balance_key"),
        episodes=set(q["episode_id"].to_pylist()),
        question_ids=set(q["question_id"].to_pylist()),
        counts=counts,
        answers=_per_value(q, "query_type", "answer_key"),
        grounded=_trues(q["grounded"]),
        question_words=word_counts(q["question"]),
        answer_words=word_counts(q["answer"]),
        pairs=_pairs(q),
        yes_no_pairs=_pairs(_yes_no(q)),
        paraphrased=paraphrased,
        validated=_trues(para.field("validated")) if para is not None else (0, 0),
        models=counter_of(para.field("model")) if para is not None else Counter(),
        test_examples=_first_examples(test),
        any_examples=_first_examples(q),
        criteria_rows=q.select([c for c in CRITERIA_COLUMNS if c in q.column_names]),
    )


def _add_counters(a: Mapping[str, Counter], b: Mapping[str, Counter]) -> dict[str, Counter]:
    return {k: a.get(k, Counter()) + b.get(k, Counter()) for k in {**a, **b}}


def _add_sets(a: Mapping[str, set], b: Mapping[str, set]) -> dict[str, set]:
    return {k: a.get(k, set()) | b.get(k, set()) for k in {**a, **b}}


def _add_examples(a: Mapping[str, list], b: Mapping[str, list], n: int = EXAMPLES_PER_QUERY_TYPE) -> dict[str, list]:
    return {k: sorted([*a.get(k, []), *b.get(k, [])], key=lambda r: r["question_id"])[:n] for k in {**a, **b}}


def merge_questions(parts: Iterable[QuestionPartial]) -> QuestionPartial:
    """Partials of disjoint sets of rows as one: the only place they combine. Every statistic derived from
    the result equals the one of the rows' whole table (in any order)."""
    total = QuestionPartial()
    for p in parts:
        total = QuestionPartial(
            rows=total.rows + p.rows,
            split_scenes=_add_counters(total.split_scenes, p.split_scenes),
            split_queries=_add_counters(total.split_queries, p.split_queries),
            split_keys=_add_sets(total.split_keys, p.split_keys),
            episodes=total.episodes | p.episodes,
            question_ids=total.question_ids | p.question_ids,
            counts=_add_counters(total.counts, p.counts),
            answers=_add_counters(total.answers, p.answers),
            grounded=_add_pair(total.grounded, p.grounded),
            question_words=np.concatenate([total.question_words, p.question_words]),
            answer_words=np.concatenate([total.answer_words, p.answer_words]),
            pairs=total.pairs + p.pairs,
            yes_no_pairs=total.yes_no_pairs + p.yes_no_pairs,
            paraphrased=total.paraphrased or p.paraphrased,
            validated=_add_pair(total.validated, p.validated),
            models=total.models + p.models,
            test_examples=_add_examples(total.test_examples, p.test_examples),
            any_examples=_add_examples(total.any_examples, p.any_examples),
        )
    return total


def distribution_stats(p: QuestionPartial) -> dict[str, Any]:
    c = p.counts
    return {
        "query_type": _counts(c["query_type"]),
        "filter_family": _counts(c["filter_family"]),
        "filter_family_combination": _counts(c["filter_family_combination"]),
        "n_filters": _counts(c["n_filters"]),
        "answer_type": _counts(c["answer_type"]),
        "answers_per_query_type": {q: dict(list(_counts(a).items())[:20]) for q, a in sorted(p.answers.items())},
        "openeqa_category": _counts(c["openeqa_category"]),
        "express_category": _counts(c.get("express_category", {})),
        "family": _counts(c["family"]),
        "backend": _counts(c["backend"]),
        "grounded_share": _share(p.grounded),
        "question_words": _word_lengths(p.question_words),
        "answer_words": _word_lengths(p.answer_words),
    }


def balance_stats(q: pa.Table) -> dict[str, Any]:
    """:func:`balance_stats_from` of a table with ``balance_key``, ``answer_key`` and ``answer_type``."""
    return balance_stats_from(_pairs(q), _pairs(_yes_no(q)))


def balance_stats_from(
    pairs: Mapping[tuple[str, str], int], yes_no: Mapping[tuple[str, str], int] | None = None
) -> dict[str, Any]:
    """Per balance group, from its rows per answer key (``{(balance key, answer key): rows}``): answer
    counts; the blind baseline is the accuracy of always answering the group's majority answer (what a
    model reading only the question can reach). ``yes_no``: the same counts of the yes/no questions."""
    if not pairs:
        return {
            "groups": 0,
            "exactly_balanced_share": 0.0,
            "blind_baseline": 0.0,
            "blind_baseline_yes_no": None,
        }
    groups: dict[str, list[int]] = {}
    for (key, _), n in pairs.items():
        groups.setdefault(key, []).append(n)
    maj, mn, tot, k = (np.array([f(g) for g in groups.values()]) for f in (max, min, sum, len))
    rows, yes_no_rows = int(tot.sum()), sum((yes_no or {}).values())
    yn = balance_stats_from(yes_no or {})["blind_baseline"] if 0 < yes_no_rows < rows else None
    return {
        "groups": len(groups),
        "answers_per_group": _counts(Counter(k.tolist())),
        "exactly_balanced_share": round(float(np.mean((maj == mn) & (k >= 2))), 6),
        "blind_baseline": round(float(maj.sum() / rows), 6),
        # chance counted per record, as the blind baseline is: a record's chance is 1/k of its group (summed
        # exactly, so the order of the groups cannot change the last digit)
        "chance_level": round(math.fsum((tot / k).tolist()) / rows, 6),
        "blind_baseline_yes_no": yn,
    }


def leakage_stats(p: QuestionPartial) -> dict[str, Any]:
    """Scenes and balance keys shared between splits (a balance key in two splits is a leak), and the
    share of each held-out split's questions asked in scenes that train never saw."""
    splits = sorted(p.split_scenes)
    scenes = {s: set(p.split_scenes[s]) for s in splits}
    pairs = [(a, b) for i, a in enumerate(splits) for b in splits[i + 1 :]]
    train_scenes = scenes.get("train", set())
    unseen: dict[str, float] = {}
    for s in splits:
        rows = p.split_scenes[s]
        if s != "train" and rows:
            unseen[s] = _share((sum(n for sc, n in rows.items() if sc not in train_scenes), sum(rows.values())))
    return {
        "scene_overlap": {f"{a}&{b}": len(scenes[a] & scenes[b]) for a, b in pairs},
        "balance_keys_in_several_splits": {f"{a}&{b}": len(p.split_keys[a] & p.split_keys[b]) for a, b in pairs},
        "duplicate_question_ids": int(p.rows - len(p.question_ids)),
        "unseen_scene_share": unseen,
    }


def paraphrase_stats(p: QuestionPartial) -> dict[str, Any]:
    if not p.paraphrased or p.rows == 0:
        return {"validated_share": 0.0, "models": {}}
    return {"validated_share": _share(p.validated), "models": _counts(p.models)}


def example_questions(p: QuestionPartial) -> dict[str, list[dict[str, str]]]:
    """Per query type, the first test questions by question id with their answers (all splits where
    there is no test split): what report.html shows a reader."""
    return dict(sorted((p.test_examples if p.split_scenes.get("test") else p.any_examples).items()))


def question_stats_from(p: QuestionPartial) -> dict[str, Any]:
    """stats.json's ``questions`` section from the (merged) partial of every row."""
    per_scene = sum(p.split_scenes.values(), Counter())
    return {
        "questions": p.rows,
        "per_split": _counts(Counter({s: sum(c.values()) for s, c in p.split_scenes.items()})),
        "per_split_query_type": {s: _counts(p.split_queries[s]) for s in sorted(p.split_queries)},
        "scenes": len(per_scene),
        "episodes_with_questions": len(p.episodes),
        "per_scene": _summary(np.array(list(_counts(per_scene).values()), float)),
        "distributions": distribution_stats(p),
        "balance": balance_stats_from(p.pairs, p.yes_no_pairs),
        "leakage": leakage_stats(p),
        "paraphrase": paraphrase_stats(p),
        "examples": example_questions(p),
    }


def question_stats(q: pa.Table) -> dict[str, Any]:
    """The ``questions`` section of one whole table: its partial, merged alone."""
    return question_stats_from(merge_questions([question_partial(q)]))


def _summary(x: np.ndarray) -> dict[str, float]:
    if x.size == 0:
        return {"n": 0, "mean": 0.0, "min": 0.0, "p50": 0.0, "max": 0.0}
    return {"n": int(x.size), "mean": round(float(x.mean()), 3), "min": float(x.min()),
            "p50": float(np.median(x)), "max": float(x.max())}  # fmt: skip


def _loops(pose: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per episode: does the agent loop (:func:`eqagen.core.looped_poses`: one pose arrived at
    ``LOOP_VISITS`` or more separate times)?"""
    return np.array([looped_poses(pose[a:b]) > 0 for a, b in itertools.pairwise(offsets)], dtype=bool)


@dataclass
class EpisodeParts:
    """What the episode statistics need from some episodes (one shard, say), a few numbers per episode: the
    whole ``steps`` column of a large dataset never has to be in memory at once. :func:`episode_partial`
    makes one from a table, :func:`merge_episodes` is the one place they combine."""

    lengths: list[np.ndarray] = field(default_factory=list)
    loops: list[np.ndarray] = field(default_factory=list)
    actions: int = 0
    failed_actions: int = 0
    task_success: list[bool] = field(default_factory=list)
    family: Counter = field(default_factory=Counter)
    backend: Counter = field(default_factory=Counter)
    scenes: set = field(default_factory=set)


def episode_partial(e: pa.Table) -> EpisodeParts:
    """The partial episode statistics of an episodes table (with :data:`EPISODE_COLUMNS`)."""
    if e.num_rows == 0:
        return EpisodeParts()
    steps = e["steps"].combine_chunks()
    success = steps.field("success")
    lengths = pc.list_value_length(success).to_numpy()
    flat_ok = pc.list_flatten(success).to_numpy(zero_copy_only=False).astype(bool)
    starts = np.concatenate([[0], np.cumsum(lengths)])
    is_action = np.ones_like(flat_ok)
    is_action[starts[:-1]] = False  # step 0 is the initial observation, not an action
    pose = np.asarray(pc.list_flatten(pc.list_flatten(steps.field("pose"))).to_numpy(), float).reshape(-1, 5)
    success = pc.struct_field(e["meta"], "success").to_pylist()  # null where the backend records none
    return EpisodeParts(
        lengths=[lengths],
        loops=[_loops(pose, starts)],
        actions=int(is_action.sum()),
        failed_actions=int((~flat_ok[is_action]).sum()),
        task_success=[bool(s) for s in success if s is not None],
        family=Counter(e["family"].to_pylist()),
        backend=Counter(e["backend"].to_pylist()),
        scenes=set(e["scene_id"].to_pylist()),
    )


def merge_episodes(parts: Iterable[EpisodeParts]) -> EpisodeParts:
    """Partials of disjoint sets of episodes as one, in the order given."""
    total = EpisodeParts()
    for p in parts:
        total = EpisodeParts(
            lengths=total.lengths + p.lengths,
            loops=total.loops + p.loops,
            actions=total.actions + p.actions,
            failed_actions=total.failed_actions + p.failed_actions,
            task_success=total.task_success + p.task_success,
            family=total.family + p.family,
            backend=total.backend + p.backend,
            scenes=total.scenes | p.scenes,
        )
    return total


def episode_stats_from(parts: EpisodeParts) -> dict[str, Any]:
    """stats.json's ``episodes`` section from the (merged) partial of every episode."""
    if not parts.lengths:
        return {"episodes": 0}
    lengths, loops = np.concatenate(parts.lengths), np.concatenate(parts.loops)
    failure = parts.failed_actions / parts.actions if parts.actions else 0.0
    return {
        "episodes": int(lengths.size),
        "per_family": _counts(parts.family),
        "per_backend": _counts(parts.backend),
        "scenes": len(parts.scenes),
        "length": _summary(lengths.astype(float)),
        "action_failure_rate": round(float(failure), 6),
        "loop_share": round(float(loops.mean()), 6),
        "task_success_rate": round(float(np.mean(parts.task_success)), 6) if parts.task_success else None,
    }


def episode_stats(episodes: pa.Table | Iterable[pa.Table]) -> dict[str, Any]:
    """Episode statistics of one table or of a stream of tables (shards, batches): the same numbers."""
    tables = [episodes] if isinstance(episodes, pa.Table) else episodes
    return episode_stats_from(merge_episodes(episode_partial(t) for t in tables if t.num_rows))


def stats_from_tables(
    questions: pa.Table, episodes: pa.Table | Iterable[pa.Table], config: Mapping[str, Any] | None = None
) -> dict[str, Any]:
    """The recomputable part of stats.json: questions as one table, episodes as one or a stream of tables;
    ``config`` (the manifest's) sets the method criteria's targets (defaults where None)."""
    return {
        "questions": question_stats(questions),
        "episodes": episode_stats(episodes),
        "criteria": method_criteria(questions, config),
    }


def build_stats(
    questions: pa.Table,
    episodes: pa.Table | Iterable[pa.Table],
    funnel: dict[str, dict[str, Any]],
    stages: dict[str, Any] | None = None,
    config: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The whole stats.json: ``funnel`` is ``{stage: {"in": n, "out": n, "rejected": {reason: n}}}``
    as the stages counted it; ``stages`` holds each stage's own statistics (balance, split,
    paraphrase tokens and cache hits, timings); ``config`` is the manifest's (the criteria's targets)."""
    return {"funnel": funnel, "stages": stages or {}, "dataset": stats_from_tables(questions, episodes, config)}
