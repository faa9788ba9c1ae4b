"""``eqagen resplit``: checksums verified, content unchanged, seeded, split files, the command line."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pytest

from eqagen.commands.resplit import register, resplit
from eqagen.core import ConfigError, DataFileError
from eqagen.curation.audit import build_stats
from eqagen.curation.balance import balance
from eqagen.curation.config import BalanceConfig, SplitConfig
from eqagen.curation.splits import split
from eqagen.curation.synthetic import candidate_pool
from eqagen.outputs.dataset import open_dataset
from eqagen.outputs.folder import write_dataset
from eqagen.outputs.manifest import read_manifest, write_json_atomic
from eqagen.outputs.schemas import QUESTIONS_SCHEMA, episodes_table
from tests.curation.curation_checks import assert_groups_whole, assert_split_targets
from tests.outputs.builders import make_episode

ROWS_PER_SHARD = 1500


def to_schema(table: pa.Table) -> pa.Table:
    """A pool's columns plus typed nulls for the columns the curation stages do not read."""
    for field in QUESTIONS_SCHEMA:
        if field.name not in table.column_names:
            table = table.append_column(field.name, pa.nulls(table.num_rows, field.type))
    return table.select(QUESTIONS_SCHEMA.names).cast(QUESTIONS_SCHEMA)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory) -> Path:
    """An output directory as `eqagen generate` writes it, from a synthetic balanced pool."""
    out_dir = tmp_path_factory.mktemp("generated")
    pool = candidate_pool(40000, 8, n_scenes=1000, n_signatures=4)
    questions, balance_stats = balance(to_schema(pool), BalanceConfig(), seed=8)
    questions, split_stats = split(questions, SplitConfig(), seed=8)
    episodes = episodes_table([make_episode(8, f"scene-{i:05d}", index=i) for i in range(3)])
    config = {"seed": 8, "output": {"rows_per_shard": ROWS_PER_SHARD}, "split": SplitConfig().model_dump(mode="json")}
    fields = {"config": config, "seed": 8, "config_hash": "cafe0123"}
    write_dataset(out_dir, questions, episodes, fields, ROWS_PER_SHARD)
    funnel = {"balance": {"in": pool.num_rows, "out": questions.num_rows, "rejected": balance_stats["rejected"]}}
    stats = build_stats(questions, episodes, funnel, {"balance": balance_stats, "split": split_stats})
    write_json_atomic(stats, out_dir / "stats.json")
    return out_dir


def questions_of(out_dir: Path) -> pa.Table:
    table = open_dataset(out_dir).read_exact("questions", QUESTIONS_SCHEMA)
    return table.take(pc.sort_indices(table, sort_keys=[("question_id", "ascending")]))


def shard_bytes(out_dir: Path) -> dict[str, bytes]:
    return {p.relative_to(out_dir).as_posix(): p.read_bytes() for p in sorted(out_dir.rglob("*.parquet"))}


def test_resplit_same_seed_same_bytes_other_seed_other_split(dataset, tmp_path):
    config = SplitConfig()
    resplit(dataset, tmp_path / "a", config, seed=5, report=False)
    resplit(dataset, tmp_path / "b", config, seed=5, report=False)
    resplit(dataset, tmp_path / "c", config, seed=6, report=False)
    assert shard_bytes(tmp_path / "a") == shard_bytes(tmp_path / "b")
    for name in ("manifest.json", "stats.json", "README.md"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes()
    a, c = questions_of(tmp_path / "a"), questions_of(tmp_path / "c")
    assert a["question_id"].equals(c["question_id"])
    assert a["split"].to_pylist() != c["split"].to_pylist()


def test_resplit_changes_only_the_split(dataset, tmp_path):
    stats = resplit(dataset, tmp_path / "out", SplitConfig(ratios=(0.8, 0.1, 0.1)), seed=3)
    before, after = questions_of(dataset), questions_of(tmp_path / "out")
    assert before.drop_columns(["split"]).equals(after.drop_columns(["split"]))
    assert before["split"].to_pylist() != after["split"].to_pylist()
    assert_groups_whole(after)
    assert_split_targets(after, (0.8, 0.1, 0.1), 0.5)
    assert stats["records"] == after.num_rows
    # episodes copied byte for byte; the new manifest's checksums describe the new files
    episodes = "episodes/episodes-00000-of-00001.parquet"
    assert (dataset / episodes).read_bytes() == (tmp_path / "out" / episodes).read_bytes()
    manifest = read_manifest(tmp_path / "out")
    assert manifest["rows"]["questions_total"] == after.num_rows
    assert manifest["config"]["split"]["ratios"] == [0.8, 0.1, 0.1]
    assert manifest["derived"] == [{"stage": "split", "seed": 3, "source_rows": read_manifest(dataset)["rows"]}]
    assert manifest["config_hash"] == read_manifest(dataset)["config_hash"]
    resplit(tmp_path / "out", tmp_path / "again", SplitConfig(), seed=1, report=False)  # its manifest verifies
    # a re-split of a re-split records both, oldest first: the first one's seed is not lost
    assert [d["seed"] for d in read_manifest(tmp_path / "again")["derived"]] == [3, 1]
    saved = json.loads((tmp_path / "out" / "stats.json").read_text())
    assert saved["stages"]["split"]["fraction"] == pytest.approx(stats["fraction"])
    assert (tmp_path / "out" / "report.html").stat().st_size > 0
    assert "split" in (tmp_path / "out" / "README.md").read_text()


def test_damaged_shard_is_refused(dataset, tmp_path):
    copy = tmp_path / "copy"
    resplit(dataset, copy, SplitConfig(), seed=0, report=False)
    shard = sorted((copy / "questions").glob("*.parquet"))[0]
    data = bytearray(shard.read_bytes())
    data[len(data) // 2] ^= 0xFF
    shard.write_bytes(bytes(data))
    with pytest.raises(DataFileError, match="checksum"):
        resplit(copy, tmp_path / "never", SplitConfig(), seed=0)
    assert not (tmp_path / "never").exists()
    shard.unlink()
    with pytest.raises(DataFileError, match="missing"):
        resplit(copy, tmp_path / "never", SplitConfig(), seed=0)
    assert not (tmp_path / "never").exists()


def test_output_directory_rules(dataset, tmp_path):
    with pytest.raises(DataFileError, match="inside the dataset folder"):
        resplit(dataset, dataset, SplitConfig(), seed=0)
    busy = tmp_path / "busy"
    busy.mkdir()
    (busy / "x").write_text("x")
    with pytest.raises(DataFileError, match="did not write"):
        resplit(dataset, busy, SplitConfig(), seed=0)
    assert sorted(p.name for p in busy.iterdir()) == ["x"], "a refused folder is left as it was"
    (tmp_path / "empty").mkdir()
    with pytest.raises(DataFileError, match="manifest"):
        resplit(tmp_path / "empty", tmp_path / "o", SplitConfig(), seed=0)


def parse(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="eqagen")
    register(parser.add_subparsers(dest="command"))
    return parser.parse_args(argv)


def test_command_line(dataset, tmp_path, capsys):
    args = parse(
        [
            "resplit",
            str(dataset),
            "--out",
            str(tmp_path / "cli"),
            "--ratios",
            "0.6,0.2,0.2",
            "--seed",
            "4",
            "--no-report",
        ]
    )
    assert args.func(args) == 0
    assert "re-split" in capsys.readouterr().out
    after = questions_of(tmp_path / "cli")
    assert_split_targets(after, (0.6, 0.2, 0.2), 0.5)
    args = parse(["resplit", str(dataset), "--out", str(tmp_path / "scene"), "--by", "scene", "--no-report"])
    assert args.func(args) == 0
    scene_split = {}
    for scene, name in zip(
        questions_of(tmp_path / "scene")["scene_id"].to_pylist(), questions_of(tmp_path / "scene")["split"].to_pylist()
    ):
        assert scene_split.setdefault(scene, name) == name
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps(scene_split))
    args = parse(
        ["resplit", str(dataset), "--out", str(tmp_path / "file"), "--split-file", str(mapping), "--no-report"]
    )
    assert args.func(args) == 0
    assert questions_of(tmp_path / "file")["split"].equals(questions_of(tmp_path / "scene")["split"])
    for bad in (
        ["--ratios", "0.7,0.3"],
        ["--ratios", "a,b,c"],
        ["--ratios", "0.5,0.2,0.2"],
        ["--unseen-fraction", "2"],
    ):
        args = parse(["resplit", str(dataset), "--out", str(tmp_path / "bad"), *bad])
        with pytest.raises(ConfigError):
            args.func(args)


def test_a_resplit_that_misses_the_unseen_fraction_is_an_error_unless_allowed(dataset, tmp_path):
    argv = ["resplit", str(dataset), "--out", str(tmp_path / "miss"), "--unseen-fraction", "0.95", "--no-report"]
    args = parse(argv)
    with pytest.raises(ConfigError) as err:
        args.func(args)
    assert err.value.key == "--unseen-fraction" and "outside [0.90, 1.00]" in err.value.problem
    assert "--allow-miss" in err.value.allowed
    assert not (tmp_path / "miss" / "manifest.json").exists() and not list((tmp_path / "miss").rglob("*.parquet"))
    args = parse([*argv, "--allow-miss"])
    assert args.func(args) == 0
    after = questions_of(tmp_path / "miss")
    train = {s for s, sp in zip(after["scene_id"].to_pylist(), after["split"].to_pylist()) if sp == "train"}
    unseen = [
        s not in train for s, sp in zip(after["scene_id"].to_pylist(), after["split"].to_pylist()) if sp == "test"
    ]
    assert sum(unseen) / len(unseen) < 0.9  # written as asked, and missing as the error said


def test_a_split_file_may_name_validation_val(dataset, tmp_path):
    scenes = sorted(set(questions_of(dataset)["scene_id"].to_pylist()))
    names = {scene: ("train", "val", "test")[i % 3] for i, scene in enumerate(scenes)}
    mapping = tmp_path / "map.json"
    mapping.write_text(json.dumps(names))
    args = parse(["resplit", str(dataset), "--out", str(tmp_path / "v"), "--split-file", str(mapping), "--no-report"])
    assert args.func(args) == 0
    after = questions_of(tmp_path / "v")
    assert set(after["split"].to_pylist()) == {"train", "validation", "test"}
    expected = [{"val": "validation"}.get(names[s], names[s]) for s in after["scene_id"].to_pylist()]
    assert after["split"].to_pylist() == expected
