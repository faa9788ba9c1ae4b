"""One generate run as plain functions: the batch work units and the dataset-level finish.

:func:`run_batch` is the unit a task runs (one batch: episodes, then programs, then its checkpoint);
:func:`finish` streams every checkpoint through balance -> split -> paraphrase -> write -> audit.
:func:`generate_inline` chains them in this process without Prefect (the ``inline`` runner, and what
most tests call); :mod:`eqagen.flows.generate` runs the same units as Prefect tasks.
"""

from __future__ import annotations

import math
import time
from collections import Counter
from collections.abc import Callable
from concurrent.futures import Executor, Future
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from eqagen.config import PipelineConfig, batches_hash, config_hash, resolved
from eqagen.core import Episode, Program, RunFailed
from eqagen.core.stages import StageLog, StageReport
from eqagen.curation.partition import held_out_scene_share, held_out_scenes, partitions_scenes
from eqagen.flows import ask, stages, stream
from eqagen.flows.checkpoints import BatchStore, work_dir
from eqagen.flows.timeline import WAITING, SectionListener, Timeline, critical_path, serial_seconds
from eqagen.outputs.folder import DatasetWriter
from eqagen.outputs.manifest import DatasetIdentity
from eqagen.outputs.schemas import episodes_table, questions_table
from eqagen.outputs.units import barrier
from eqagen.paraphrase.stage import check_paraphrase_endpoint
from eqagen.predicates.config import QuestionConfig


@dataclass
class RunContext:
    """What every unit of one run needs; small and picklable (sent to worker processes)."""

    out_dir: Path
    seed: int
    config_hash: str
    questions: QuestionConfig
    store_root: Path

    @property
    def store(self) -> BatchStore:
        return BatchStore(self.store_root)


@dataclass
class RunSummary:
    out_dir: Path
    counts: dict[str, Any] = field(default_factory=dict)
    stage_seconds: dict[str, float] = field(default_factory=dict)
    wall_seconds: float = 0.0
    orchestration_seconds: float = 0.0
    server_seconds: float = 0.0  # Prefect server start-up (beside the work: waited for only if the work is done first)
    batches_total: int = 0
    batches_resumed: int = 0
    runner: str = "inline"
    serial_seconds: float = 0.0  # wall time with fewer units running than the run has workers
    critical_path: dict[str, float] = field(default_factory=dict)  # wall time by stage (eqagen.flows.timeline)
    timeline: dict[str, Any] = field(default_factory=dict)

    def record_timeline(self, timeline: Timeline, workers: int) -> None:
        """The run's spans, and what they say: its critical path by stage, its serial seconds, and as
        orchestration the time in which nothing ran (call once ``wall_seconds`` is set)."""
        spans = timeline.relative()
        self.timeline = timeline.to_dict(workers)
        self.critical_path = critical_path(spans, self.wall_seconds)
        self.serial_seconds = serial_seconds(spans, workers, self.wall_seconds)
        self.orchestration_seconds = self.critical_path.get(WAITING, 0.0)

    @property
    def orchestration_share(self) -> float:
        return self.orchestration_seconds / self.wall_seconds if self.wall_seconds else 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "out_dir": str(self.out_dir),
            "runner": self.runner,
            "counts": self.counts,
            "batches": {"total": self.batches_total, "resumed": self.batches_resumed},
            "stage_seconds": {k: round(v, 4) for k, v in self.stage_seconds.items()},
            "server_seconds": round(self.server_seconds, 4),
            "wall_seconds": round(self.wall_seconds, 4),
            "orchestration_seconds": round(self.orchestration_seconds, 4),
            "orchestration_share": round(self.orchestration_share, 4),
            "serial_seconds": round(self.serial_seconds, 4),
            "critical_path": {k: round(v, 4) for k, v in self.critical_path.items()},
            "timeline": self.timeline,
        }


def make_context(config: PipelineConfig, out_dir: Path) -> RunContext:
    h = config_hash(config)
    return RunContext(Path(out_dir), config.seed, h, config.questions, work_dir(out_dir, batches_hash(config)))


def count_batches(config: PipelineConfig, out_dir: Path) -> tuple[int, int]:
    """(finished, total) batches of this config in ``out_dir``'s checkpoints, counted without planning
    (a plan cuts ``n_episodes`` into batches of ``batch_size``), so a resume is announced at once."""
    total = math.ceil(config.generation.n_episodes / config.generation.batch_size)
    names = [stages.Batch(index, ()).name for index in range(total)]
    return len(make_context(config, out_dir).store.done(names)), total


def episodes_unit(batch: stages.Batch) -> tuple[list[Episode], float]:
    start = time.perf_counter()
    episodes = stages.sample_episodes(batch)
    return episodes, time.perf_counter() - start


def programs_unit(
    ctx: RunContext, batch: stages.Batch, episodes: list[Episode], sampler: stages.Sampler | None = None
) -> dict[str, Any]:
    """Sample and check programs for a batch, then checkpoint the batch; returns its small summary."""
    start = time.perf_counter()
    result = stages.sample_programs(episodes, ctx.questions, ctx.seed, sampler)
    programs_s = time.perf_counter() - start
    questions = questions_table(result.records)
    summary = {
        "batch": batch.name,
        "episodes": len(episodes),
        "steps": int(sum(ep.n_steps for ep in episodes)),
        "candidates": result.candidates,
        "questions": len(result.records),
        "rejections": dict(sorted(result.rejections.items())),
        "seconds": {"programs": programs_s},
    }
    start = time.perf_counter()
    names = ask.names_table([e.episode_id for e in episodes], [e.scene_id for e in episodes], result.names)
    tables = {"episodes": episodes_table(episodes), "questions": questions, ask.NAMES: names}
    ctx.store.write(batch.name, tables, summary)
    summary["seconds"]["checkpoint"] = time.perf_counter() - start
    return summary


def run_batch(ctx: RunContext, batch: stages.Batch, sampler: stages.Sampler | None = None) -> dict[str, Any]:
    """Both batched stages for one batch; the unit of resume."""
    episodes, episodes_s = episodes_unit(batch)
    summary = programs_unit(ctx, batch, episodes, sampler)
    summary["seconds"]["episodes"] = episodes_s
    return summary


def programs_report(batch_stats: list[dict[str, Any]]) -> StageReport:
    """The batched programs stage as one stage: candidates in, questions out, rejections by reason summed."""
    rejected: Counter[str] = Counter()
    for s in batch_stats:
        rejected.update(s["rejections"])
    n_in, n_out = sum(s["candidates"] for s in batch_stats), sum(s["questions"] for s in batch_stats)
    where = f"{programs_unit.__module__}:{programs_unit.__name__}"
    return StageReport("programs", where, n_in, n_out, {"rejected": dict(sorted(rejected.items()))})


def require_questions(kept: int, candidates: int) -> None:
    """A run that would write no question could not do what was asked: RunFailed (exit status 1), raised
    before the dataset is written, so nothing that looks like a dataset is left and the checkpoints stay."""
    if kept > 0:
        return
    raise RunFailed(
        f"no question survived balancing ({candidates:,} candidate questions): a question is kept only where at "
        "least 2 scenes give different answers",
        "generate more episodes over more scenes, e.g. --set generation.n_episodes=40",
    )


def ask_everywhere(
    config: PipelineConfig,
    ctx: RunContext,
    batch_names: list[str],
    executor: Executor | None = None,
    keys: stream.CandidateKeys | None = None,
    inputs: ask.PlanInputs | None = None,
    alongside: Callable[[], None] | None = None,
    on_round: SectionListener | None = None,
) -> ask.AskResult:
    """The ask stage (:mod:`eqagen.flows.ask`) with the run's partition of scenes, on ``executor`` (the run's
    warm workers, when it has them); ``keys`` reads the candidates between rounds (and keeps what it read:
    each round's files are read as their units write them); ``inputs``: the plan's inputs folded in so far;
    ``alongside``: work started with the first round; ``on_round``: told of each round
    (:func:`eqagen.flows.ask.run_ask_stage`)."""
    keys = keys or stream.CandidateKeys(stream.key_columns(config))
    split, partition = config.split, partitions_scenes(config.split)
    share = held_out_scene_share(split.unseen_fraction, split.ratios) if partition else 0.0

    def held_out(scenes: list[str]) -> set[str]:
        return held_out_scenes(scenes, share, config.seed)

    def wanted(files: list[Path], held: set[str]) -> Callable[[Program], bool]:
        return stream.still_wanted(keys.read(files, executor), config, held if partition else None)

    settings = ask.AskSettings(config.balance.ask_scenes, config.balance.ask_rounds)

    def read_soon(file: Path) -> None:
        keys.prefetch([file], executor)

    return ask.run_ask_stage(
        ctx.store, batch_names, ctx.questions, config.seed, settings, held_out, wanted, executor, inputs, read_soon,
        alongside, on_round,
    )  # fmt: skip


def finish(
    config: PipelineConfig,
    ctx: RunContext,
    batch_names: list[str],
    summary: RunSummary,
    executor: Executor | None = None,
    timeline: Timeline | None = None,
    plan_inputs: ask.PlanInputs | None = None,
) -> RunSummary:
    """Everything after the batched stages, from the checkpoints alone (so a resumed run gets here too),
    streamed batch by batch (:mod:`eqagen.flows.stream`): memory follows the batch, not the dataset. Its
    units run on ``executor`` when given (the run's warm workers, idle by now; in this process if None):
    the asks, the reading of the candidates' keys, every shard (read, paraphrased, written, its audit
    statistics made) and the audit's blind models and plots. What stays here is what needs every candidate
    at once, on the key table: balance, compose, split, and the merge of the units' small results. Each
    stage's report goes to the run's :class:`StageLog`, which stats.json records as it is; each step is a
    section of ``timeline``. ``plan_inputs``: the ask plan's inputs as the run's driver folded them in while
    the batches ran (the rest is read here)."""
    seconds, log = summary.stage_seconds, StageLog()
    timeline = timeline or Timeline()
    batch_stats = ctx.store.read_stats(batch_names)
    programs = log.record(programs_report(batch_stats))
    writer = DatasetWriter(ctx.out_dir, config.output.rows_per_shard)  # staged: the folder changes at commit
    episode_shards: list[Future] = []  # they need only the batches: started with the first ask round

    def write_episodes() -> None:
        episode_shards.extend(stream.submit_episode_shards(ctx.store, batch_names, writer, executor))

    candidates = stream.CandidateKeys(stream.key_columns(config))  # each candidate file read once
    candidates.prefetch(ask.candidate_files(ctx.store, batch_names, []), executor)  # while the asks are planned
    with timeline.section("ask") as asking:
        asked = ask_everywhere(config, ctx, batch_names, executor, candidates, plan_inputs, write_episodes,
                               timeline.tell)  # fmt: skip
        asking.detail = rows_detail(asked.report, "asks", "answered")
    seconds["ask"] = log.record(asked.report).seconds
    with timeline.section("read") as read:
        files = ask.candidate_files(ctx.store, batch_names, asked.directories)
        keys = candidates.read(files, executor)
        read.detail = f"{keys.num_rows:,} candidates"
    seconds["read"] = read.seconds
    held_out = asked.held_out_scenes if partitions_scenes(config.split) else None
    with timeline.section("select") as selecting:
        kept = stream.select(keys, config, log, held_out)
        selecting.detail = f"{keys.num_rows:,} -> {kept.num_rows:,} rows"
    for stage in stages.SELECTION_STAGES:
        seconds[stage.name] = log.seconds[stage.name]
        funnel = log.funnel[stage.name]
        timeline.tell(stage.name, seconds[stage.name], f"{funnel['in']:,} -> {funnel['out']:,} rows")
    del keys, candidates  # the candidates' keys are no longer needed
    require_questions(kept.num_rows, programs.rows_out)  # before any question is written (staging: episodes at most)
    barrier(executor)  # the shards' units need the selection
    with timeline.section("write") as write:
        rows = RowsTold(timeline, "paraphrase", kept.num_rows)
        rows.add(0)
        paraphrased = log.record(
            stream.write_questions(files, kept, config, ctx.config_hash, writer, executor, rows.add)
        )
        timeline.tell("paraphrase", paraphrased.seconds, f"{paraphrased.rows_in:,} rows")
        for shard in episode_shards:
            writer.add_staged(*shard.result())
        write.detail = f"{paraphrased.rows_out:,} questions, {len(episode_shards)} episode shards"
    seconds["paraphrase"] = paraphrased.seconds
    seconds["write"] = write.seconds - seconds["paraphrase"]
    log.note("timings", {"seconds": {k: round(v, 3) for k, v in seconds.items()}})
    identity = DatasetIdentity(resolved(config), config.seed, ctx.config_hash)
    barrier(executor)  # the audit's units need every shard
    with timeline.section("audit") as audit:
        manifest, stats = writer.seal(
            identity, log, executor=executor, on_step=lambda what: timeline.tell("audit", None, what)
        )
        criteria = stats["dataset"].get("criteria", {})
        audit.detail = f"{sum(c['ok'] for c in criteria.values())} of {len(criteria)} criteria met"
    seconds["audit"] = audit.seconds
    summary.counts = {
        **manifest["rows"],
        "candidates": programs.rows_in,
        "asks": asked.report.rows_in,
        "steps": int(sum(s["steps"] for s in batch_stats)),
        "criteria_missed": [name for name, c in stats["dataset"].get("criteria", {}).items() if not c["ok"]],
    }
    return summary


@dataclass
class RowsTold:
    """Rows done of a stage's total, told to the timeline's listener as the running stage's detail."""

    timeline: Timeline
    stage: str
    total: int
    done: int = 0

    def add(self, rows: int) -> None:
        self.done += rows
        self.timeline.tell(self.stage, None, f"{self.done:,} of {self.total:,} rows")


def rows_detail(report: StageReport, rows_in: str, rows_out: str) -> str:
    """A stage's counts as a progress line says them: "11,052 asks -> 7,201 answered"."""
    return f"{report.rows_in:,} {rows_in} -> {report.rows_out:,} {rows_out}"


def add_batch_seconds(seconds: dict[str, float], batch_summary: dict[str, Any]) -> None:
    for stage, secs in batch_summary["seconds"].items():
        seconds[stage] = seconds.get(stage, 0.0) + secs


def generate_inline(
    config: PipelineConfig,
    out_dir: Path,
    sampler: stages.Sampler | None = None,
    on_batch: Callable[[stages.Batch], None] | None = None,
    on_stage: SectionListener | None = None,
) -> RunSummary:
    """The whole run in this process, without Prefect: the same units, the same bytes. ``on_stage``: told as
    each of the run's own steps starts and ends (:class:`Timeline`)."""
    check_paraphrase_endpoint(config.paraphrase)  # a named model's endpoint answers, before any work
    wall = time.perf_counter()
    timeline = Timeline(on_section=on_stage)
    out_dir = Path(out_dir)
    ctx = make_context(config, out_dir)
    summary = RunSummary(out_dir, runner="inline")
    with timeline.section("plan") as plan:
        batches = stages.plan_batches(config.generation, config.seed)
    summary.stage_seconds["plan"] = plan.seconds
    names = [b.name for b in batches]
    finished = ctx.store.done(names)
    summary.batches_total, summary.batches_resumed = len(batches), len(finished)
    for batch in batches:
        if batch.name in finished:
            continue  # resumed: the caller's progress already counts it (checkpoints.count_finished)
        with timeline.section("run_batch"):
            add_batch_seconds(summary.stage_seconds, run_batch(ctx, batch, sampler))
        if on_batch:
            on_batch(batch)
    finish(config, ctx, names, summary, None, timeline)
    summary.wall_seconds = time.perf_counter() - wall
    summary.record_timeline(timeline, 1)
    return summary
