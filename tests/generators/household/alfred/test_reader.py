"""Readers: real files decode completely; malformed input raises DataFileError naming file and field."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from eqagen.core import DataFileError
from eqagen.generators.household.alfred.reader import (
    TASK_TYPES,
    find_layouts_dir,
    format_object_id,
    iter_trajectory_paths,
    parse_object_id,
    read_layout,
    read_trajectory,
)


def test_object_ids_decode_type_position_and_sub_objects():
    pid = parse_object_id("Sink|-01.90|+00.97|-01.50|SinkBasin")
    assert (pid.object_type, pid.base_type, pid.position) == ("SinkBasin", "Sink", (-1.9, 0.97, -1.5))
    sliced = parse_object_id("Apple|-04.27|+00.84|+03.10|AppleSliced_2")
    assert (sliced.object_type, sliced.base_type, sliced.suffix) == ("AppleSliced", "Apple", "AppleSliced_2")
    assert parse_object_id("Knife|00.00|+00.79|+06.54").position == (0.0, 0.79, 6.54)


def test_format_object_id_matches_ai2thor_text():
    assert format_object_id("KeyChain", (0.627, 0.7148, 0.4211)) == "KeyChain|+00.63|+00.71|+00.42"
    assert format_object_id("Sofa", (-1.16, 0.0, 0.45)) == "Sofa|-01.16|+00.00|+00.45"


@pytest.mark.parametrize("bad", ["Apple", "Apple|1|2", "Apple|x|0|0"])
def test_bad_object_id_names_the_field(bad: str):
    with pytest.raises(DataFileError, match="objectId"):
        parse_object_id(bad, "somefile.json")


def test_tiny_trajectory_reads_python_literal_scene_values(tiny_traj: Path):
    t = read_trajectory(tiny_traj)
    assert t.floor_plan == "FloorPlan1" and t.task_id == "trial_x" and not t.has_plan
    assert t.object_poses[0].object_type == "Apple" and t.object_poses[0].position == (0.5, 0.95, -1.0)
    assert t.agent_start == (0.0, 0.9, 0.0, 90.0, 30.0) and t.random_seed == 7 and t.instruction() == ""


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (lambda d: d.pop("scene"), "scene"),
        (lambda d: d["scene"].pop("init_action"), "scene.init_action"),
        (lambda d: d["scene"].update(init_action="{'x': 1}"), "scene.init_action"),
        (lambda d: d["scene"].update(object_poses="[{'objectName': 'A_1'}]"), "scene.object_poses[0]"),
        (lambda d: d["scene"].update(floor_plan="'Kitchen1'"), "scene.floor_plan"),
        (lambda d: d.update(task_type="pick_three_and_place"), "task_type"),
        (lambda d: d.update(pddl_params="[1, 2]"), "pddl_params"),
        (lambda d: d.update(plan={"low_actions": [{"api_action": {"objectId": "A|1|2|3"}}]}),
         "plan.low_actions[0].api_action"),
    ],
)  # fmt: skip
def test_malformed_trajectory_names_file_and_field(tiny_traj: Path, mutate, field: str):
    d = json.loads(tiny_traj.read_text())
    mutate(d)
    tiny_traj.write_text(json.dumps(d))
    with pytest.raises(DataFileError) as err:
        read_trajectory(tiny_traj)
    assert err.value.field == field and err.value.path == str(tiny_traj)


def test_not_json_and_missing_file(tmp_path: Path):
    bad = tmp_path / "traj_data.json"
    bad.write_text("{nope")
    with pytest.raises(DataFileError, match="not valid JSON"):
        read_trajectory(bad)
    with pytest.raises(DataFileError, match="not found"):
        read_trajectory(tmp_path / "missing.json")


def test_layouts_lookup_order_and_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.delenv("EQAGEN_REALDATA", raising=False)
    with pytest.raises(DataFileError, match="gen/layouts"):
        find_layouts_dir(None)
    (tmp_path / "alfred" / "layouts").mkdir(parents=True)
    monkeypatch.setenv("EQAGEN_REALDATA", str(tmp_path))
    assert find_layouts_dir(None) == tmp_path / "alfred" / "layouts"
    explicit = tmp_path / "mine"
    explicit.mkdir()
    assert find_layouts_dir(explicit) == explicit
    with pytest.raises(DataFileError, match="--layouts"):
        find_layouts_dir(tmp_path / "absent")


def test_malformed_layout_files(tmp_path: Path):
    np.save(tmp_path / "FloorPlan9-layout.npy", np.zeros((3, 3)))
    (tmp_path / "FloorPlan9-objects.json").write_text(json.dumps(["Apple"]))
    (tmp_path / "FloorPlan9-openable.json").write_text(json.dumps({"Fridge|+01.00|+00.00|+02.00": [1.0, 2.0]}))
    with pytest.raises(DataFileError) as err:
        read_layout("FloorPlan9", tmp_path)
    assert err.value.field == "Fridge|+01.00|+00.00|+02.00"
    (tmp_path / "FloorPlan9-openable.json").write_text(json.dumps({"Fridge|+01.00|+00.00|+02.00": [1, 2, 0, 30]}))
    with pytest.raises(DataFileError, match=r"\[K, 2\]"):
        read_layout("FloorPlan9", tmp_path)


@pytest.mark.realdata
def test_every_real_trajectory_and_layout_reads(valid_seen: Path, tests_seen: Path, layouts: Path):
    valid = [read_trajectory(p) for p in iter_trajectory_paths(valid_seen)]
    test = [read_trajectory(p) for p in iter_trajectory_paths(tests_seen)]
    assert len(valid) == 251 and len(test) == 483
    assert all(t.has_plan and t.task_type in TASK_TYPES for t in valid)
    assert not any(t.has_plan or t.task_type for t in test)
    assert all(t.instruction() for t in valid + test)
    plans = {p.name.split("-")[0] for p in layouts.glob("FloorPlan*-layout.npy")}
    assert len(plans) == 120
    for t in valid[:40]:
        lay = read_layout(t.floor_plan, layouts)
        assert lay.reachable.shape[1] == 2 and np.all(np.abs(lay.reachable * 4 - np.round(lay.reachable * 4)) < 1e-6)


@pytest.mark.parametrize("value", [float("nan"), 1e308, float("-inf")])
@pytest.mark.parametrize(
    ("place", "field"),
    [
        (lambda d, v: d["scene"].update(object_poses=[{"objectName": "Apple_1", "position": {"x": v, "y": 0, "z": 0}}]),
         "scene.object_poses[0].position"),
        (lambda d, v: d["scene"].update(object_poses=[
            {"objectName": "Apple_1", "position": {"x": 0, "y": 0, "z": 0}, "rotation": {"x": 0, "y": v, "z": 0}}
        ]), "scene.object_poses[0].rotation"),
        (lambda d, v: d["scene"].update(init_action={"x": 0, "y": 0.9, "z": v, "rotation": 0, "horizon": 30}),
         "scene.init_action"),
    ],
)  # fmt: skip
def test_non_finite_or_huge_poses_are_refused_naming_the_field(tiny_traj: Path, place, field: str, value: float):
    """A NaN or 1e308 position used to be read and written into the episodes."""
    d = json.loads(tiny_traj.read_text())
    place(d, value)
    tiny_traj.write_text(json.dumps(d))  # JSON's NaN and Infinity tokens, as json.dumps writes them
    with pytest.raises(DataFileError) as err:
        read_trajectory(tiny_traj)
    assert err.value.field == field and err.value.path == str(tiny_traj)
    assert "finite" in str(err.value) or "beyond" in str(err.value)


def _layout_files(directory: Path, points: np.ndarray) -> None:
    np.save(directory / "FloorPlan9-layout.npy", points)
    (directory / "FloorPlan9-objects.json").write_text(json.dumps(["Apple"]))
    (directory / "FloorPlan9-openable.json").write_text(json.dumps({}))


def test_layout_with_huge_coordinates_is_refused_before_any_grid_is_built(tmp_path: Path):
    """Two points 100 km apart once made the household world allocate a dense grid of 47.7 GiB."""
    _layout_files(tmp_path, np.array([[0.0, 0.0], [0.25, 0.0], [99_000.0, 99_000.0]]))
    with pytest.raises(DataFileError, match="cells, more than") as err:
        read_layout("FloorPlan9", tmp_path)
    assert err.value.field == "layout" and err.value.path.endswith("FloorPlan9-layout.npy")
    _layout_files(tmp_path, np.array([[0.0, 0.0], [1e308, 0.0]]))
    with pytest.raises(DataFileError, match="beyond"):
        read_layout("FloorPlan9", tmp_path)


def test_layout_whose_header_states_more_than_the_file_holds_is_refused(tmp_path: Path):
    _layout_files(tmp_path, np.zeros((4, 2)))
    path = tmp_path / "FloorPlan9-layout.npy"
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"(4, 2)", b"(9999999, 2)".ljust(6)[:12], 1).replace(b" " * 6 + b"\n", b"\n", 1))
    with pytest.raises(DataFileError, match=r"states an array of shape \(9999999, 2\)"):
        read_layout("FloorPlan9", tmp_path)
