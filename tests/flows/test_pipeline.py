"""The pipeline's library stages without Prefect: determinism, resume, layout, stage boundaries."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from eqagen.core import derive_rng
from eqagen.flows import pipeline, stages
from eqagen.flows.checkpoints import BatchStore
from eqagen.outputs.manifest import read_manifest
from eqagen.outputs.readers import read_episodes, read_questions
from eqagen.outputs.schemas import questions_table
from tests.outputs.builders import fixture_sampler, make_episode, make_records


def shard_digests(out: Path) -> dict[str, str]:
    return {
        p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(out.glob("*/*.parquet"))
    }


def test_same_config_and_seed_give_identical_shards(tmp_path, small_config) -> None:
    config = small_config()
    pipeline.generate_inline(config, tmp_path / "a", sampler=fixture_sampler)
    pipeline.generate_inline(config, tmp_path / "b", sampler=fixture_sampler)
    a, b = shard_digests(tmp_path / "a"), shard_digests(tmp_path / "b")
    assert a == b and len(a) >= 4
    assert (tmp_path / "a" / "manifest.json").read_bytes() == (tmp_path / "b" / "manifest.json").read_bytes()


def test_another_seed_gives_other_shards(tmp_path, small_config) -> None:
    pipeline.generate_inline(small_config(), tmp_path / "a", sampler=fixture_sampler)
    pipeline.generate_inline(small_config(seed=5), tmp_path / "b", sampler=fixture_sampler)
    assert shard_digests(tmp_path / "a") != shard_digests(tmp_path / "b")


def test_layout_manifest_and_checksums(tmp_path, small_config) -> None:
    summary = pipeline.generate_inline(small_config(), tmp_path, sampler=fixture_sampler)
    manifest = read_manifest(tmp_path)
    listed = {s["path"]: s for s in manifest["shards"]}
    assert set(listed) == set(shard_digests(tmp_path))
    for path, digest in shard_digests(tmp_path).items():
        assert listed[path]["sha256"] == digest
        assert listed[path]["rows"] == pq.read_metadata(tmp_path / path).num_rows
    assert {p for p in listed if p.startswith("questions/")} == {
        f"questions/{split}-00000-of-00001.parquet" for split in ("train", "validation", "test")
    }  # 17 rows per shard; the fixture sampler's balanced questions fit in one shard per split
    assert [p for p in listed if p.startswith("episodes/")] == [
        f"episodes/episodes-{k:05d}-of-00002.parquet" for k in range(2)
    ]
    assert manifest["rows"]["episodes"] == 23 == summary.counts["episodes"]
    assert manifest["config"]["generation"]["n_episodes"] == 23 and manifest["seed"] == 0
    assert (tmp_path / "stats.json").exists()


def test_every_shard_row_matches_its_split_and_episode(tmp_path, small_config) -> None:
    pipeline.generate_inline(small_config(), tmp_path, sampler=fixture_sampler)
    episodes = read_episodes(tmp_path)
    for split in ("train", "validation", "test"):
        for record in read_questions(tmp_path, split):
            assert record.split == split
            ep = episodes[record.episode_id]  # every question's episode is in the episodes table
            visible = ep.timeline["visible"].any(axis=0)
            color = record.program.filters[0].value
            count = sum(1 for j in range(ep.n_entities) if visible[j] and ep.entities.attributes[j]["color"] == color)
            assert record.answer_key == str(count), "the answer is recomputed from the shards alone"


def test_resume_skips_finished_batches_and_gives_the_same_shards(tmp_path, small_config) -> None:
    config = small_config()
    pipeline.generate_inline(config, tmp_path / "full", sampler=fixture_sampler)
    # An interrupted run: some batches checkpointed, one half-written (files but no DONE marker).
    ctx = pipeline.make_context(config, tmp_path / "resumed")
    batches = stages.plan_batches(config.generation, config.seed)
    for batch in batches[:2]:
        pipeline.run_batch(ctx, batch, fixture_sampler)
    half = ctx.store.path(batches[2].name)
    half.mkdir(parents=True)
    (half / "questions.parquet").write_bytes(b"truncated")
    calls: list[str] = []

    def counting_sampler(ep, cfg, rng):
        calls.append(ep.episode_id)
        return fixture_sampler(ep, cfg, rng)

    summary = pipeline.generate_inline(config, tmp_path / "resumed", sampler=counting_sampler)
    assert summary.batches_resumed == 2
    assert len(calls) == sum(len(b.specs) for b in batches[2:]), "finished batches are not redone"
    assert shard_digests(tmp_path / "full") == shard_digests(tmp_path / "resumed")


def test_changed_config_does_not_reuse_checkpoints(tmp_path, small_config) -> None:
    a = pipeline.make_context(small_config(), tmp_path)
    b = pipeline.make_context(small_config("generation.n_episodes=24"), tmp_path)
    c = pipeline.make_context(small_config("runner.workers=7"), tmp_path)
    d = pipeline.make_context(small_config("balance.max_per_answer=9", "split.ratios=[0.8,0.1,0.1]"), tmp_path)
    assert a.store_root != b.store_root
    assert a.store_root == c.store_root, "the runner changes how, not what: checkpoints stay valid"
    assert a.store_root == d.store_root and a.config_hash != d.config_hash, "re-balancing reuses the batches"


def test_batches_cover_the_plan_in_tens() -> None:
    from eqagen.config import load_config

    config = load_config("tag-eqa", ["generation.backend=fixture"])
    batches = stages.plan_batches(config.generation, config.seed)
    assert sum(len(b.specs) for b in batches) == 1500
    assert {len(b.specs) for b in batches} == {50}
    assert [s.index for b in batches for s in b.specs] == list(range(1500))


def test_dataset_stages_are_the_packages_own_and_stats_say_which_ran() -> None:
    from eqagen.curation.balance import balance
    from eqagen.curation.compose import compose
    from eqagen.curation.config import BalanceConfig
    from eqagen.curation.splits import split
    from eqagen.paraphrase.stage import paraphrase_table

    own = {"balance": balance, "compose": compose, "split": split, "paraphrase": paraphrase_table}
    assert own == {name: stage.fn for name, stage in stages.DATASET_STAGES.items()}
    order = list(stages.DATASET_STAGES)
    assert order == ["balance", "compose", "split", "paraphrase"]  # split first: few-shot examples are train's
    records = []
    for i in range(40):
        records += make_records(make_episode(1, f"scene-{i}", index=i), derive_rng(1, i), n=4)
    table = questions_table(records)
    out, report = stages.BALANCE.run(table, BalanceConfig(), seed=3)
    entry = report.stats_entry()
    assert entry["implementation"] == "eqagen.curation.balance:balance" and entry["rows_in"] == len(records)
    assert report.funnel_entry() == {"in": len(records), "out": out.num_rows, "rejected": report.rejected}
    assert sum(report.rejected.values()) == len(records) - out.num_rows > 0  # every drop counted by reason


def test_a_stage_refuses_a_table_or_section_outside_its_contract() -> None:
    from eqagen.curation.config import BalanceConfig

    table = questions_table(make_records(make_episode(1), derive_rng(1), n=4))
    with pytest.raises(ValueError, match="balance_key"):
        stages.BALANCE.run(table.drop_columns(["balance_key"]), BalanceConfig(), seed=0)
    with pytest.raises(TypeError, match="BalanceConfig"):
        stages.BALANCE.run(table, {"mode": "exact"}, seed=0)  # a mapping is validated at the edge, not here


def test_batch_store_needs_the_marker(tmp_path) -> None:
    store = BatchStore(tmp_path)
    (tmp_path / "batch-00000").mkdir()
    assert not store.is_done("batch-00000")
    ep = make_episode(0)
    from eqagen.outputs.schemas import episodes_table

    tables = {"episodes": episodes_table([ep]), "questions": questions_table(make_records(ep, derive_rng(0)))}
    store.write("batch-00000", tables, {"x": 1})
    assert store.is_done("batch-00000") and store.read_stats(["batch-00000"]) == [{"x": 1}]


def test_the_summary_times_every_stage_of_the_run(tmp_path, small_config) -> None:
    """bench_pipeline and the summary read each stage's seconds from here; a stage missing is counted as
    orchestration (the ask stage once went missing so, and orchestration read 27 s of a 67 s run)."""
    summary = pipeline.generate_inline(small_config(), tmp_path, sampler=fixture_sampler)
    timed = {"plan", "episodes", "programs", "checkpoint", "ask", "read", "paraphrase", "write", "audit"}
    assert set(summary.stage_seconds) == timed | {stage.name for stage in stages.SELECTION_STAGES}
    assert all(s >= 0 for s in summary.stage_seconds.values())
    assert summary.orchestration_seconds < summary.wall_seconds
