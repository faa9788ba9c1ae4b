"""The shard writer: sorted rows, deterministic bytes, atomic files, checksums and the manifest."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.core import derive_rng
from eqagen.outputs.manifest import build_manifest, read_manifest, row_counts, write_manifest
from eqagen.outputs.schemas import QUESTIONS_SCHEMA, questions_table
from eqagen.outputs.shards import ShardWriter, shard_name, shard_prefix, sort_rows, write_shards
from tests.outputs.builders import make_episode, make_records


def records_table(n_episodes: int, seed: int = 0) -> pa.Table:
    records = []
    for i in range(n_episodes):
        ep = make_episode(seed, f"scene-{i % 3}", index=i)
        records += make_records(ep, derive_rng(seed, "q", i), n=4)
    return questions_table(records)


def shuffled_in_chunks(table: pa.Table, seed: int) -> pa.Table:
    """The same rows, permuted and split into many chunks (as threads would hand them over)."""
    order = derive_rng(seed, "perm").permutation(table.num_rows)
    t = table.take(pa.array(order))
    return pa.concat_tables([t.slice(i, 3) for i in range(0, t.num_rows, 3)])


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10_000), rows_per_shard=st.integers(1, 40))
def test_same_rows_in_any_order_give_identical_bytes(tmp_path_factory, seed, rows_per_shard) -> None:
    table = records_table(6)
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    infos_a = write_shards(table, a, "questions", "train", "question_id", rows_per_shard)
    infos_b = write_shards(shuffled_in_chunks(table, seed), b, "questions", "train", "question_id", rows_per_shard)
    assert [i.to_dict() for i in infos_a] == [i.to_dict() for i in infos_b]
    for info in infos_a:
        assert (a / info.path).read_bytes() == (b / info.path).read_bytes()


def test_shards_are_sorted_sized_and_checksummed(tmp_path) -> None:
    table = records_table(5)
    infos = write_shards(table, tmp_path, "questions", "val", "question_id", 7)
    n = len(infos)
    assert [i.path for i in infos] == [f"questions/val-{k:05d}-of-{n:05d}.parquet" for k in range(n)]
    left = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*"))
    assert left == ["questions", *sorted(i.path for i in infos)], "only final names: no working name, no temporary file"
    assert [i.rows for i in infos] == [7] * (len(infos) - 1) + [table.num_rows - 7 * (len(infos) - 1)]
    ids = []
    for info in infos:
        path = tmp_path / info.path
        assert hashlib.sha256(path.read_bytes()).hexdigest() == info.sha256
        part = pq.read_table(path, partitioning=None)
        assert part.schema.equals(QUESTIONS_SCHEMA, check_metadata=False)
        ids += part["question_id"].to_pylist()
    assert ids == sorted(table["question_id"].to_pylist())
    assert not list(tmp_path.rglob("*.tmp")), "no temporary file is left behind"


def test_shard_names_follow_the_hugging_face_convention() -> None:
    assert shard_name("train", 0, 3) == "train-00000-of-00003.parquet"
    assert shard_prefix("questions/val-00002-of-00003.parquet") == "val"
    with pytest.raises(ValueError):
        shard_prefix("questions/split=val/part-00000.parquet")
    with pytest.raises(ValueError, match="letters, digits"):
        ShardWriter(Path("."), "questions", "../x", 10, QUESTIONS_SCHEMA)  # a split value never makes a path


def test_empty_table_gets_one_empty_shard_with_the_schema(tmp_path) -> None:
    infos = write_shards(QUESTIONS_SCHEMA.empty_table(), tmp_path, "questions", "test", "question_id", 10)
    assert len(infos) == 1 and infos[0].rows == 0
    assert pq.read_schema(tmp_path / infos[0].path).equals(QUESTIONS_SCHEMA, check_metadata=False)


def test_duplicate_sort_keys_are_refused() -> None:
    table = records_table(2)
    with pytest.raises(ValueError, match="not unique"):
        sort_rows(pa.concat_tables([table, table]), "question_id")


def test_manifest_counts_rows_and_lists_every_shard(tmp_path) -> None:
    table = records_table(4)
    infos = write_shards(table.slice(0, 5), tmp_path, "questions", "train", "question_id", 2)
    infos += write_shards(table.slice(5), tmp_path, "questions", "val", "question_id", 100)
    manifest = build_manifest({"seed": 3}, 3, "abc", infos)
    write_manifest(manifest, tmp_path)
    back = read_manifest(tmp_path)
    assert back == json.loads(json.dumps(manifest))
    assert back["rows"]["questions"] == {"train": 5, "val": table.num_rows - 5}
    assert row_counts(infos)["questions_total"] == table.num_rows
    assert {s["path"] for s in back["shards"]} == {
        p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*.parquet")
    }
    assert {"eqagen", "pyarrow", "numpy", "python"} <= set(back["versions"])
    assert "time" not in json.dumps(back).lower(), "no timestamps: two runs write the same manifest"


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), rows_per_shard=st.integers(1, 40), cuts=st.lists(st.integers(0, 30), max_size=8))
def test_streamed_shards_equal_the_shards_of_the_whole_table(tmp_path_factory, seed, rows_per_shard, cuts) -> None:
    table = sort_rows(records_table(6, seed), "question_id")
    whole, streamed = tmp_path_factory.mktemp("whole"), tmp_path_factory.mktemp("streamed")
    expected = write_shards(table, whole, "questions", "train", "question_id", rows_per_shard)
    writer = ShardWriter(streamed, "questions", "train", rows_per_shard, QUESTIONS_SCHEMA)
    start = 0
    for size in [*cuts, table.num_rows]:  # any cut of the same rows, the rest last
        writer.add(table.slice(start, size))
        start += size
    assert writer.close() == expected  # same paths, row counts, sizes and sha256: the same bytes
    assert all(info.rows == rows_per_shard for info in expected[:-1]) and 0 < expected[-1].rows <= rows_per_shard


def test_a_streamed_empty_table_gets_one_empty_shard(tmp_path) -> None:
    infos = ShardWriter(tmp_path, "episodes", "episodes", 10, QUESTIONS_SCHEMA).close()
    assert [i.rows for i in infos] == [0]
    assert pq.read_schema(tmp_path / infos[0].path).equals(QUESTIONS_SCHEMA)
