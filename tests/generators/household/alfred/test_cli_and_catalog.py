"""`eqagen alfred replay/index/film` end to end on real data, and the scene catalog's contents."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from eqagen.cli import main
from eqagen.generators.household.alfred.catalog import SceneCatalog, build_catalog
from eqagen.generators.household.alfred.reader import iter_trajectory_paths, parse_object_id, read_trajectory

from .conftest import first_of_type


@pytest.fixture
def small_root(valid_seen: Path, tmp_path: Path) -> Path:
    """Three real trajectories copied into a nested root (paths in fidelity.json are relative to it)."""
    root = tmp_path / "root"
    for task in ("pick_and_place_simple", "look_at_obj_in_light", "pick_clean_then_place_in_recep"):
        src = first_of_type(valid_seen, task)
        dest = root / "valid" / src.parent.parent.name / src.parent.name / "traj_data.json"
        dest.parent.mkdir(parents=True)
        shutil.copy(src, dest)
    return root


@pytest.mark.realdata
def test_replay_command_writes_episodes_and_fidelity(small_root: Path, layouts: Path, tmp_path: Path, capsys):
    out = tmp_path / "out"
    assert main(["alfred", "replay", str(small_root), "--out", str(out), "--layouts", str(layouts)]) == 0
    fidelity = json.loads((out / "fidelity.json").read_text())
    assert len(fidelity) == 3
    for entry in fidelity:
        assert set(entry) >= {"trajectory", "task_type", "actions_ok", "goal_ok", "reason"}
        assert (small_root / entry["trajectory"]).is_file() and entry["trajectory"].startswith("valid/")
        assert entry["actions_ok"] and entry["goal_ok"] and entry["reason"] is None
    table = pq.read_table(out / "episodes" / "part-00000.parquet")
    assert table.num_rows == 3 and set(table.column("backend").to_pylist()) == {"alfred"}
    summary = json.loads((out / "fidelity_summary.json").read_text())
    assert summary["all"] == {"n": 3, "actions_ok": 3, "goal_ok": 3, "actions_ok_rate": 1.0, "goal_ok_rate": 1.0}
    assert "look_at_obj_in_light" in capsys.readouterr().out


@pytest.mark.realdata
def test_replay_command_without_layouts_says_where_to_get_them(small_root: Path, tmp_path: Path, monkeypatch, capsys):
    monkeypatch.delenv("EQAGEN_REALDATA", raising=False)
    code = main(["alfred", "replay", str(small_root), "--out", str(tmp_path / "o")])
    assert code != 0 and "gen/layouts" in capsys.readouterr().err


@pytest.mark.realdata
def test_index_command_catalogs_each_floor_plan(small_root: Path, layouts: Path, tmp_path: Path):
    out = tmp_path / "cat"
    assert main(["alfred", "index", str(small_root), "--out", str(out), "--layouts", str(layouts)]) == 0
    index = json.loads((out / "index.json").read_text())
    trajs = [read_trajectory(p) for p in iter_trajectory_paths(small_root)]
    assert index["n_trajectories"] == 3 and index["n_floor_plans"] == len({t.floor_plan for t in trajs})
    cat = SceneCatalog.read(out)
    for t in trajs:
        entry = cat.entries[t.floor_plan]
        named = {a[k] for a in t.low_actions for k in ("objectId", "receptacleObjectId") if k in a}
        faucets = {o for o in named if parse_object_id(o).object_type in ("Faucet", "DeskLamp", "FloorLamp")}
        assert faucets <= set(entry["static_objects"])  # what the expert touched is remembered
        assert {p.object_type for p in t.object_poses} <= set(entry["movable_types"])
        cov = entry["coverage"]
        assert 0 < cov["fraction"] <= 1 and cov["types_known"] + len(cov["missing_types"]) == cov["layout_types"]


@pytest.mark.realdata
def test_catalog_over_both_splits_fills_in_faucets_and_cells(alfred_root: Path, layouts: Path):
    entries = build_catalog(alfred_root / "json_2.1.0", layouts)
    assert sum(e["n_trajectories"] for e in entries.values()) == 734
    with_faucet = [fp for fp, e in entries.items() if any(o.startswith("Faucet|") for o in e["static_objects"])]
    assert len(with_faucet) >= 10
    assert all(len(e["cells"]) > 0 for e in entries.values())


@pytest.mark.realdata
def test_film_command_runs_and_reports(tests_seen: Path, layouts: Path, film_dir: Path, tmp_path: Path):
    out = tmp_path / "film"
    args = ["alfred", "film", str(tests_seen), "--out", str(out), "--layouts", str(layouts),
            "--parses", str(film_dir / "instruction2_params_test_seen.json"), "--limit", "3"]  # fmt: skip
    assert main(args) == 0
    stats = json.loads((out / "film_stats.json").read_text())
    assert stats["episodes_run"] == 3 and stats["errors"] == 0 and stats["parse_accuracy"] is None
    assert pq.read_table(out / "episodes" / "part-00000.parquet").num_rows == 3
