"""The explicit schemas hold every field of Episode and QARecord: rows round-trip through Parquet."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.core import QARecord, derive_rng
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
