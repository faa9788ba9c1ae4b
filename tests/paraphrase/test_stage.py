from eqagen.outputs.schemas import QUESTIONS_SCHEMA, questions_table
from eqagen.paraphrase.config import ParaphraseConfig
from eqagen.paraphrase.offline import offline_paraphrase
from eqagen.paraphrase.stage import paraphrase_table
from tests.paraphrase.fixtures import sample_records


def test_the_pipeline_stage_replaces_only_the_paraphrase_column(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    records = sample_records()
    table = questions_table(records)
    out, stats = paraphrase_table(table, ParaphraseConfig(), 9)
    assert out.schema.equals(QUESTIONS_SCHEMA) and out.num_rows == table.num_rows
    for name in QUESTIONS_SCHEMA.names:
        if name != "paraphrase":
            assert out[name].equals(table[name])
    expected = [offline_paraphrase(r, 9).paraphrase for r in records]
    assert out["paraphrase"].to_pylist() == [vars(p) for p in expected]
    assert stats["mode"] == "offline" and stats["validated"] == len(records)
    again, _ = paraphrase_table(table, ParaphraseConfig(model="offline"), 9)
    assert again.equals(out)  # same input and seed: same bytes
