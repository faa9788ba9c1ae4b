"""The ask stage: every question proposed in one episode is also asked in other scenes of its partition.

PQB-EQA built the environments of each question: the same question, asked where it makes sense, answered
differently. After the batched stages, each distinct question (an ungrounded ``balance_key``: its text
depends on the program alone, never on the scene) is asked on episodes of up to ``ask_scenes`` other
scenes of its partition (seen or held out: :func:`eqagen.curation.partition.held_out_scenes`), one episode
per scene, drawn in a seeded order among those that have every type and event it names
(:func:`eqagen.predicates.asking.required_names`; the rest are skipped without evaluating anything). A
question is never asked in a scene where it was proposed. Each ask runs the same exact check as a
proposal, so an asked record is as valid as a proposed one; the cost grows with the asks, not with
questions x episodes.

Plan (here, over the batches' small ``names`` and key columns) -> per target batch: read its episodes,
ask, checkpoint ``asked.parquet`` (resumable like the batches) -> balancing reads the proposed and the
asked candidates together.
"""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from eqagen.core import Program, derive_rng, stable_hash
from eqagen.flows.checkpoints import MARKER, BatchStore
from eqagen.outputs.atomic import write_text_atomic
from eqagen.outputs.manifest import write_json_atomic
from eqagen.outputs.readers import episode_from_row, program_from_row
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA, questions_table
from eqagen.outputs.shards import write_parquet_atomic

NAMES_FILE = "names.parquet"
ASKED_FILE = "asked.parquet"
NAMES_SCHEMA = pa.schema([("episode_id", pa.string()), ("scene_id", pa.string()), ("names", pa.list_(pa.string()))])


def names_table(episode_ids: list[str], scene_ids: list[str], names: list[set[str]]) -> pa.Table:
    """Each episode's names (:func:`eqagen.predicates.asking.episode_names`), sorted: the ask plan's vocabulary."""
    return pa.table(
        {"episode_id": episode_ids, "scene_id": scene_ids, "names": [sorted(n) for n in names]}, schema=NAMES_SCHEMA
    )


@dataclass(frozen=True)
class Ask:
    """One question to ask on one episode: the program as proposed (its moment filters name events by the
    proposing episode's indices; the target finds its own) and the target episode's id."""

    program: Program
    episode_id: str


def ask_dir(store: BatchStore, plan_key: str) -> Path:
    """Where the asked candidates of one plan live: beside the batches, named by what the plan depends on
    (the batches, the partition, the ask settings), so a rerun with other settings never reuses them."""
    return store.root / f"asked-{plan_key}"


def plan_key(seed: int, held_out: set[str], ask_scenes: int) -> str:
    return stable_hash(seed, sorted(held_out), ask_scenes, digest_size=8)


@dataclass
class Vocabulary:
    """Every episode of the run (in batch order) with its batch, scene, partition and names."""

    episode_ids: list[str]
    batch: np.ndarray  # int: index into the run's batch names
    scene: np.ndarray  # int code
    held_out: np.ndarray  # bool: the episode's scene is held out
    names: list[frozenset[str]]  # per episode: its names
    having: dict[str, np.ndarray]  # name -> bool [episodes]: which episodes have it
    held_out_scenes: set[str]

    def episodes_with(self, names: frozenset[str]) -> np.ndarray:
        mask = np.ones(len(self.episode_ids), dtype=bool)
        for name in names:
            has = self.having.get(name)
            if has is None:
                return np.zeros(len(self.episode_ids), dtype=bool)
            mask &= has
        return mask


def read_vocabulary(store: BatchStore, batch_names: list[str], held_out: Callable[[list[str]], set[str]]) -> Vocabulary:
    """The vocabulary of every batch's episodes; ``held_out`` chooses the held-out scenes among the scene ids."""
    tables = list(store.iter_tables(batch_names, NAMES_FILE.removesuffix(".parquet"), NAMES_SCHEMA))
    names = pa.concat_tables(tables) if tables else NAMES_SCHEMA.empty_table()
    batch = np.concatenate([np.full(t.num_rows, i, np.int32) for i, t in enumerate(tables)] or [np.zeros(0, np.int32)])
    scenes = names["scene_id"].to_pylist()
    scene_values = sorted(set(scenes))
    code = {s: i for i, s in enumerate(scene_values)}
    n = names.num_rows
    per_episode = [frozenset(ns) for ns in names["names"].to_pylist()]
    having: dict[str, np.ndarray] = {}
    for i, episode_names in enumerate(per_episode):
        for name in episode_names:
            having.setdefault(name, np.zeros(n, dtype=bool))[i] = True
    scene = np.array([code[s] for s in scenes], dtype=np.int64)
    held_scenes = held_out(scene_values)
    held = np.array([s in held_scenes for s in scenes], dtype=bool)
    return Vocabulary(names["episode_id"].to_pylist(), batch, scene, held, per_episode, having, held_scenes)


@dataclass(frozen=True)
class Proposal:
    """A distinct question as first proposed (in batch order): its program, its episode, and every scene
    that proposed it (where it is never asked again)."""

    key: str
    program: Program
    episode: int  # index into Vocabulary.episode_ids
    scenes: frozenset[int]


def read_proposals(store: BatchStore, batch_names: list[str], vocab: Vocabulary) -> list[Proposal]:
    """The distinct ungrounded questions proposed by the batches, in the order first proposed."""
    position = {e: i for i, e in enumerate(vocab.episode_ids)}
    columns = ["balance_key", "episode_id", "grounded", "program"]
    first: dict[str, tuple[Program, int]] = {}
    scenes: dict[str, set[int]] = {}
    for table in store.iter_tables(batch_names, "questions", QUESTIONS_SCHEMA, columns):
        table = table.filter(pa.compute.invert(table["grounded"]))
        keys, episodes = table["balance_key"].to_pylist(), table["episode_id"].to_pylist()
        programs = table["program"].to_pylist()
        for key, episode, program in zip(keys, episodes, programs):
            where = position[episode]
            scenes.setdefault(key, set()).add(int(vocab.scene[where]))
            if key not in first:
                first[key] = (program_from_row(program), where)
    return [Proposal(k, p, e, frozenset(scenes[k])) for k, (p, e) in first.items()]


def choose_targets(
    proposal: Proposal, need: frozenset[str], vocab: Vocabulary, ask_scenes: int, seed: int
) -> list[int]:
    """Up to ``ask_scenes`` episodes to ask a proposal on: one per scene, in the proposal's partition, in
    scenes that did not propose it, having every name it needs; drawn in a seeded order."""
    ok = vocab.episodes_with(need) & (vocab.held_out == vocab.held_out[proposal.episode])
    ok &= ~np.isin(vocab.scene, list(proposal.scenes))
    candidates = np.flatnonzero(ok)
    if candidates.size == 0:
        return []
    order = derive_rng(seed, "ask", proposal.key).permutation(candidates)
    _, first = np.unique(vocab.scene[order], return_index=True)  # one episode per scene: its first in the order
    chosen = order[np.sort(first)][:ask_scenes]
    return sorted(chosen.tolist())


def plan_asks(proposals: list[Proposal], vocab: Vocabulary, ask_scenes: int, seed: int) -> dict[int, list[Ask]]:
    """The asks of every proposal, grouped by the batch of their target episode (asks in proposal order)."""
    from eqagen.predicates.asking import required_names  # the question engine, imported where it is used

    by_batch: dict[int, list[Ask]] = {}
    for proposal in proposals:
        need = required_names(proposal.program, set(vocab.names[proposal.episode]))
        for target in choose_targets(proposal, need, vocab, ask_scenes, seed):
            by_batch.setdefault(int(vocab.batch[target]), []).append(Ask(proposal.program, vocab.episode_ids[target]))
    return by_batch


def ask_batch(store_root: Path, out_dir: Path, batch_name: str, asks: list[Ask], questions: Any, seed: int) -> dict:
    """Ask one batch's share of the plan on its episodes and checkpoint the records; returns the counts."""
    from eqagen.flows.stages import question_config
    from eqagen.predicates.context import context_for
    from eqagen.templates.records import asked_records

    start = time.perf_counter()
    qconfig = question_config(questions)
    table = pq.read_table(Path(store_root) / batch_name / "episodes.parquet", schema=EPISODES_SCHEMA)
    wanted = {a.episode_id for a in asks}
    episodes = {r["episode_id"]: r for r in table.to_pylist() if r["episode_id"] in wanted}
    contexts = {}
    records, rejected = [], Counter()
    for a in asks:
        if a.episode_id not in contexts:
            contexts[a.episode_id] = context_for(episode_from_row(episodes[a.episode_id]))
        rng = derive_rng(seed, "ask", a.episode_id, a.program.signature())
        out = asked_records(contexts[a.episode_id], a.program, qconfig, rng)
        if isinstance(out, str):
            rejected[out] += 1
        else:
            records.extend(out)
    summary = {
        "batch": batch_name,
        "asks": len(asks),
        "accepted": len(asks) - sum(rejected.values()),
        "questions": len(records),
        "rejections": dict(sorted(rejected.items())),
        "seconds": time.perf_counter() - start,
    }
    d = Path(out_dir) / batch_name
    d.mkdir(parents=True, exist_ok=True)
    write_parquet_atomic(questions_table(records), d / ASKED_FILE)
    write_json_atomic(summary, d / "stats.json")
    write_text_atomic(d / MARKER, "ok\n")
    return summary


def read_summary(out_dir: Path, batch_name: str) -> dict | None:
    """A finished ask's counts, or None where it has not finished (no marker)."""
    d = Path(out_dir) / batch_name
    return json.loads((d / "stats.json").read_text()) if (d / MARKER).exists() else None


@dataclass
class AskResult:
    """The ask stage's outcome: where its candidates are, the held-out scenes, and its counts."""

    directory: Path
    held_out_scenes: set[str]
    stats: dict[str, Any]


def run_ask_stage(
    store: BatchStore,
    batch_names: list[str],
    questions: Any,
    seed: int,
    ask_scenes: int,
    held_out: Callable[[list[str]], set[str]],
    executor: Any = None,
) -> AskResult:
    """Plan the asks and run each target batch's share (on ``executor``'s workers when given), skipping
    batches a previous run finished; returns where the asked candidates are and the stage's counts."""
    start = time.perf_counter()
    vocab = read_vocabulary(store, batch_names, held_out)
    proposals = read_proposals(store, batch_names, vocab)
    plan = plan_asks(proposals, vocab, ask_scenes, seed) if ask_scenes > 0 else {}
    directory = ask_dir(store, plan_key(seed, vocab.held_out_scenes, ask_scenes))
    plan_s = time.perf_counter() - start
    todo = [i for i in range(len(batch_names)) if read_summary(directory, batch_names[i]) is None]
    args = [(store.root, directory, batch_names[i], plan.get(i, []), questions, seed) for i in todo]
    if executor is not None and len(args) > 1:
        list(executor.map(_ask_batch_args, args))
    else:
        for a in args:
            ask_batch(*a)
    summaries = [read_summary(directory, n) for n in batch_names]
    rejected: Counter = Counter()
    for s in summaries:
        rejected.update(s["rejections"])
    stats = {
        "questions_proposed": len(proposals),
        "held_out_scenes": len(vocab.held_out_scenes),
        "asks": sum(s["asks"] for s in summaries),
        "accepted": sum(s["accepted"] for s in summaries),
        "records": sum(s["questions"] for s in summaries),
        "rejected": dict(sorted(rejected.items())),
        "seconds": {"plan": round(plan_s, 3), "asks_cpu": round(sum(s["seconds"] for s in summaries), 3)},
    }
    return AskResult(directory, vocab.held_out_scenes, stats)


def _ask_batch_args(args: tuple) -> dict:
    return ask_batch(*args)
