"""The pqb-minecraft preset end to end (inline runner): every released question has environments with
different answers, each answer equally often; yes/no questions are blind-proof."""

from collections import defaultdict

import pyarrow.compute as pc
import pyarrow.dataset as ds
import pytest

from eqagen.config import load_config
from eqagen.curation.balance import blind_baseline
from eqagen.flows.pipeline import generate_inline


def _released(out) -> "ds.Table":
    return ds.dataset(out / "questions", format="parquet", partitioning="hive").to_table()


def _check_released(table, min_yes_no: int) -> None:
    answers: dict[str, dict[str, set]] = defaultdict(lambda: defaultdict(set))
    for key, scene, answer in zip(*(table.column(c).to_pylist() for c in ("balance_key", "scene_id", "answer_key"))):
        answers[key][answer].add(scene)
    for key, by_answer in answers.items():
        assert len(by_answer) >= 2, key
        assert len({len(s) for s in by_answer.values()}) == 1, key
    yes_no = table.filter(pc.equal(table.column("answer_type"), "yes/no"))
    assert yes_no.num_rows >= min_yes_no
    assert blind_baseline(yes_no)["accuracy"] <= 0.51
    assert set(table.column("family").to_pylist()) == {"blockworld"}


def test_pqb_minecraft_small_run(tmp_path):
    config = load_config("pqb-minecraft", ["generation.n_episodes=32", "runner.kind=inline", "runner.progress=false"])
    generate_inline(config, tmp_path / "out")
    _check_released(_released(tmp_path / "out"), min_yes_no=4)


@pytest.mark.slow
def test_pqb_minecraft_larger_run(tmp_path):
    config = load_config("pqb-minecraft", ["generation.n_episodes=160", "runner.kind=inline", "runner.progress=false"])
    generate_inline(config, tmp_path / "out")
    _check_released(_released(tmp_path / "out"), min_yes_no=20)
