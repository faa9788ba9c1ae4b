"""The Prefect flow ``generate``: the library units of :mod:`eqagen.flows.pipeline` as tasks over batches.

plan (one task) -> per batch: sample episodes, sample and check programs, checkpoint (one task,
:mod:`eqagen.flows.runners`, a bounded number in flight) -> finish
(one task: balance, render, paraphrase, split, write shards, audit). A batch already
checkpointed by an interrupted run is not submitted again.

Orchestration kept cheap: tasks take batches of tens of episodes, results are not persisted, inputs
are not hashed (``NO_CACHE``), logs are not shipped to the API, and the flow-run heartbeat (which a
sync flow waits on when it ends) is off. Import this module only after
:func:`eqagen.flows.server.apply_prefect_environment`: Prefect reads its settings at import time.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from prefect.task_runners import ThreadPoolTaskRunner

from eqagen.config import PipelineConfig, RunnerConfig
from eqagen.flows import pipeline, progress, runners, stages
from eqagen.flows.pool import active_pool, batch_pool
from eqagen.flows.server import LocalPrefectServer, sigterm_as_exit
from eqagen.paraphrase.stage import check_paraphrase_endpoint

TASK_OPTIONS: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False, "retries": 0}


@task(name="plan-scenes", **TASK_OPTIONS)
def plan_task(config: PipelineConfig) -> tuple[list[stages.Batch], float]:
    start = time.perf_counter()
    return stages.plan_batches(config.generation, config.seed), time.perf_counter() - start


@task(name="balance-render-paraphrase-split-write-audit", **TASK_OPTIONS)
def finish_task(config: PipelineConfig, ctx: pipeline.RunContext, names: list[str], summary: pipeline.RunSummary):
    pool = active_pool()  # the processes runner's warm workers, idle once the batches are done
    return pipeline.finish(config, ctx, names, summary, pool.executor if pool else None)


def task_runner(runner: RunnerConfig) -> Any:
    if runner.kind == "local":
        return ThreadPoolTaskRunner(max_workers=runner.workers)
    if runner.kind == "processes":  # threads that hand each batch to the run's worker processes (flows.pool)
        return ThreadPoolTaskRunner(max_workers=runners.WINDOW_PER_WORKER * runner.workers)
    return runners.dask_task_runner(runner)  # the dask extra


@flow(name="generate", persist_result=False, log_prints=False, validate_parameters=False)
def generate_flow(config: PipelineConfig, out_dir: str) -> pipeline.RunSummary:
    ctx = pipeline.make_context(config, Path(out_dir))
    summary = pipeline.RunSummary(Path(out_dir), runner=config.runner.kind)
    batches, plan_s = plan_task(config)
    summary.stage_seconds["plan"] = plan_s
    names = [b.name for b in batches]
    early = active_pool()  # the processes runner's workers, busy since before the server answered
    finished = early.resumed if early else ctx.store.done(names)
    if early:
        early.hand_over()
    summary.batches_total, summary.batches_resumed = len(batches), len(finished)
    todo = [b for b in batches if b.name not in finished]
    # One task per batch, a bounded number in flight: memory and checkpoints follow the workers, not the
    # dataset (runners.run_batches_whole says why).
    runners.run_batches_whole(ctx, todo, summary, progress.notify_batch, config.runner)
    return finish_task(config, ctx, names, summary)


def parallelism(config: PipelineConfig, summary: pipeline.RunSummary) -> int:
    todo = summary.batches_total - summary.batches_resumed
    return max(1, min(config.runner.workers, todo)) if config.runner.kind != "dask" or not config.runner.address else 1


def orchestration_seconds(config: PipelineConfig, summary: pipeline.RunSummary) -> float:
    """Wall time not spent in stage work: batched work counts once per worker running in parallel."""
    batched = sum(summary.stage_seconds.get(s, 0.0) for s in ("episodes", "programs", "checkpoint"))
    other = sum(v for k, v in summary.stage_seconds.items() if k not in ("episodes", "programs", "checkpoint"))
    return max(0.0, summary.wall_seconds - other - batched / parallelism(config, summary))


def run_with_prefect(
    config: PipelineConfig,
    out_dir: Path,
    prefect_home: Path,
    on_batch: Callable | None = None,
    server: LocalPrefectServer | None = None,
    started_at: float | None = None,
) -> pipeline.RunSummary:
    """Start the local server (or finish starting ``server``, launched earlier by the caller), run the flow
    against it, and stop the server (also on SIGTERM, Ctrl-C and errors). With the ``processes`` runner the
    worker processes are forked first and start on the first batches while the server boots."""
    wall = started_at or time.perf_counter()
    check_paraphrase_endpoint(config.paraphrase)  # a named model's endpoint answers, before any work
    server = server or LocalPrefectServer(prefect_home)
    with sigterm_as_exit(), contextlib.ExitStack() as stack:
        stack.callback(server.stop)  # last: the pool below is stopped first
        if server.process is None:
            server.launch()
        if config.runner.kind == "dask" and config.runner.address:  # fail early, while the server boots
            runners.check_cluster_shares(config.runner.address, pipeline.make_context(config, Path(out_dir)).store_root)
        if config.runner.kind == "processes":
            pool = stack.enter_context(batch_pool(config.runner.workers))
            batches = stages.plan_batches(config.generation, config.seed)  # the flow plans again: the same list
            pool.start_early(pipeline.make_context(config, Path(out_dir)), batches)
        api_url = server.start()
        os.environ["PREFECT_API_URL"] = api_url  # task-runner processes inherit it
        runner = task_runner(config.runner)
        with temporary_settings(updates={PREFECT_API_URL: api_url, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}):
            flow_fn = generate_flow.with_options(task_runner=runner)
            with progress.batch_listener(on_batch):  # not a flow parameter: Prefect records those
                summary = flow_fn(config, str(out_dir))
    summary.wall_seconds = time.perf_counter() - wall
    summary.orchestration_seconds = orchestration_seconds(config, summary)
    summary.server_seconds = server.startup_seconds
    return summary
