"""The Prefect flow ``generate``: the run's units as Prefect task runs, recorded beside the work.

The work itself does not wait for Prefect (:mod:`eqagen.flows.run`): the run's driver
(:class:`~eqagen.flows.pool.RunDriver`) starts it on the workers while Prefect is imported and its server
starts, and the flow's tasks -- plan, one per batch, finish (balance, render, paraphrase, split, write
shards, audit) -- each wait for the driver's result of their
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
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from prefect import flow, task
from prefect.cache_policies import NO_CACHE
from prefect.settings import PREFECT_API_URL, PREFECT_FLOWS_HEARTBEAT_FREQUENCY, temporary_settings
from prefect.task_runners import ThreadPoolTaskRunner

from eqagen.config import PipelineConfig
from eqagen.flows import pipeline
from eqagen.flows.pool import WINDOW_PER_WORKER, RunDriver

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


def record_run(driver: RunDriver, config: PipelineConfig, out_dir: Path, api_url: str) -> pipeline.RunSummary:
    """Record ``driver``'s run as the flow's task runs, against the server at ``api_url``; returns the driver's
    summary (or raises its first error)."""
    task_runner = ThreadPoolTaskRunner(max_workers=max(2, WINDOW_PER_WORKER * driver.pool.workers))
    with (
        temporary_settings(updates={PREFECT_API_URL: api_url, PREFECT_FLOWS_HEARTBEAT_FREQUENCY: None}),
        observed(driver),
    ):
        return generate_flow.with_options(task_runner=task_runner)(config, str(out_dir))
