"""The audit's statistics equal plain recounts, and its checks catch tampering."""

from __future__ import annotations

import json
from collections import Counter

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from eqagen.commands.audit_run import audit_dir, compare_with, openeqa_stats, recomputed_stats
from eqagen.core import DataFileError
from eqagen.curation.audit import build_stats
from eqagen.outputs.dataset import load_dataset_folder
from tests.curation.audit_fixtures import write_dataset


@pytest.fixture()
def dataset(tmp_path):
    out = write_dataset(tmp_path / "ds", seed=3)
    q, e = load_dataset_folder(out).read("questions"), load_dataset_folder(out).read("episodes")
    (out / "stats.json").write_text(json.dumps(build_stats(q, e, {"programs": {"in": 9, "out": 4}})))
    return out


def _rows(out):
    return load_dataset_folder(out).read("questions").to_pylist()


def test_distributions_equal_plain_recounts(dataset):
    rows, stats = _rows(dataset), recomputed_stats(load_dataset_folder(dataset))["questions"]
    d = stats["distributions"]
    assert stats["questions"] == len(rows)
    assert d["query_type"] == dict(Counter(r["query_type"] for r in rows))
    assert d["filter_family"] == dict(Counter(f for r in rows for f in r["predicate_families"]))
    assert d["n_filters"] == {str(k): v for k, v in Counter(r["n_filters"] for r in rows).items()}
    assert d["grounded_share"] == pytest.approx(sum(r["grounded"] for r in rows) / len(rows), abs=1e-6)
    assert stats["per_split"] == dict(Counter(r["split"] for r in rows))
    words = [len(r["question"].split()) for r in rows]
    assert d["question_words"]["mean"] == pytest.approx(sum(words) / len(words), abs=1e-3)


def test_blind_baseline_is_majority_answer_accuracy(dataset):
    rows = _rows(dataset)
    groups: dict[str, Counter] = {}
    for r in rows:
        groups.setdefault(r["balance_key"], Counter())[r["answer_key"]] += 1
    expected = sum(c.most_common(1)[0][1] for c in groups.values()) / len(rows)
    bal = recomputed_stats(load_dataset_folder(dataset))["questions"]["balance"]
    assert bal["blind_baseline"] == pytest.approx(expected, abs=1e-6)
    assert bal["groups"] == len(groups)


def test_leakage_counts_scenes_and_questions_shared_between_splits(dataset):
    rows = _rows(dataset)
    by_split = {s: {r["scene_id"] for r in rows if r["split"] == s} for s in ("train", "validation", "test")}
    leak = recomputed_stats(load_dataset_folder(dataset))["questions"]["leakage"]
    assert leak["scene_overlap"]["test&train"] == len(by_split["test"] & by_split["train"])
    keys = {s: {r["balance_key"] for r in rows if r["split"] == s} for s in ("train", "validation")}
    assert leak["balance_keys_in_several_splits"]["train&validation"] == len(keys["train"] & keys["validation"])


def test_episode_stats_recounted(dataset):
    eps = load_dataset_folder(dataset).read("episodes").to_pylist()
    stats = recomputed_stats(load_dataset_folder(dataset))["episodes"]
    actions = [ok for e in eps for ok in e["steps"]["success"][1:]]
    assert stats["action_failure_rate"] == pytest.approx(1 - sum(actions) / len(actions), abs=1e-6)
    assert stats["episodes"] == len(eps)
    assert stats["task_success_rate"] == pytest.approx(sum(e["meta"]["success"] for e in eps) / len(eps), abs=1e-6)


def test_audit_passes_untouched_and_catches_a_changed_shard(dataset):
    _, checks = audit_dir(dataset)
    by_name = {c.name: c for c in checks}
    assert by_name["shard checksums match the manifest"].ok
    assert by_name["stats.json equals the statistics recomputed from the shards"].ok
    # Drop one row of a shard: its checksum and the recorded statistics no longer match.
    path = next((dataset / "questions").rglob("*.parquet"))
    table = pq.read_table(path, partitioning=None)
    pq.write_table(table.slice(1), path)
    _, checks = audit_dir(dataset)
    failed = {c.name for c in checks if not c.ok}
    assert "shard checksums match the manifest" in failed
    assert "stats.json equals the statistics recomputed from the shards" in failed


def test_files_outside_the_tables_are_not_shards(dataset):
    stray = dataset / ".eqagen" / "batches" / "b0" / "questions.parquet"
    stray.parent.mkdir(parents=True)
    stray.write_bytes(b"checkpoint")
    _, checks = audit_dir(dataset)
    assert all(c.ok for c in checks if "shards" in c.name)
    extra = dataset / "questions" / "train-00001-of-00002.parquet"
    extra.write_bytes((dataset / "questions" / "validation-00000-of-00001.parquet").read_bytes())
    _, checks = audit_dir(dataset)
    assert {c.name for c in checks if not c.ok} >= {"no unlisted shards"}


def test_not_a_dataset_names_the_missing_file(tmp_path):
    with pytest.raises(DataFileError, match=r"manifest\.json"):
        audit_dir(tmp_path)


@pytest.mark.realdata
def test_against_openeqa_prints_categories_side_by_side(dataset, realdata):
    path = realdata / "open_eqa" / "open-eqa-v0.json"
    theirs = openeqa_stats(path)
    assert theirs["questions"] == 1636 and len(theirs["openeqa_category"]) == 7
    text = compare_with(recomputed_stats(load_dataset_folder(dataset)), path)
    for category in theirs["openeqa_category"]:
        share = theirs["openeqa_category"][category] / 1636
        line = next(line for line in text.splitlines() if line.strip().startswith(category))
        assert line.split()[-1] == f"{share:.3f}"


def test_a_manifest_whose_row_counts_were_edited_fails_the_audit(dataset, capsys):
    from eqagen.cli import main

    before = {c.name for c in audit_dir(dataset)[1] if not c.ok}  # the random fixture is not balanced
    assert "row counts match the manifest" not in before
    manifest = json.loads((dataset / "manifest.json").read_text())
    manifest["shards"][0]["rows"] += 5  # a shard's count, and the totals to match: only the shard can tell
    manifest["rows"]["questions"]["test"] += 5
    manifest["rows"]["questions_total"] += 5
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    _, checks = audit_dir(dataset)
    failed = {c.name: c.detail for c in checks if not c.ok}
    assert set(failed) - before == {"row counts match the manifest"}
    assert (
        "holds" in failed["row counts match the manifest"]
        and manifest["shards"][0]["path"] in failed["row counts match the manifest"]
    )
    assert main(["audit", str(dataset)]) == 1
    assert "FAILED  row counts match the manifest" in capsys.readouterr().out
    manifest["rows"]["episodes"] += 1  # a total alone
    (dataset / "manifest.json").write_text(json.dumps(manifest))
    assert (
        "rows.episodes is 21, its shards hold 20"
        in {c.name: c.detail for c in audit_dir(dataset)[1]}["row counts match the manifest"]
    )


def test_chance_is_counted_per_record_as_the_blind_baseline_is():
    """A group of 2 answers x 3 records and one of 4 answers x 1 record: chance is 1/2 for six records and
    1/4 for four, (6/2 + 4/4) / 10 = 0.4 (not the mean over groups, 0.375), equal to the majority baseline
    of exactly balanced groups."""
    from eqagen.curation.audit import balance_stats

    keys = ["a"] * 6 + ["b"] * 4
    answers = ["x", "y"] * 3 + ["p", "q", "r", "s"]
    table = pa.table({"balance_key": keys, "answer_key": answers, "answer_type": ["color"] * 10})
    stats = balance_stats(table)
    assert stats["chance_level"] == 0.4 == stats["blind_baseline"]
