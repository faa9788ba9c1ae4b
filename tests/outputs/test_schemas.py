"""The explicit schemas hold every field of Episode and QARecord: rows round-trip through Parquet."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.core import FilterSpec, Program, QARecord, QuerySpec, derive_rng
from eqagen.outputs import schemas
from eqagen.outputs.readers import episode_from_row
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA, episodes_table, questions_table
from tests.outputs.builders import make_episode, make_records


def assert_same_episode(a, b) -> None:
    assert a.to_dict() == b.to_dict()
    for name in a.timeline.fields:
        full_a, full_b = a.timeline[name], b.timeline[name]
        assert full_a.dtype == full_b.dtype
        np.testing.assert_array_equal(full_a, full_b)


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), n_steps=st.integers(1, 40), n_entities=st.integers(1, 8))
def test_episode_round_trips_through_parquet(tmp_path_factory, seed, n_steps, n_entities) -> None:
    ep = make_episode(seed, n_steps=n_steps, n_entities=n_entities)
    path = tmp_path_factory.mktemp("ep") / "e.parquet"
    pq.write_table(episodes_table([ep]), path)
    back = pq.read_table(path)
    assert back.schema.equals(EPISODES_SCHEMA, check_metadata=False)
    assert_same_episode(ep, episode_from_row(back.to_pylist()[0]))


def test_episode_rows_read_back_the_episodes_to_pylist_reads(tmp_path) -> None:
    """``episode_rows`` (numbers as arrays) gives the episodes ``to_pylist`` gives, field by field and dtype by
    dtype, for every world family, from a table in several chunks and from a slice of one."""
    from tests.predicates.helpers import family_episodes

    episodes = list(family_episodes())
    pq.write_table(episodes_table(episodes), tmp_path / "e.parquet", row_group_size=4)
    table = pa.concat_tables([pq.read_table(tmp_path / "e.parquet")] * 2).slice(3, 2 * len(episodes) - 5)
    assert table.column("timeline").num_chunks > 1
    fast = schemas.episode_rows(table)
    assert len(fast) == table.num_rows
    for row, slow in zip(fast, table.to_pylist(), strict=True):
        assert isinstance(row["steps"]["pose"], np.ndarray)
        assert isinstance(row["timeline"]["fields"][0]["initial"], np.ndarray)
        assert_same_episode(episode_from_row(slow), episode_from_row(row))
        assert row["meta"] == slow["meta"] and row["entities"] == slow["entities"]


def test_episode_rows_keep_a_null_number_as_to_pylist_does() -> None:
    """A list with a null number is read as ``to_pylist`` reads it (a number array would hide the null)."""
    t = pa.list_(pa.float64())
    fields = pa.array([[{"initial": [1.0, None]}], [{"initial": [2.0]}]], pa.list_(pa.struct([("initial", t)])))
    table = pa.table({"timeline": pa.StructArray.from_arrays([fields], names=["fields"])})
    assert schemas.episode_rows(table) == table.to_pylist()


def test_answers_recomputed_from_the_stored_episode(tmp_path) -> None:
    """The fixture's answers ('how many <color> objects were visible') follow from the shard alone."""
    ep = make_episode(7, n_steps=30, n_entities=8)
    records = make_records(ep, derive_rng(7, "q"), n=4)
    pq.write_table(episodes_table([ep]), tmp_path / "e.parquet")
    pq.write_table(questions_table(records), tmp_path / "q.parquet")
    stored = episode_from_row(pq.read_table(tmp_path / "e.parquet").to_pylist()[0])
    visible = stored.timeline["visible"].any(axis=0)
    for row in pq.read_table(tmp_path / "q.parquet").to_pylist():
        color = row["program"]["filters"][0]["value"]
        expected = sum(
            1 for j in range(stored.n_entities) if visible[j] and stored.entities.attributes[j]["color"] == color
        )
        assert row["answer_key"] == str(expected)


@pytest.mark.parametrize("seed", range(6))
def test_question_records_round_trip(tmp_path, seed) -> None:
    ep = make_episode(seed)
    records = make_records(ep, derive_rng(seed, "q"), n=6)
    pq.write_table(questions_table(records), tmp_path / "q.parquet")
    table = pq.read_table(tmp_path / "q.parquet")
    assert table.schema.equals(QUESTIONS_SCHEMA, check_metadata=False)
    back = [QARecord.from_dict(r) for r in table.to_pylist()]
    assert [r.to_dict() for r in back] == [r.to_dict() for r in records]
    assert [r.question_id for r in back] == [r.question_id for r in records]


def test_schemas_are_explicit_even_for_empty_and_null_values() -> None:
    """An empty batch still has the full schema (nothing is inferred from the first row)."""
    assert questions_table([]).schema == QUESTIONS_SCHEMA
    assert episodes_table([]).schema == EPISODES_SCHEMA
    ep = make_episode(1)
    records = make_records(ep, derive_rng(1, "q"), n=2)
    table = questions_table(records)
    anchors = table["structured_answer"].to_pylist()
    assert anchors[0][0]["anchor"] is None and anchors[1][0]["anchor"] is not None
    assert table.schema.field("n_filters").type == pa.int32()


def test_unstorable_timeline_dtype_is_refused() -> None:
    ep = make_episode(2)
    ep.timeline.initial["big"] = np.zeros(ep.n_entities, np.int64)
    with pytest.raises(TypeError, match="big"):
        episodes_table([ep])


# Typed nested columns (docs/pipeline.md, "Nested columns"): program args, task, meta, entity attributes.


def _values(t: pa.DataType, depth: int = 0) -> st.SearchStrategy:
    """Values as a writer holds them for the declared type ``t``: dicts with any subset of a struct's
    fields, dicts with any keys for open mappings (entries), lists, non-null scalars."""
    if schemas._is_entries(t):
        inner = t.value_type.field("value").type
        return st.dictionaries(st.text(max_size=6), _values(inner, depth + 1), max_size=3)
    if pa.types.is_struct(t):
        return st.fixed_dictionaries({}, optional={f.name: _values(f.type, depth + 1) for f in t})
    if pa.types.is_list(t):
        return st.lists(_values(t.value_type, depth + 1), max_size=3)
    scalars = {
        pa.string(): st.text(max_size=8),
        pa.bool_(): st.booleans(),
        pa.int32(): st.integers(-(2**31), 2**31 - 1),
        pa.int64(): st.integers(-(2**63), 2**63 - 1),
        pa.float64(): st.floats(allow_nan=False),
    }
    return scalars[t]


NESTED = {"task": schemas.TASK_TYPE, "meta": schemas.META_TYPE, "attributes": schemas.ATTRIBUTES_TYPE}


@settings(max_examples=20, deadline=None)
@given(data=st.data())
def test_nested_values_round_trip_through_arrow(data) -> None:
    """to_column then from_column is the identity on every value a writer can hold, through Arrow."""
    for name, t in NESTED.items():
        value = data.draw(_values(t), label=name)
        stored = pa.array([schemas.to_column(value, t, name)], type=t)
        assert schemas.from_column(stored.to_pylist()[0], t) == value


_FILTER_ARGS = st.fixed_dictionaries(
    {},
    optional={
        "event": st.integers(0, 2**31 - 1),
        "event2": st.integers(0, 2**31 - 1),
        "receptacle": st.text(max_size=8),
    },
)
_QUERY_ARGS = st.fixed_dictionaries({}, optional={"kind": st.text(max_size=8), "subject": st.text(max_size=8)})


@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), args=st.lists(st.tuples(_FILTER_ARGS, _QUERY_ARGS), min_size=1, max_size=12))
def test_program_args_round_trip_through_parquet(tmp_path_factory, seed, args) -> None:
    """Records with any declared program args come back equal, with the same question ids (args take part
    in a program's identity)."""
    ep = make_episode(seed % 50)
    base = make_records(ep, derive_rng(seed, "q"), n=len(args))
    records = []
    for r, (fargs, qargs) in zip(base, args, strict=True):
        f = r.program.filters[0]
        program = Program((FilterSpec(f.family, f.key, f.value, fargs),), QuerySpec("count", "", qargs))
        records.append(replace(r, program=program))
    path = tmp_path_factory.mktemp("q") / "q.parquet"
    pq.write_table(questions_table(records), path)
    back = [QARecord.from_dict(row) for row in pq.read_table(path).to_pylist()]
    assert [b.program for b in back] == [r.program for r in records]
    assert [b.question_id for b in back] == [r.question_id for r in records]


def test_nested_columns_are_typed_in_the_shard(tmp_path) -> None:
    """A reader of the shards (pyarrow, pandas) gets dicts, ints and bools, not JSON text."""
    ep = make_episode(3, n_steps=6, n_entities=3)
    records = make_records(ep, derive_rng(3, "q"), n=2)
    pq.write_table(episodes_table([ep]), tmp_path / "e.parquet")
    pq.write_table(questions_table(records), tmp_path / "q.parquet")
    episodes, questions = pq.read_table(tmp_path / "e.parquet"), pq.read_table(tmp_path / "q.parquet")
    assert episodes.schema.field("meta").type == schemas.META_TYPE
    row = episodes.to_pylist()[0]
    assert row["meta"]["success"] is ep.meta["success"] and row["meta"]["stop_reason"] == "success"
    assert row["task"]["object_target"] == ep.task["object_target"] and row["task"]["biome"] is None
    assert row["entities"]["attributes"][0] == [
        {"key": k, "value": v} for k, v in sorted(ep.entities.attributes[0].items())
    ]
    args = questions.to_pandas()["program"][1]["filters"][0]["args"]
    assert args == {"event": 1, "event2": None, "receptacle": None, "figure": None}


def test_an_undeclared_nested_key_is_refused() -> None:
    """pyarrow drops a struct key it does not know without a word; the writer names it instead."""
    ep = make_episode(4)
    ep.meta["bogus"] = 1
    with pytest.raises(schemas.UndeclaredFieldError, match=r"meta\.bogus: .*fix: declare it"):
        episodes_table([ep])
    record = make_records(make_episode(4), derive_rng(4, "q"), n=1)[0]
    f = record.program.filters[0]
    odd = replace(record, program=Program((FilterSpec(f.family, f.key, f.value, {"i": 1}),), record.program.query))
    with pytest.raises(schemas.UndeclaredFieldError, match=r"program\.filters\.args\.i"):
        questions_table([odd])


def _without_nulls(value):
    """A value as the shards give it back: a null field is an absent key."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list | tuple):
        return [_without_nulls(v) for v in value]
    return value


@pytest.mark.slow  # a real replay: about a second
def test_a_real_alfred_replay_round_trips_its_task_and_meta(realdata, tmp_path) -> None:
    """ALFRED's own records (the scene's object poses as {x, y, z}, its TeleportFull, pddl_params) and the
    replay's fidelity survive the typed columns: what a replay bundle is rebuilt from."""
    from eqagen.generators.household.alfred.reader import read_layout, read_trajectory
    from eqagen.generators.household.alfred.replay import replay_trajectory

    root = realdata / "alfred"
    paths = sorted((root / "json_2.1.0" / "valid_seen").glob("pick_and_place_simple-*/*/traj_data.json"))
    if not paths:
        pytest.skip("real ALFRED data not found under realdata/alfred")
    traj = read_trajectory(paths[0])
    ep, _ = replay_trajectory(traj, read_layout(traj.floor_plan, root / "layouts"), paths[0].parent.name)
    pq.write_table(episodes_table([ep]), tmp_path / "e.parquet")
    back = episode_from_row(pq.read_table(tmp_path / "e.parquet").to_pylist()[0])
    assert back.meta["alfred_scene"]["object_poses"][0]["position"].keys() == {"x", "y", "z"}
    assert back.meta["alfred_task"]["pddl_params"]["object_target"] == traj.pddl_params["object_target"]
    assert _without_nulls(back.meta) == _without_nulls(ep.meta) and back.task == _without_nulls(ep.task)
    assert back.entities.attributes == ep.entities.attributes
