"""The finish's units on a real run (the household engine, the demo preset cut small): the same bytes on a
fork pool as in this process, and audit partials of any cut of the rows that merge to the whole table's
statistics."""

from __future__ import annotations

import hashlib
import json
import shutil
from concurrent.futures import ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.config import PipelineConfig, load_config
from eqagen.curation.audit import (
    EPISODE_COLUMNS,
    QUESTION_COLUMNS,
    episode_partial,
    episode_stats,
    episode_stats_from,
    merge_episodes,
    merge_questions,
    question_partial,
    question_stats,
    question_stats_from,
)
from eqagen.flows import pipeline, stages, stream
from eqagen.outputs.dataset import open_dataset

# Two batches, 779 questions in shards of 300 rows: several shards per split, several pieces per shard.
OVERRIDES = ["generation.n_episodes=24", "output.rows_per_shard=300", "runner.kind=inline", "runner.progress=false"]


@pytest.fixture(scope="module")
def real_run(tmp_path_factory) -> tuple[PipelineConfig, Path]:
    config = load_config("demo", OVERRIDES)
    out = tmp_path_factory.mktemp("real-run") / "out"
    pipeline.generate_inline(config, out)
    return config, out


def written_bytes(out: Path) -> dict[str, str]:
    """sha256 of every shard and of the manifest."""
    files = [*sorted(p for p in out.rglob("*.parquet") if ".eqagen" not in p.parts), out / "manifest.json"]
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in files}


TIMINGS = ("timings", "seconds", "elapsed_s", "items_per_s")


def without_timings(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timings(v) for k, v in value.items() if k not in TIMINGS}
    return [without_timings(v) for v in value] if isinstance(value, list) else value


def test_a_fork_pool_finishes_with_the_bytes_of_this_process(real_run, tmp_path, monkeypatch) -> None:
    config, inline = real_run
    monkeypatch.setattr(stream, "PARAPHRASE_CHUNK_ROWS", 70)  # pieces cut across shards' batches (forks inherit it)
    names = [b.name for b in stages.plan_batches(config.generation, config.seed)]
    ctx = pipeline.make_context(config, tmp_path)
    for name in names:  # the batches only: the pool asks again
        shutil.copytree(pipeline.make_context(config, inline).store.path(name), ctx.store.path(name))
    with ProcessPoolExecutor(2, mp_context=get_context("fork")) as executor:
        pipeline.finish(config, ctx, names, pipeline.RunSummary(tmp_path), executor)
    assert len(list((tmp_path / "questions").glob("train-*.parquet"))) > 1
    assert written_bytes(tmp_path) == written_bytes(inline)
    stats = [json.loads((d / "stats.json").read_text()) for d in (tmp_path, inline)]
    assert without_timings(stats[0]) == without_timings(stats[1])


def test_a_runs_statistics_are_those_recomputed_from_its_shards(real_run) -> None:
    """The audit's statistics and method criteria come from the rows the units that wrote the shards kept in
    their partials: ``eqagen audit`` reads the shards back and finds the same."""
    from eqagen.commands.audit_run import audit_dir

    _, checks = audit_dir(real_run[1])
    check = {c.name: c for c in checks}["stats.json equals the statistics recomputed from the shards"]
    recorded = json.loads((real_run[1] / "stats.json").read_text())["dataset"]
    assert check.ok and {"blind_baselines", "unseen_share"} <= recorded["criteria"].keys(), check


def cut(table: pa.Table, draw: st.DataObject) -> list[pa.Table]:
    """The table cut at drawn rows into pieces (some empty), in a drawn order."""
    bounds = sorted(draw.draw(st.lists(st.integers(0, table.num_rows), max_size=8)))
    pieces = [table.slice(a, b - a) for a, b in zip([0, *bounds], [*bounds, table.num_rows])]
    return [pieces[i] for i in draw.draw(st.permutations(range(len(pieces))))]


@pytest.fixture(scope="module")
def real_tables(real_run) -> tuple[pa.Table, pa.Table]:
    dataset = open_dataset(real_run[1])
    questions = pa.concat_tables(list(dataset.iter_tables("questions", QUESTION_COLUMNS)))
    return questions, pa.concat_tables(list(dataset.iter_tables("episodes", EPISODE_COLUMNS)))


@settings(max_examples=30, deadline=None)
@given(draw=st.data())
def test_partials_of_any_cut_merge_to_the_whole_tables_statistics(real_tables, draw) -> None:
    questions, episodes = real_tables
    merged = merge_questions(question_partial(piece) for piece in cut(questions, draw))
    assert question_stats_from(merged) == question_stats(questions)
    merged_episodes = merge_episodes(episode_partial(piece) for piece in cut(episodes, draw))
    assert episode_stats_from(merged_episodes) == episode_stats(episodes)
