"""Audit statistics of a dataset, computed column-wise from its tables.

The same functions serve the run (``stats.json`` is written from the shards just written, together with
the funnel counters the stages collected) and ``eqagen audit DIR`` (which reads the shards back and
recomputes everything, then checks it against ``stats.json`` and the manifest). They take tables, never
files: the dataset layer (:mod:`eqagen.outputs.dataset`) reads the questions with the columns the
statistics need (:data:`QUESTION_COLUMNS`) and streams the episodes shard by shard (their steps are the
bulk).
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from eqagen.curation.criteria import method_criteria

QUESTION_COLUMNS = (
    "question_id", "episode_id", "scene_id", "family", "backend", "split", "query_type", "answer_type",
    "answer_key", "grounded", "category", "express_category", "balance_key", "predicate_families",
    "n_filters", "question", "answer", "paraphrase", "program", "structured_answer",
)  # fmt: skip
EPISODE_COLUMNS = ("episode_id", "family", "backend", "scene_id", "meta", "steps")


def _counts(counts: dict) -> dict[str, int]:
    """Counts with keys as text, sorted by descending count then key (stable across runs)."""
    return dict(sorted(((str(k), int(v)) for k, v in counts.items()), key=lambda p: (-p[1], p[0])))


def value_counts(array: pa.ChunkedArray | pa.Array) -> dict[str, int]:
    """Counts per value, keys as text, sorted by descending count then key (stable across runs)."""
    vc = pc.value_counts(array)
    return _counts(dict(zip(vc.field("values").to_pylist(), vc.field("counts").to_pylist())))


def word_counts(texts: pa.ChunkedArray | pa.Array) -> np.ndarray:
    """Words per text, as Python's ``str.split()`` counts them."""
    trimmed = pc.utf8_trim_whitespace(texts)
    n = pc.list_value_length(pc.split_pattern_regex(trimmed, r"\s+"))
    n = pc.if_else(pc.equal(pc.utf8_length(trimmed), 0), 0, n)
    return np.asarray(n.to_numpy(zero_copy_only=False), float)


def _word_lengths(texts: pa.ChunkedArray) -> dict[str, float]:
    n = word_counts(texts)
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


def distribution_stats(q: pa.Table) -> dict[str, Any]:
    flat_families = pc.list_flatten(q["predicate_families"])
    answers_per_query = {}
    for query in sorted(set(q["query_type"].to_pylist())):
        sub = q.filter(pc.equal(q["query_type"], query))
        answers_per_query[query] = dict(list(value_counts(sub["answer_key"]).items())[:20])
    return {
        "query_type": value_counts(q["query_type"]),
        "filter_family": value_counts(flat_families),
        "filter_family_combination": value_counts(_family_signature(q["predicate_families"])),
        "n_filters": value_counts(q["n_filters"]),
        "answer_type": value_counts(q["answer_type"]),
        "answers_per_query_type": answers_per_query,
        "openeqa_category": value_counts(q["category"]),
        "express_category": value_counts(q["express_category"]) if "express_category" in q.column_names else {},
        "family": value_counts(q["family"]),
        "backend": value_counts(q["backend"]),
        "grounded_share": round(float(pc.mean(pc.cast(q["grounded"], pa.float64())).as_py() or 0.0), 6),
        "question_words": _word_lengths(q["question"]),
        "answer_words": _word_lengths(q["answer"]),
    }


def balance_stats(q: pa.Table) -> dict[str, Any]:
    """Per balance group: answer counts; the blind baseline is the accuracy of always answering the
    group's majority answer (what a model reading only the question can reach)."""
    if q.num_rows == 0:
        return {
            "groups": 0,
            "exactly_balanced_share": 0.0,
            "blind_baseline": 0.0,
            "blind_baseline_yes_no": None,
        }
    grouped = q.group_by(["balance_key", "answer_key"]).aggregate([([], "count_all")])
    per_group = grouped.group_by("balance_key").aggregate(
        [("count_all", "max"), ("count_all", "min"), ("count_all", "sum"), ("answer_key", "count")]
    )
    maj, mn, tot = (per_group[c].to_numpy() for c in ("count_all_max", "count_all_min", "count_all_sum"))
    k = per_group["answer_key_count"].to_numpy()
    yes_no = q.filter(pc.equal(q["answer_type"], "yes/no"))
    yn = balance_stats(yes_no)["blind_baseline"] if 0 < yes_no.num_rows < q.num_rows else None
    return {
        "groups": int(per_group.num_rows),
        "answers_per_group": value_counts(pa.array(k)),
        "exactly_balanced_share": round(float(np.mean((maj == mn) & (k >= 2))), 6),
        "blind_baseline": round(float(maj.sum() / tot.sum()), 6),
        # chance counted per record, as the blind baseline is: a record's chance is 1/k of its group
        "chance_level": round(float(np.sum(tot / k) / tot.sum()), 6),
        "blind_baseline_yes_no": yn,
    }


def leakage_stats(q: pa.Table) -> dict[str, Any]:
    """Scenes and balance keys shared between splits (a balance key in two splits is a leak), and the
    share of each held-out split's questions asked in scenes that train never saw."""
    split_col = q["split"].to_pylist()
    scene_col, key_col = q["scene_id"].to_pylist(), q["balance_key"].to_pylist()
    splits = sorted(set(split_col))
    scenes = {s: {sc for sp, sc in zip(split_col, scene_col) if sp == s} for s in splits}
    keys = {s: {k for sp, k in zip(split_col, key_col) if sp == s} for s in splits}
    pairs = [(a, b) for i, a in enumerate(splits) for b in splits[i + 1 :]]
    train_scenes = scenes.get("train", set())
    unseen: dict[str, float] = {}
    for s in splits:
        held_out = [sc not in train_scenes for sp, sc in zip(split_col, scene_col) if sp == s]
        if s != "train" and held_out:
            unseen[s] = round(float(np.mean(held_out)), 6)
    return {
        "scene_overlap": {f"{a}&{b}": len(scenes[a] & scenes[b]) for a, b in pairs},
        "balance_keys_in_several_splits": {f"{a}&{b}": len(keys[a] & keys[b]) for a, b in pairs},
        "duplicate_question_ids": int(q.num_rows - len(set(q["question_id"].to_pylist()))),
        "unseen_scene_share": unseen,
    }


def paraphrase_stats(q: pa.Table) -> dict[str, Any]:
    if "paraphrase" not in q.column_names or q.num_rows == 0:
        return {"validated_share": 0.0, "models": {}}
    para = q["paraphrase"].combine_chunks()
    validated = pc.cast(para.field("validated"), pa.float64())
    return {
        "validated_share": round(float(pc.mean(validated).as_py() or 0.0), 6),
        "models": value_counts(para.field("model")),
    }


EXAMPLES_PER_QUERY_TYPE = 5


def example_questions(q: pa.Table, n: int = EXAMPLES_PER_QUERY_TYPE) -> dict[str, list[dict[str, str]]]:
    """Per query type, the first ``n`` test questions by question id with their answers (all splits where
    there is no test split): what report.html shows a reader."""
    test = q.filter(pc.equal(q["split"], "test"))
    pool = test if test.num_rows else q
    rows = pool.select(["question_id", "query_type", "question", "answer"]).sort_by("question_id").to_pylist()
    out: dict[str, list[dict[str, str]]] = {}
    for row in rows:
        chosen = out.setdefault(row.pop("query_type"), [])
        if len(chosen) < n:
            chosen.append(row)
    return dict(sorted(out.items()))


def question_stats(q: pa.Table) -> dict[str, Any]:
    return {
        "questions": q.num_rows,
        "per_split": value_counts(q["split"]),
        "per_split_query_type": {
            s: value_counts(q.filter(pc.equal(q["split"], s))["query_type"])
            for s in sorted(set(q["split"].to_pylist()))
        },
        "scenes": len(set(q["scene_id"].to_pylist())),
        "episodes_with_questions": len(set(q["episode_id"].to_pylist())),
        "per_scene": _summary(np.array(list(value_counts(q["scene_id"]).values()), float)),
        "distributions": distribution_stats(q),
        "balance": balance_stats(q),
        "leakage": leakage_stats(q),
        "paraphrase": paraphrase_stats(q),
        "examples": example_questions(q),
    }


def _summary(x: np.ndarray) -> dict[str, float]:
    if x.size == 0:
        return {"n": 0, "mean": 0.0, "min": 0.0, "p50": 0.0, "max": 0.0}
    return {"n": int(x.size), "mean": round(float(x.mean()), 3), "min": float(x.min()),
            "p50": float(np.median(x)), "max": float(x.max())}  # fmt: skip


def _loops(pose: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Per episode: does the agent come back to a pose (x, z to the cm, yaw to the degree) it had left?"""
    key = np.round(pose[:, [0, 2, 3]] * [100, 100, 1]).astype(np.int64)
    out = np.zeros(len(offsets) - 1, bool)
    for i in range(len(offsets) - 1):
        k = key[offsets[i] : offsets[i + 1]]
        if len(k) < 3:
            continue
        moved = np.any(k[1:] != k[:-1], axis=1)
        runs = np.concatenate([k[:1], k[1:][moved]])  # consecutive duplicates folded
        out[i] = len(np.unique(runs, axis=0)) < len(runs)
    return out


@dataclass
class EpisodeParts:
    """What the episode statistics need from a run of episodes, a few numbers per episode: the whole
    ``steps`` column of a large dataset never has to be in memory at once."""

    lengths: list[np.ndarray] = field(default_factory=list)
    loops: list[np.ndarray] = field(default_factory=list)
    actions: int = 0
    failed_actions: int = 0
    task_success: list[bool] = field(default_factory=list)
    family: Counter = field(default_factory=Counter)
    backend: Counter = field(default_factory=Counter)
    scenes: set = field(default_factory=set)

    def add(self, e: pa.Table) -> None:
        if e.num_rows == 0:
            return
        steps = e["steps"].combine_chunks()
        success = steps.field("success")
        lengths = pc.list_value_length(success).to_numpy()
        flat_ok = pc.list_flatten(success).to_numpy(zero_copy_only=False).astype(bool)
        starts = np.concatenate([[0], np.cumsum(lengths)])
        is_action = np.ones_like(flat_ok)
        is_action[starts[:-1]] = False  # step 0 is the initial observation, not an action
        pose = np.asarray(pc.list_flatten(pc.list_flatten(steps.field("pose"))).to_numpy(), float).reshape(-1, 5)
        self.lengths.append(lengths)
        self.loops.append(_loops(pose, starts))
        self.actions += int(is_action.sum())
        self.failed_actions += int((~flat_ok[is_action]).sum())
        metas = [json.loads(m) for m in e["meta"].to_pylist()]
        self.task_success += [bool(m["success"]) for m in metas if "success" in m]
        self.family.update(e["family"].to_pylist())
        self.backend.update(e["backend"].to_pylist())
        self.scenes.update(e["scene_id"].to_pylist())


def episode_stats(episodes: pa.Table | Iterable[pa.Table]) -> dict[str, Any]:
    """Episode statistics of one table or of a stream of tables (shards, batches): the same numbers."""
    parts = EpisodeParts()
    for table in [episodes] if isinstance(episodes, pa.Table) else episodes:
        parts.add(table)
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
