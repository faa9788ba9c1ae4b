"""The ask stage: every question proposed in one episode is also asked in other scenes of its partition.

PQB-EQA built the environments of each question: the same question, asked where it makes sense, answered
differently. After the batched stages, each distinct question (an ungrounded ``balance_key``: its text
depends on the program alone, never on the scene) is asked on episodes of other scenes of its partition
(seen or held out: :func:`eqagen.curation.partition.held_out_scenes`), one episode per scene, in a seeded
order among those that have every type, event and satisfiable filter it names
(:func:`eqagen.predicates.asking.required_names`; the rest are skipped without evaluating anything). A
question is never asked in a scene where it was proposed. Each ask runs the same exact check as a
proposal, so an asked record is as valid as a proposed one; the cost grows with the asks, not with
questions x episodes.

Round 0 asks every question on the first ``scenes`` targets of its order; each later round asks the
questions still wanted (of the kinds the balanced pool is short of) on the next ``scenes`` targets.
Plan (here, over the batches' small ``names`` and key columns) -> per round, per target batch: read its
episodes, ask, checkpoint ``asked.parquet`` (resumable like the batches) -> balancing reads the proposed
and every round's asked candidates together.
"""

from __future__ import annotations

import contextlib
import gc
import time
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import Executor, as_completed
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from eqagen.core import Program, derive_rng, stable_hash
from eqagen.core.stages import StageReport
from eqagen.flows.checkpoints import BatchStore
from eqagen.flows.timeline import SectionListener
from eqagen.outputs.readers import episode_from_row
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA, episode_rows, questions_table
from eqagen.outputs.units import barrier, map_units, submit
from eqagen.predicates.config import QuestionConfig

NAMES = "names"  # the batches' table of each episode's names
ASKED = "asked"  # a round's table of asked candidates, per target batch
NAMES_SCHEMA = pa.schema([("episode_id", pa.string()), ("scene_id", pa.string()), ("names", pa.list_(pa.string()))])


def names_table(episode_ids: list[str], scene_ids: list[str], names: list[set[str]]) -> pa.Table:
    """Each episode's names (:func:`eqagen.predicates.asking.episode_names`), sorted: the ask plan's vocabulary."""
    return pa.table(
        {"episode_id": episode_ids, "scene_id": scene_ids, "names": [sorted(n) for n in names]}, schema=NAMES_SCHEMA
    )


class Ask(NamedTuple):
    """One question to ask on one episode: the program as proposed, as its row stores it (its moment filters
    name events by the proposing episode's indices; the target finds its own), and the target episode's id.
    Small and plain: a round sends tens of thousands to its units, and a named tuple of a dict is made and
    pickled faster than a frozen dataclass of the program's objects (about half the time for a 10,000-episode
    round's asks; the unit rebuilds the program)."""

    spec: dict[str, Any]  # Program.to_dict's form
    episode_id: str


def plan_key(seed: int, held_out: set[str], ask_scenes: int) -> str:
    """What a plan's targets depend on beyond the batches: the seed, the held-out scenes, the scenes a round."""
    return stable_hash(seed, sorted(held_out), ask_scenes, digest_size=8)


def round_name(plan: str, index: int, asked: list[str]) -> str:
    """A round's folder, beside the batches: named by its plan, its index and the questions it asks (which
    the balancing settings decide from the rounds before), so a rerun reuses a round only where it would
    ask the very same questions on the very same targets."""
    return f"asked-{plan}-round{index}-{stable_hash(asked, digest_size=8)}"


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


# The columns of a batch's questions the plan reads, and how many batches one reading unit takes.
PROPOSAL_COLUMNS = ["balance_key", "episode_id", "grounded", "program"]
BATCHES_PER_READ = 8


def read_batches_plan_tables(directories: list[Path]) -> list[tuple[pa.Table, pa.Table]]:
    """A few batches' names tables and proposals' columns (a unit)."""
    return [
        (
            pq.read_table(d / f"{NAMES}.parquet", schema=NAMES_SCHEMA),
            pq.read_table(d / "questions.parquet", schema=QUESTIONS_SCHEMA, columns=PROPOSAL_COLUMNS),
        )
        for d in directories
    ]


@dataclass(frozen=True)
class Proposal:
    """A distinct question as first proposed (in batch order): its program, its episode, every scene that
    proposed it (where it is never asked again), and the names a target must have
    (:func:`eqagen.predicates.asking.required_names`, against its episode's names)."""

    key: str
    program: Program
    spec: dict[str, Any]  # the program as its row stores it (what an ask sends)
    episode: int  # index into Vocabulary.episode_ids
    scenes: frozenset[int]
    need: frozenset[str]


class PlanInputs:
    """What the ask plan reads of the batches, folded in batch by batch in batch order (:meth:`add`): every
    episode's batch, scene and names, and each distinct ungrounded question as first proposed (only its
    first row is turned into a program), with the scenes that proposed it.

    The run's driver folds each batch in as soon as it and every batch before it are checkpointed, while
    later batches still run, so the plan is all but ready when the last batch is; :meth:`complete` reads
    whatever batches were not folded in (all of them for a finish on its own)."""

    def __init__(self) -> None:
        self.batches = 0  # how many batches, from the first, are folded in
        self.episode_ids: list[str] = []
        self.batch: list[int] = []
        self.scene_ids: list[str] = []
        self.names: list[frozenset[str]] = []
        self.having: dict[str, list[int]] = {}  # name -> the episodes that have it
        self.position: dict[str, int] = {}  # episode id -> its index
        self.first: dict[str, Proposal] = {}  # balance key -> its proposal (its scenes: see proposals())
        self.proposed_in: dict[str, set[str]] = {}  # balance key -> the scene ids that proposed it

    def add(self, names: pa.Table, questions: pa.Table) -> None:
        """Fold in the next batch: its names table and its proposals' columns (:data:`PROPOSAL_COLUMNS`)."""
        from eqagen.predicates.asking import required_names  # the question engine, where used

        for episode, scene, episode_names in zip(*(names[c].to_pylist() for c in ("episode_id", "scene_id", "names"))):
            index = len(self.episode_ids)
            self.position[episode] = index
            self.episode_ids.append(episode)
            self.batch.append(self.batches)
            self.scene_ids.append(scene)
            self.names.append(frozenset(episode_names))
            for name in episode_names:
                self.having.setdefault(name, []).append(index)
        keys, episodes, grounded = (questions[c].to_pylist() for c in ("balance_key", "episode_id", "grounded"))
        new: dict[str, int] = {}  # the questions this batch proposes first -> their first row
        for row, (key, episode) in enumerate(zip(keys, episodes)):
            if grounded[row]:
                continue
            self.proposed_in.setdefault(key, set()).add(self.scene_ids[self.position[episode]])
            if key not in self.first and key not in new:
                new[key] = row
        programs = questions["program"].take(pa.array(list(new.values()), pa.int64())).to_pylist()
        for (key, row), spec in zip(new.items(), programs):
            where, program = self.position[episodes[row]], Program.from_dict(spec)
            need = required_names(program, set(self.names[where]))
            self.first[key] = Proposal(key, program, spec, where, frozenset(), need)
        self.batches += 1

    def complete(self, store: BatchStore, batch_names: list[str], executor: Executor | None = None) -> PlanInputs:
        """Fold in the batches not folded in yet, read by units of :data:`BATCHES_PER_READ` batches (on
        ``executor`` when given)."""
        paths = [store.path(n) for n in batch_names[self.batches :]]
        groups = [paths[i : i + BATCHES_PER_READ] for i in range(0, len(paths), BATCHES_PER_READ)]
        for group in map_units(executor, read_batches_plan_tables, groups):
            for names, questions in group:
                self.add(names, questions)
        return self

    def vocabulary(self, held_out: Callable[[list[str]], set[str]]) -> Vocabulary:
        """The vocabulary of the episodes folded in; ``held_out`` chooses the held-out scenes among the scene ids."""
        n = len(self.episode_ids)
        scene_values = sorted(set(self.scene_ids))
        code = {s: i for i, s in enumerate(scene_values)}
        having = {}
        for name, rows in self.having.items():
            having[name] = np.zeros(n, dtype=bool)
            having[name][rows] = True
        held_scenes = held_out(scene_values)
        return Vocabulary(
            list(self.episode_ids),
            np.array(self.batch, dtype=np.int32),
            np.array([code[s] for s in self.scene_ids], dtype=np.int64),
            np.array([s in held_scenes for s in self.scene_ids], dtype=bool),
            list(self.names),
            having,
            held_scenes,
        )

    def proposals(self, vocab: Vocabulary) -> list[Proposal]:
        """The distinct ungrounded questions in the order first proposed, each with the scenes (``vocab``'s
        codes) that proposed it."""
        code = {s: int(c) for s, c in zip(self.scene_ids, vocab.scene)}
        return [
            Proposal(p.key, p.program, p.spec, p.episode, frozenset(code[s] for s in self.proposed_in[k]), p.need)
            for k, p in self.first.items()
        ]


def target_order(proposal: Proposal, vocab: Vocabulary, rng: np.random.Generator) -> np.ndarray:
    """The episodes a proposal may be asked on, one per scene, in a random order: in its partition, in scenes
    that did not propose it, having every name it needs. An existence question alternates between episodes
    likely to answer it ``yes`` (:func:`eqagen.predicates.asking.presence_name`) and the others, so that its
    asks find both answers (asked at random, about one house in twenty answered ``yes``). Round ``r`` asks
    the ``r``-th slice of the order."""
    from eqagen.predicates.asking import presence_name  # the question engine, where used

    ok = vocab.episodes_with(proposal.need) & (vocab.held_out == vocab.held_out[proposal.episode])
    proposed_here = np.zeros(int(vocab.scene.max()) + 1, dtype=bool)
    proposed_here[list(proposal.scenes)] = True
    candidates = np.flatnonzero(ok & ~proposed_here[vocab.scene])
    order = candidates[first_per_scene(vocab.scene[candidates], rng.random(candidates.size))]
    presence = presence_name(proposal.program)
    return order if presence is None else alternate(order, vocab.episodes_with(frozenset({presence}))[order])


def first_per_scene(scene: np.ndarray, draw: np.ndarray) -> np.ndarray:
    """The positions of a random order's first element of each scene, in that order: the elements (their
    ``scene`` codes) ordered by ``draw`` (a tie goes to the earlier position), then each scene's first kept.
    Found without sorting every element (they are many, the scenes few): each scene's least draw, then the
    scenes' winners sorted."""
    least = np.full(int(scene.max(initial=-1)) + 1, np.inf)
    np.minimum.at(least, scene, draw)
    at_least = np.flatnonzero(draw == least[scene])
    _, first = np.unique(scene[at_least], return_index=True)  # within a scene, a tie goes to the earlier
    winners = np.sort(at_least[first])  # by position, so that a tie between scenes goes to the earlier too
    return winners[np.argsort(draw[winners], kind="stable")]


def alternate(order: np.ndarray, side: np.ndarray) -> np.ndarray:
    """``order`` rearranged to take its elements on each side of ``side`` (bool, per element) in turn, each
    side in its own order, starting with the ``True`` side; the longer side's rest at the end."""
    yes, no = order[side], order[~side]
    n = min(yes.size, no.size)
    paired = np.column_stack([yes[:n], no[:n]]).reshape(-1)
    return np.concatenate([paired, yes[n:], no[n:]])


def target_orders(proposals: list[Proposal], vocab: Vocabulary, seed: int) -> list[np.ndarray]:
    """Every proposal's target order, drawn with the plan's one generator in proposal order."""
    rng = derive_rng(seed, "ask", "plan")
    return [target_order(p, vocab, rng) for p in proposals]


def plan_round(
    proposals: list[Proposal], orders: list[np.ndarray], wanted: list[bool], vocab: Vocabulary, start: int, count: int
) -> dict[int, list[Ask]]:
    """The asks of one round (each wanted proposal on the targets ``start:start+count`` of its order), grouped
    by the batch of their target episode, in proposal order."""
    by_batch: dict[int, list[Ask]] = {}
    for proposal, order, want in zip(proposals, orders, wanted):
        if not want:
            continue
        for target in sorted(order[start : start + count].tolist()):
            by_batch.setdefault(int(vocab.batch[target]), []).append(Ask(proposal.spec, vocab.episode_ids[target]))
    return by_batch


def ask_batch(
    store_root: Path, round_dir: Path, batch_name: str, asks: list[Ask], questions: QuestionConfig, seed: int
) -> dict:
    """Ask one batch's share of the plan on its episodes and checkpoint the records; returns the counts."""
    from eqagen.predicates.asking import accept, ask
    from eqagen.predicates.context import context_for
    from eqagen.predicates.registry import EpisodeSelections
    from eqagen.templates.records import make_records

    start = time.perf_counter()
    # one thread: the unit has its worker's core, the other workers the others (3 ms less of 14 per batch here)
    table = pq.read_table(Path(store_root) / batch_name / "episodes.parquet", schema=EPISODES_SCHEMA, use_threads=False)
    wanted = {a.episode_id for a in asks}
    episodes = {r["episode_id"]: r for r in episode_rows(table) if r["episode_id"] in wanted}
    contexts = {}  # per episode: its context and the selections its asks have needed so far
    records, rejected = [], Counter()
    spec, program = None, None
    for a in asks:
        if a.episode_id not in contexts:
            ctx = context_for(episode_from_row(episodes[a.episode_id]))
            contexts[a.episode_id] = (ctx, EpisodeSelections(ctx))
        ctx, select = contexts[a.episode_id]
        if a.spec != spec:  # a proposal's asks come one after another (``plan_round``): read its program once
            spec, program = a.spec, Program.from_dict(a.spec)
        verdict = ask(ctx, program, questions, select)
        if isinstance(verdict, str):
            rejected[verdict] += 1
            continue
        here, answered = verdict

        def make_rng(a: Ask = a, program: Program = program) -> np.random.Generator:
            return derive_rng(seed, "ask", a.episode_id, program.signature())

        records.extend(make_records(ctx, accept(ctx, here, answered, make_rng, select)))
    summary = {
        "batch": batch_name,
        "asks": len(asks),
        "accepted": len(asks) - sum(rejected.values()),
        "questions": len(records),
        "rejections": dict(sorted(rejected.items())),
        "seconds": time.perf_counter() - start,
    }
    BatchStore(round_dir).write(batch_name, {ASKED: questions_table(records)}, summary)
    return summary


@dataclass(frozen=True)
class AskSettings:
    """How the ask stage asks: targets per round, and rounds at most."""

    scenes: int  # scenes per round
    rounds: int


@dataclass
class AskResult:
    """The ask stage's outcome: the folders of its rounds' candidates, the held-out scenes, and its counts."""

    directories: list[Path]
    held_out_scenes: set[str]
    report: StageReport  # asks in, records out, rejections by reason


# Given the candidate files so far and the held-out scenes, which programs are still wanted: asked again in
# the next round.
Wanted = Callable[[list[Path], set[str]], Callable[[Program], bool]]


@contextlib.contextmanager
def heap_frozen() -> Iterator[None]:
    """For the block, the objects alive now are left out of the cyclic garbage collector's walks
    (``gc.freeze``): at 10,000 episodes the plan's proposals, programs and vocabulary made a full collection
    0.25 s of the run's process (measured on the plan alone), and in the run the first round's planning and
    submission took 0.84 s with the heap frozen against 1.18 s before. What becomes garbage meanwhile is
    still freed by its reference count; only cycles among the frozen wait for the block's end."""
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def run_ask_stage(
    store: BatchStore,
    batch_names: list[str],
    questions: QuestionConfig,
    seed: int,
    ask: AskSettings,
    held_out: Callable[[list[str]], set[str]],
    wanted: Wanted,
    executor: Executor | None = None,
    inputs: PlanInputs | None = None,
    on_written: Callable[[Path], None] | None = None,
    alongside: Callable[[], None] | None = None,
    on_round: SectionListener | None = None,
) -> AskResult:
    """Plan the asks and run them round by round: round 0 asks every proposal in ``ask.scenes`` scenes,
    each later round asks the proposals that ``wanted`` still wants (given the candidates so far) in the
    next ``ask.scenes`` scenes of their order. Each target batch's share of a round is one unit (on
    ``executor``'s workers when given), skipped where a previous run finished it. ``inputs``: the plan's
    inputs as folded in so far (the rest is read here); ``on_written`` is told each candidate file a unit
    writes, as soon as it is written (the run starts reading its keys while the round goes on);
    ``alongside`` starts work that needs only the batches: with the first round, before its asks (so that it
    runs among them, and the timeline's predictions schedule it there), or once planned if no round runs;
    ``on_round`` is told each round as it starts (``"ask round N"``, None, its proposals and asks) and ends
    (its seconds and counts), for the run's progress display."""
    start = time.perf_counter()
    inputs = (inputs or PlanInputs()).complete(store, batch_names, executor)
    vocab = inputs.vocabulary(held_out)
    proposals = inputs.proposals(vocab) if ask.scenes > 0 else []
    del inputs
    orders = target_orders(proposals, vocab, seed)
    plan_s = time.perf_counter() - start
    key = plan_key(seed, vocab.held_out_scenes, ask.scenes)
    directories: list[Path] = []
    rounds: list[dict[str, Any]] = []
    want = [True] * len(proposals)
    with heap_frozen():  # the plan's objects live as long as the rounds: no collection need walk them
        for r in range(ask.rounds if ask.scenes > 0 else 0):
            if r > 0:
                still = wanted(candidate_files(store, batch_names, directories), vocab.held_out_scenes)
                want = [w and still(p.program) and len(o) > r * ask.scenes for w, p, o in zip(want, proposals, orders)]
                if not any(want):
                    break
            plan = plan_round(proposals, orders, want, vocab, r * ask.scenes, ask.scenes)
            directory = store.root / round_name(key, r, [p.key for p, w in zip(proposals, want) if w])
            barrier(executor)  # a round's asks need the rounds before (the run's timeline: a step of its own)
            if r == 0 and alongside:
                alongside()
            told = RoundTold(f"ask round {r + 1}", sum(want), plan, batch_names, on_round)
            round_start = time.perf_counter()
            told.written(None)
            run_round(store.root, directory, batch_names, plan, questions, seed, executor, told.chained(on_written))
            directories.append(directory)
            rounds.append(round_stats(directory, batch_names, sum(want)))
            if on_round:
                on_round(told.name, time.perf_counter() - round_start, round_detail(rounds[-1]))
        if alongside and not directories:  # no round ran
            alongside()
    stats = {
        "questions_proposed": len(proposals),
        "held_out_scenes": len(vocab.held_out_scenes),
        "rounds": rounds,
        "asks": sum(r["asks"] for r in rounds),
        "accepted": sum(r["accepted"] for r in rounds),
        "records": sum(r["records"] for r in rounds),
        "rejected": dict(sum((Counter(r["rejected"]) for r in rounds), Counter())),
        "seconds": {"plan": round(plan_s, 3), "asks_cpu": round(sum(r["seconds"] for r in rounds), 3)},
    }
    where = f"{run_ask_stage.__module__}:{run_ask_stage.__name__}"
    report = StageReport("ask", where, stats["asks"], stats["records"], stats, time.perf_counter() - start)
    return AskResult(directories, vocab.held_out_scenes, report)


def candidate_files(store: BatchStore, batch_names: list[str], asked: list[Path]) -> list[Path]:
    """Every candidate question's file: the batches' proposals, then each ask round's candidates."""
    files = [store.path(n) / "questions.parquet" for n in batch_names]
    return files + [d / n / f"{ASKED}.parquet" for d in asked for n in batch_names]


def run_round(
    store_root: Path,
    directory: Path,
    batch_names: list[str],
    plan: dict[int, list[Ask]],
    questions: QuestionConfig,
    seed: int,
    executor: Executor | None,
    on_written: Callable[[Path], None] | None = None,
) -> None:
    """A round's unfinished target batches, one unit each, the most asks first (so that the round's last
    units are short ones, and no worker waits long for the one still asking); ``on_written`` gets each
    unit's candidate file as it is done."""
    todo = [i for i, name in enumerate(batch_names) if not BatchStore(directory).is_done(name)]
    todo.sort(key=lambda i: -len(plan.get(i, [])))
    units = {submit(executor, ask_batch, store_root, directory, batch_names[i], plan.get(i, []), questions, seed): i
             for i in todo}  # fmt: skip
    for unit in as_completed(units):
        unit.result()  # a failed unit fails the round, its error first
        if on_written:
            on_written(directory / batch_names[units[unit]] / f"{ASKED}.parquet")


class RoundTold:
    """A round's progress as the run's display hears it (``listener``, None: no one listens): its questions,
    then its asks done so far, a target batch's asks at a time, as its units finish."""

    def __init__(self, name: str, questions: int, plan: dict[int, list[Ask]], batch_names: list[str],
                 listener: SectionListener | None):  # fmt: skip
        self.name, self.questions, self.listener = name, questions, listener
        self.asks = {batch_names[i]: len(asks) for i, asks in plan.items()}
        self.total, self.done = sum(self.asks.values()), 0

    def written(self, path: Path | None) -> None:
        """A unit's candidate file is written (None: the round starts)."""
        self.done += self.asks.get(path.parent.name, 0) if path is not None else 0
        if self.listener:
            self.listener(self.name, None, f"{self.questions:,} questions, {self.done:,} of {self.total:,} asks")

    def chained(self, on_written: Callable[[Path], None] | None) -> Callable[[Path], None]:
        def both(path: Path) -> None:
            self.written(path)
            if on_written:
                on_written(path)

        return both


def round_detail(stats: dict[str, Any]) -> str:
    """A round's counts as the progress line says them."""
    return f"{stats['proposals']:,} questions, {stats['asks']:,} asks -> {stats['records']:,} answered"


def round_stats(directory: Path, batch_names: list[str], proposals: int) -> dict[str, Any]:
    summaries = BatchStore(directory).read_stats(batch_names)
    rejected: Counter = Counter()
    for s in summaries:
        rejected.update(s["rejections"])
    return {
        "proposals": proposals,
        "asks": sum(s["asks"] for s in summaries),
        "accepted": sum(s["accepted"] for s in summaries),
        "records": sum(s["questions"] for s in summaries),
        "rejected": dict(sorted(rejected.items())),
        "seconds": sum(s["seconds"] for s in summaries),
    }
