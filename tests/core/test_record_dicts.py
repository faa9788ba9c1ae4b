"""The hand-written ``to_dict`` of the small record classes equals ``dataclasses.asdict`` (positions as lists)."""

from __future__ import annotations

from dataclasses import asdict

from hypothesis import given
from hypothesis import strategies as st

from eqagen.core.records import Paraphrase, ResultItem

words = st.text(max_size=12)
coords = st.tuples(*[st.floats(-50, 50, allow_nan=False)] * 3)


@given(words, words, coords, words, words)
def test_a_result_item_dict_is_its_fields(entity, type_, position, caption, value):
    item = ResultItem(entity, type_, position, caption, value)
    assert item.to_dict() == asdict(item) | {"position": list(position)}


@given(words, words, words, st.booleans(), st.integers(0, 9), words)
def test_a_paraphrase_dict_is_its_fields(question, answer, model, validated, attempts, reason):
    para = Paraphrase(question, answer, model, validated, attempts, reason)
    assert para.to_dict() == asdict(para)
