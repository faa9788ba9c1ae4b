from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.paraphrase.config import ParaphraseConfig
from eqagen.paraphrase.offline import offline_paraphrase, variant_family, variants
from eqagen.paraphrase.runner import paraphrase_records
from eqagen.paraphrase.validator import check_paraphrase
from tests.paraphrase.fixtures import generated_records, sample_records


def test_every_offline_family_has_several_variants():
    for family in ("generic", "count", "yes_no", "list", "location", "property"):
        questions, answers = variants(family)
        assert len(questions) >= 3 and len(answers) >= 3


def test_offline_paraphrases_of_all_sample_items_are_validated_and_differ_from_the_template():
    for record in sample_records():
        out = offline_paraphrase(record, seed=0)
        assert out.paraphrase.validated, (record.question, out.reason)
        assert out.paraphrase.model == "offline"
        assert out.paraphrase.question != record.question
        assert check_paraphrase(record, out.paraphrase.question, out.paraphrase.answer).ok


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**31 - 1))
def test_offline_is_deterministic_per_seed_and_always_validated(seed):
    records = generated_records(6, seed=seed % 1000)
    first = [offline_paraphrase(r, seed) for r in records]
    again = [offline_paraphrase(r, seed) for r in records]
    assert first == again
    assert all(o.paraphrase.validated for o in first)


def test_the_seed_chooses_among_variants():
    record = sample_records()[0]
    assert variant_family(record) == "count"
    texts = {(o.paraphrase.question, o.paraphrase.answer) for o in (offline_paraphrase(record, s) for s in range(20))}
    assert len(texts) >= 4


def test_with_no_endpoint_configured_the_stage_runs_offline(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    records = sample_records()
    result = paraphrase_records(records, ParaphraseConfig(), seed=5)
    assert result.stats["mode"] == "offline"
    assert result.stats["validated"] == len(records)
    assert result.paraphrases == [offline_paraphrase(r, 5).paraphrase for r in records]
    assert [c["model"] for c in result.column()] == ["offline"] * len(records)
