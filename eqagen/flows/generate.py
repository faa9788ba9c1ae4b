"""The Prefect flow ``generate``: the run's units as Prefect task runs, recorded beside the work.

The work itself does not wait for Prefect: :class:`~eqagen.flows.pool.RunDriver` starts it on the run's
workers while Prefect's server is still starting, and the flow's tasks -- plan, one per batch, finish
(balance, render, paraphrase, split, write shards, audit) -- each wait for the driver's result of their
unit. A failed unit fails its task and the flow; a batch already checkpointed by an interrupted run has no
task. So orchestration costs the run only what is left of the server's start once the work is done, and
the flow's own bookkeeping at the end (a fraction of a second): on any run longer than the server's start,
nothing.

Orchestration kept cheap: results are not persisted, inputs are not hashed (``NO_CACHE``), logs are not
shipped to the API, and the flow-run heartbeat (which a sync flow waits on when it ends) is off. Import
this module only after :func:`eqagen.flows.server.apply_prefect_environment`: Prefect reads its settings
at import time.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from prefect.task_runners import ThreadPoolTaskRunner

from eqagen.config import PipelineConfig
from eqagen.flows import pipeline, runners
from eqagen.flows.pool import WINDOW_PER_WORKER, RunDriver
from eqagen.flows.server import LocalPrefectServer, sigterm_as_exit
from eqagen.flows.timeline import Timeline
from eqagen.paraphrase.stage import check_paraphrase_endpoint

TASK_OPTIONS: dict[str, Any] = {"cache_policy": NO_CACHE, "persist_result": False, "retries": 0}

_DRIVERS: list[RunDriver] = []  # the run in progress in this process: not a flow parameter (Prefect records those)


@contextlib.contextmanager
def observed(driver: RunDriver) -> Iterator[None]:
    _DRIVERS.append(driver)
    try:
        yield
    finally:
        _DRIVERS.remove(driver)


@task(name="plan-scenes", **TASK_OPTIONS)
def plan_task(driver: RunDriver) -> int:
    return len(driver.batches)


@task(name="sample-batch", **TASK_OPTIONS)
def batch_task(driver: RunDriver, name: str) -> dict[str, Any]:
    """Episodes, programs and the checkpoint of one batch, run by the driver on the workers."""
    return driver.batch(name).result()


@task(name="balance-render-paraphrase-split-write-audit", **TASK_OPTIONS)
def finish_task(driver: RunDriver) -> pipeline.RunSummary:
    return driver.finished.result()


@flow(name="generate", persist_result=False, log_prints=False, validate_parameters=False)
def generate_flow(config: PipelineConfig, out_dir: str) -> pipeline.RunSummary:
    driver = _DRIVERS[-1]
    plan_task(driver)
    batches = [batch_task.submit(driver, b.name) for b in driver.todo]
    for future in batches:
        future.result()  # the first failed batch fails the flow
    return finish_task(driver)


def run_with_prefect(
    config: PipelineConfig,
    out_dir: Path,
    prefect_home: Path,
    on_batch: Callable | None = None,
    server: LocalPrefectServer | None = None,
    started_at: float | None = None,
) -> pipeline.RunSummary:
    """Start the workers and the work, then the local server (or finish starting ``server``, launched earlier
    by the caller), run the flow against it, and stop everything (also on SIGTERM, Ctrl-C and errors).
    ``started_at`` is the command's start (``time.perf_counter``), from which wall time counts."""
    wall = started_at or time.perf_counter()
    timeline = Timeline(started=time.time() - (time.perf_counter() - wall))
    check_paraphrase_endpoint(config.paraphrase)  # a named model's endpoint answers, before any work
    server = server or LocalPrefectServer(prefect_home)
    ctx = pipeline.make_context(config, Path(out_dir))
    summary = pipeline.RunSummary(Path(out_dir), runner=config.runner.kind)
    with sigterm_as_exit(), contextlib.ExitStack() as stack:
        stack.callback(server.stop)  # last: the workers below are stopped first
        if server.process is None:
            server.launch()
        pool = stack.enter_context(runners.open_pool(config.runner, ctx.store_root, timeline))
        driver = RunDriver(config, ctx, pool, summary, on_batch).start()  # the work starts now
        stack.callback(driver.stop)
        api_url = server.start()
        task_runner = ThreadPoolTaskRunner(max_workers=max(2, WINDOW_PER_WORKER * pool.workers))
        with (
            temporary_settings(updates={PREFECT_API_URL: api_url, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}),
            observed(driver),
        ):
            summary = generate_flow.with_options(task_runner=task_runner)(config, str(out_dir))
    summary.wall_seconds = time.perf_counter() - wall
    summary.server_seconds = server.startup_seconds
    summary.record_timeline(timeline, pool.workers)
    return summary
