"""The streamed finish against a plain in-memory reference: the same kept rows, splits, choices and
paraphrases as balancing, splitting and paraphrasing the whole candidates table at once."""

from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from eqagen.core.stages import StageLog
from eqagen.curation.audit import episode_stats
from eqagen.curation.balance import balance
from eqagen.curation.compose import compose
from eqagen.curation.partition import HELD_OUT, held_out_column, held_out_scene_share, held_out_scenes
from eqagen.curation.splits import split
from eqagen.flows import ask, pipeline, stages, stream
from eqagen.flows.checkpoints import BatchStore
from eqagen.outputs.dataset import open_dataset
from eqagen.outputs.schemas import QUESTIONS_SCHEMA
from eqagen.paraphrase.stage import paraphrase_table
from tests.outputs.builders import fixture_sampler


def by_id(table: pa.Table) -> pa.Table:
    return table.take(pc.sort_indices(table, sort_keys=[("question_id", "ascending")]))


def reference_questions(config, ctx: pipeline.RunContext, names: list[str]) -> pa.Table:
    """The whole candidates table in memory, its held-out scenes marked, through the four stage functions in
    turn (nothing is asked: the fixture sampler's programs are not the engine's)."""
    table = stages.with_config_hash(ctx.store.read_questions(names), ctx.config_hash)
    scenes = ctx.store.read_episodes(names)["scene_id"].to_pylist()
    share = held_out_scene_share(config.split.unseen_fraction, config.split.ratios)
    table = table.append_column(
        HELD_OUT, held_out_column(table["scene_id"], held_out_scenes(scenes, share, config.seed))
    )
    table = table.append_column(stream.FILTER_FAMILIES, stream.filter_families(table["program"]))
    table, _ = balance(table, config.balance, config.seed)
    table, _ = compose(table, stages.compose_section(config), config.seed)
    table, _ = split(table, config.split, config.seed)
    table, _ = paraphrase_table(table, config.paraphrase, config.seed)
    return stages.conform(table, QUESTIONS_SCHEMA)


@pytest.mark.parametrize(("seed", "mode"), [(0, "exact"), (7, "exact"), (3, "entropy")])
def test_streamed_finish_equals_the_in_memory_reference(tmp_path, small_config, seed, mode, monkeypatch) -> None:
    monkeypatch.setattr(stream, "PARAPHRASE_CHUNK_ROWS", 5)  # many chunks, cutting across batches
    config = small_config("generation.n_episodes=150", f"balance.mode={mode}", "balance.min_scenes=2", seed=seed)
    summary = pipeline.generate_inline(config, tmp_path, sampler=fixture_sampler)
    ctx = pipeline.make_context(config, tmp_path)
    names = [b.name for b in stages.plan_batches(config.generation, config.seed)]
    expected = by_id(reference_questions(config, ctx, names))
    written = open_dataset(tmp_path).read("questions")
    # a few questions at least (seed 7 makes 9)
    assert written.num_rows == expected.num_rows == summary.counts["questions_total"] >= 8
    got = by_id(written.select(QUESTIONS_SCHEMA.names).cast(QUESTIONS_SCHEMA))
    for name in QUESTIONS_SCHEMA.names:
        assert got[name].equals(expected[name]), name
    episodes = open_dataset(tmp_path).read("episodes")
    assert episodes.num_rows == 150 and len(set(episodes["episode_id"].to_pylist())) == 150


def test_rows_are_written_in_batch_order(tmp_path, small_config) -> None:
    config = small_config()
    pipeline.generate_inline(config, tmp_path, sampler=fixture_sampler)
    order = {b.name: i for i, b in enumerate(stages.plan_batches(config.generation, config.seed))}
    store = BatchStore(pipeline.make_context(config, tmp_path).store_root)
    batch_of_episode = {e: order[name] for name in order for e in store.read_episodes([name])["episode_id"].to_pylist()}
    for split_name in ("train", "validation", "test"):
        table = open_dataset(tmp_path).read("questions")
        table = table.filter(pc.equal(table["split"], split_name))
        batches = [batch_of_episode[e] for e in table["episode_id"].to_pylist()]
        assert batches == sorted(batches)


def test_key_table_holds_only_the_selection_columns(tmp_path, small_config) -> None:
    config = small_config()
    pipeline.generate_inline(config, tmp_path, sampler=fixture_sampler)
    ctx = pipeline.make_context(config, tmp_path)
    names = [b.name for b in stages.plan_batches(config.generation, config.seed)]
    keys = stream.CandidateKeys(stream.key_columns(config)).read(ask.candidate_files(ctx.store, names, []))
    assert "program" not in keys.column_names and "structured_answer" not in keys.column_names
    assert set(config.split.stratify_by) <= set(keys.column_names)
    assert keys.num_rows == ctx.store.read_questions(names).num_rows
    assert keys[stream.BATCH].to_pylist() == sorted(keys[stream.BATCH].to_pylist())


def test_keys_merged_round_by_round_equal_the_files_merged_at_once(tmp_path, small_config) -> None:
    """The ask stage reads a longer list of files each round, then the selection reads them all: merging only
    the new files each time gives the table (dictionaries and codes included) of one reading of the whole
    list; a list that does not extend the last one is merged afresh."""
    config = small_config("generation.n_episodes=60", "generation.batch_size=6")
    pipeline.generate_inline(config, tmp_path, sampler=fixture_sampler)
    ctx = pipeline.make_context(config, tmp_path)
    files = ask.candidate_files(ctx.store, [b.name for b in stages.plan_batches(config.generation, config.seed)], [])
    columns = stream.key_columns(config)
    keys = stream.CandidateKeys(columns)
    for end in (3, 7, len(files)):
        merged = keys.read(files[:end])
        assert merged.equals(stream.CandidateKeys(columns).read(files[:end])), end
    reordered = [*files[1:4], files[0]]
    assert keys.read(reordered).equals(stream.CandidateKeys(columns).read(reordered))
    assert keys.read(files).equals(stream.CandidateKeys(columns).read(files))


def test_episode_statistics_streamed_by_shard_equal_the_whole_table(tmp_path, small_config) -> None:
    pipeline.generate_inline(small_config("output.rows_per_shard=4"), tmp_path, sampler=fixture_sampler)
    shards = list(open_dataset(tmp_path).iter_tables("episodes"))
    assert len(shards) > 3
    assert episode_stats(iter(shards)) == episode_stats(pa.concat_tables(shards))


def kept_keys(tmp_path, config) -> tuple[list, pa.Table, str]:
    """A run's candidate files (its own batches, no asks), the selection's kept keys and its config hash."""
    pipeline.generate_inline(config, tmp_path, sampler=fixture_sampler)
    ctx = pipeline.make_context(config, tmp_path)
    names = [b.name for b in stages.plan_batches(config.generation, config.seed)]
    files = ask.candidate_files(ctx.store, names, [])
    kept = stream.select(stream.CandidateKeys(stream.key_columns(config)).read(files), config, StageLog(), None)
    return files, kept, ctx.config_hash


def test_kept_rows_own_their_buffers(tmp_path, small_config) -> None:
    """A chunk goes to a worker process by pickle: it must not drag the whole kept table's buffers along."""
    import pickle

    files, kept, config_hash = kept_keys(tmp_path, small_config("generation.n_episodes=60"))
    for rows in stream.kept_rows(files, kept, config_hash):
        assert rows.num_rows < kept.num_rows  # else the check below could not tell
        for name in ("choices", "split"):
            column = pa.table({name: rows[name]})
            compact = column.take(pa.array(range(column.num_rows)))  # its own buffers, nothing more
            assert len(pickle.dumps(column)) <= len(pickle.dumps(compact)) + 64, name


def test_generate_and_the_paraphrase_command_draw_the_same_few_shot_pool(tmp_path, small_config, monkeypatch) -> None:
    """``generate`` reads its pool from the checkpoints, ``eqagen paraphrase`` from the dataset in memory: the
    same rows either way (bounded per query type, so a pool of the whole train split would differ)."""
    from eqagen.paraphrase import stage as paraphrase_stage

    monkeypatch.setattr(paraphrase_stage, "POOL_PER_QUERY_TYPE", 2)
    files, kept, config_hash = kept_keys(tmp_path, small_config("generation.n_episodes=60"))
    generated = sorted(r.question_id for r in stream.example_pool(files, kept, config_hash))
    dataset = pa.concat_tables(stream.kept_rows(files, kept, config_hash))
    commanded = sorted(r.question_id for r in paraphrase_stage.few_shot_pool(dataset))
    train = pc.sum(pc.equal(dataset["split"], "train")).as_py()
    assert generated == commanded and 0 < len(generated) < train
