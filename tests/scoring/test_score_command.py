"""``eqagen score`` on a dataset the engine made: the report's layout, each figure recomputed from the records,
gold at the top in each shape, the oracle, d_T, and one line with exit status 2 for each bad predictions file."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import binomtest

from eqagen.cli import main
from eqagen.scoring.predictions import SHAPES
from eqagen.scoring.reference import PerceptionNoise, gold_rows, oracle_rows
from tests.scoring.conftest import write_jsonl


def run_score(dataset: Path, predictions: Path, *extra: str) -> dict:
    out = predictions.with_suffix(".report.json")
    assert main(["score", str(dataset), str(predictions), "--json", str(out), *extra]) == 0
    return json.loads(out.read_text())


@pytest.mark.parametrize("shape", SHAPES)
def test_gold_in_each_shape_tops_every_metric(scored_dataset, split_records, tmp_path, shape):
    report = run_score(scored_dataset, write_jsonl(tmp_path / "gold.jsonl", gold_rows(split_records, shape)))
    assert set(report) == {"overall", "by", "missing", "chance_tests", "scorer"}
    overall = report["overall"]
    assert overall["n"] == len(split_records) and report["missing"] == []
    for metric in ("accuracy", "exact_match", "count_exact", "count_mra"):
        assert overall.get(metric, 1.0) == 1.0
    for metric in ("structured", "structured_no_grounding", "readback", "readback_no_grounding"):
        assert overall.get(metric, 5.0) == 5.0
    assert report["scorer"]["shape"] == shape and report["scorer"]["similarity"] == "token-jaccard"


def test_figures_recomputed_from_the_records(scored_dataset, split_records, tmp_path):
    """Always the first choice: accuracy, chance, the binomial test and each query type's cell, by hand."""
    rows = [{"question_id": r.question_id, "choice": 0} for r in split_records[3:]]
    report = run_score(scored_dataset, write_jsonl(tmp_path / "first.jsonl", rows))
    hits = [0.0] * 3 + [float(r.choices[0] == r.answer_key) for r in split_records[3:]]
    chances = [1 / len(r.choices) for r in split_records]
    assert report["overall"]["accuracy"] == pytest.approx(np.mean(hits), abs=1e-6)
    assert report["missing"] == [r.question_id for r in split_records[:3]]  # missing: named and scored as wrong
    test = report["chance_tests"]["overall"]
    assert test["hits"] == sum(hits) and test["chance"] == pytest.approx(np.mean(chances), abs=1e-6)
    assert test["p_value"] == pytest.approx(binomtest(int(sum(hits)), len(hits), np.mean(chances)).pvalue, rel=1e-5)
    by_type = report["by"]["query_type"]
    assert sum(c["n"] for c in by_type.values()) == len(split_records)
    for query, cell in by_type.items():
        mine = [h for h, r in zip(hits, split_records) if r.query_type == query]
        assert cell["n"] == len(mine) and cell["accuracy"] == pytest.approx(np.mean(mine), abs=1e-6)
        assert cell["accuracy_ci"][0] <= cell["accuracy"] <= cell["accuracy_ci"][1]
    assert set(report["by"]) == {"query_type", "filter_family", "filter_families", "n_filters", "grounded",
                                 "world_family", "openeqa_category", "scene"}  # fmt: skip
    assert report["by"]["scene"] == {"unseen": report["by"]["scene"]["unseen"]}  # the test scenes are not in train
    assert set(report["by"]["world_family"]) == {"household", "navigation"}


def test_the_oracle_without_noise_is_gold_and_noise_lowers_it(scored_dataset, split_records, episodes, tmp_path):
    exact = write_jsonl(tmp_path / "oracle.jsonl", oracle_rows(split_records, episodes, PerceptionNoise(), 0))
    assert (
        exact.read_text()
        == write_jsonl(tmp_path / "g.jsonl", gold_rows(split_records, "structured_answer")).read_text()
    )
    noisy = oracle_rows(split_records, episodes, PerceptionNoise.at(0.3), 0)
    assert noisy == oracle_rows(split_records, episodes, PerceptionNoise.at(0.3), 0)  # seeded
    report = run_score(scored_dataset, write_jsonl(tmp_path / "noisy.jsonl", noisy))
    assert 1.0 < report["overall"]["structured"] < 5.0
    assert report["overall"]["accuracy"] < 1.0


def test_d_t_from_a_final_position(scored_dataset, split_records, episodes, tmp_path):
    from eqagen.scoring.navigation import goal_position

    nav = [r for r in split_records if r.family == "navigation"]
    goals = {r.question_id: goal_position(episodes[r.episode_id]) for r in nav}
    rows = [
        {"question_id": q, "answer": "x", "final_position": [g[0] + 3.0, g[1], g[2] + 4.0]} for q, g in goals.items()
    ]
    report = run_score(scored_dataset, write_jsonl(tmp_path / "nav.jsonl", rows))
    assert report["overall"]["d_t"] == pytest.approx(5.0)
    assert report["overall"]["d_t_n"] == len(nav)
    native = episodes[nav[0].episode_id].task["goal_position"]  # the goal as the episode task stores it
    assert np.allclose(episodes[nav[0].episode_id].frame.to_native(np.array([goals[nav[0].question_id]])), native)


def test_the_html_report(scored_dataset, split_records, tmp_path):
    predictions = write_jsonl(tmp_path / "gold.jsonl", gold_rows(split_records, "choice"))
    page = tmp_path / "score.html"
    assert main(["score", str(scored_dataset), str(predictions), "--report", str(page)]) == 0
    html = page.read_text()
    assert "By query type" in html and "Accuracy against chance" in html and "gold.jsonl" in html


def bad_files(records) -> dict[str, tuple[str, list | str, str]]:
    """name -> (file name, rows or raw text, what the one line must say)."""
    q = [r.question_id for r in records]
    return {
        "unknown id": ("a.jsonl", [{"question_id": q[0], "choice": 0}, {"question_id": "nope", "choice": 0}],
                       "[row 2]: 1 question id not in the dataset's test split: 'nope' (row 2, not in the dataset)"),
        "train id": ("a.jsonl", [{"question_id": "TRAIN", "choice": 0}], "(row 1, in train)"),
        "duplicate": ("a.jsonl", [{"question_id": q[0], "choice": 0}, {"question_id": q[0], "choice": 1}],
                      f"[row 2]: question_id '{q[0]}' again (first at row 1)"),
        "wrong type": ("a.jsonl", [{"question_id": q[0], "answer": 3}], "[row 1: answer]: 3 is not text"),
        "bad point": ("a.jsonl", [{"question_id": q[0], "structured_answer": [{"anchor": [1, 2], "result": []}]}],
                      "[row 1: structured_answer[0].anchor]: [1, 2] is not a point"),
        "empty": ("a.jsonl", "\n", "holds no predictions"),
        "mixed": ("a.jsonl", [{"question_id": q[0], "choice": 0}, {"question_id": q[1], "answer": "no"}],
                  "[row 2]: a prediction of shape 'answer', but row 1's is 'choice'"),
        "two shapes": ("a.jsonl", [{"question_id": q[0], "choice": 0, "answer": "x"}], "has choice and answer"),
        "index": ("a.jsonl", [{"question_id": q[0], "choice": 7}], "[row 1: choice]: index 7 is out of range"),
        "not a choice": ("a.jsonl", [{"question_id": q[0], "choice": "purple"}], "'purple' is not one of the choices"),
        "not json": ("a.jsonl", '{"question_id": ', "[row 1]: not valid JSON"),
        "json object": ("a.json", '{"question_id": "x"}', "holds a JSON dict, not a list of predictions"),
        "format": ("a.csv", "question_id,choice\n", "unknown predictions format '.csv'"),
    }  # fmt: skip


@pytest.mark.parametrize("case", list(bad_files([type("R", (), {"question_id": "q"})()] * 2)))
def test_a_bad_predictions_file_is_one_line_and_exit_2(scored_dataset, split_records, tmp_path, capsys, case):
    from eqagen.outputs.readers import read_questions

    name, content, expected = bad_files(split_records)[case]
    train_id = read_questions(scored_dataset, "train")[0].question_id
    path = tmp_path / name
    if isinstance(content, str):
        path.write_text(content)
    else:
        write_jsonl(path, [{**r, "question_id": train_id} if r["question_id"] == "TRAIN" else r for r in content])
    assert main(["score", str(scored_dataset), str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and err.startswith(f"eqagen: error: {path}")
    assert expected in err and "; fix: " in err


def test_a_split_the_dataset_lacks_names_the_ones_it_has(scored_dataset, split_records, tmp_path, capsys):
    predictions = write_jsonl(tmp_path / "gold.jsonl", gold_rows(split_records, "choice"))
    assert main(["score", str(scored_dataset), str(predictions), "--split", "validation"]) == 2
    assert "the dataset has no split 'validation' (allowed: test, train)" in capsys.readouterr().err


def test_a_changed_shard_is_refused_before_scoring(scored_dataset, split_records, tmp_path, capsys):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(scored_dataset, copy)
    shard = next((copy / "questions").glob("test-*.parquet"))
    shard.write_bytes(shard.read_bytes()[:-8] + b"\0" * 8)
    predictions = write_jsonl(tmp_path / "gold.jsonl", gold_rows(split_records, "choice"))
    assert main(["score", str(copy), str(predictions)]) == 2
    assert "sha256" in capsys.readouterr().err


def test_parquet_and_openeqas_json_list_are_read_as_they_are(scored_dataset, split_records, tmp_path):
    import pyarrow as pa
    import pyarrow.parquet as pq

    rows = gold_rows(split_records, "structured_answer")
    pq.write_table(pa.Table.from_pylist(rows), tmp_path / "gold.parquet")
    report = run_score(scored_dataset, tmp_path / "gold.parquet")
    assert report["overall"]["structured"] == 5.0 and report["scorer"]["shape"] == "structured_answer"
    openeqa = tmp_path / "openeqa-predictions.json"
    openeqa.write_text(json.dumps([{"question_id": r.question_id, "answer": r.answer} for r in split_records[:5]]))
    report = run_score(scored_dataset, openeqa)
    assert report["overall"]["exact_match"] == pytest.approx(5 / len(split_records), abs=1e-6)
    assert len(report["missing"]) == len(split_records) - 5


def test_a_similarity_model_without_its_package_is_an_error(scored_dataset, split_records, tmp_path, capsys):
    try:
        import sentence_transformers  # noqa: F401
    except ImportError:
        pass
    else:
        pytest.skip("sentence-transformers is installed here")
    predictions = write_jsonl(tmp_path / "gold.jsonl", gold_rows(split_records, "structured_answer"))
    assert main(["score", str(scored_dataset), str(predictions), "--similarity", "all-MiniLM-L6-v2"]) == 2
    assert "needs the sentence-transformers package" in capsys.readouterr().err
