"""Bad ALFRED input: traj_data.json and floor-plan layouts, mutated; only DataFileError naming the file."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqagen.core import DataFileError
from eqagen.generators.household.alfred.reader import read_layout, read_trajectory

from .conftest import FUZZ, FUZZ_LONG
from .mutate import dump_json, mutated_bytes, mutated_tree, read_or_clean_error

# A small but complete trajectory: scene values as Python literals (as the shared copies store them),
# a plan with low-level actions, a task type and parameters, and annotations.
SCENE = {
    "floor_plan": "'FloorPlan1'",
    "scene_num": "1",
    "object_poses": repr(
        [
            {
                "objectName": "Apple_1a2b",
                "position": {"x": 0.5, "y": 0.95, "z": -1.0},
                "rotation": {"x": 0.0, "y": 0.0, "z": 0.0},
            },
            {"objectName": "Mug_9f", "position": {"x": 1.5, "y": 0.9, "z": 0.25}},
        ]
    ),
    "object_toggles": "[]",
    "dirty_and_empty": "False",
    "init_action": repr({"action": "TeleportFull", "horizon": 30, "rotation": 90, "x": 0.0, "y": 0.9, "z": 0.0}),
    "random_seed": "7",
}
TRAJ = {
    "scene": SCENE,
    "task_id": "'trial_x'",
    "task_type": "'pick_and_place_simple'",
    "pddl_params": repr({"object_target": "Apple", "parent_target": "CounterTop"}),
    "plan": {
        "low_actions": [{"api_action": {"action": "MoveAhead"}}, {"api_action": {"action": "RotateLeft"}}],
        "high_pddl": [{"discrete_action": {"action": "GotoLocation"}}],
    },
    "turk_annotations": {"anns": [{"task_desc": "Put the apple on the counter."}]},
}


def decoded(traj: dict) -> dict:
    """The trajectory with its literal strings decoded, so mutations reach inside them too."""
    scene = {k: (ast.literal_eval(v) if k != "floor_plan" else v) for k, v in traj["scene"].items()}
    return {**traj, "scene": scene, "pddl_params": ast.literal_eval(traj["pddl_params"])}


def write(path: Path, text: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    return path


def test_the_originals_read(scratch: Path) -> None:
    traj = read_trajectory(write(scratch / "ok" / "traj_data.json", json.dumps(TRAJ)))
    assert traj.floor_plan == "FloorPlan1" and len(traj.object_poses) == 2 and len(traj.low_actions) == 2
    assert read_trajectory(write(scratch / "ok2" / "traj_data.json", json.dumps(decoded(TRAJ)))).scene_num == 1


@FUZZ
@given(tree=st.one_of(mutated_tree(TRAJ), mutated_tree(decoded(TRAJ))))
def test_mutated_trajectory_trees(scratch: Path, tree) -> None:
    path = write(scratch / "tree" / "traj_data.json", dump_json(tree))
    read_or_clean_error(path, read_trajectory, path)


@FUZZ
@given(data=mutated_bytes(json.dumps(TRAJ).encode()))
def test_mutated_trajectory_bytes(scratch: Path, data: bytes) -> None:
    path = write(scratch / "bytes" / "traj_data.json", data)
    read_or_clean_error(path, read_trajectory, path)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda t: t["scene"].update(scene_num="'one'"), "scene.scene_num"),
        (lambda t: t["scene"].update(random_seed="[1, 2]"), "scene.random_seed"),
        (lambda t: t.update(plan={"low_actions": 5}), "plan.low_actions"),
        (lambda t: t.update(turk_annotations={"anns": 3}), "turk_annotations"),
        (lambda t: t["scene"].update(object_toggles="7"), "scene.object_toggles"),
        (
            lambda t: t["scene"].update(object_poses="[{'objectName': 'A_1', 'position': {'x': 'a'}}]"),
            "scene.object_poses[0]",
        ),
    ],
)
def test_wrong_types_name_the_field(scratch: Path, change, field: str) -> None:
    traj = json.loads(json.dumps(TRAJ))
    change(traj)
    path = write(scratch / "typed" / "traj_data.json", json.dumps(traj))
    with pytest.raises(DataFileError) as err:
        read_trajectory(path)
    assert err.value.field == field and str(path) in str(err.value)


# --- layouts ---------------------------------------------------------------------------------------------

OBJECTS = ["Apple", "Fridge", "CounterTop"]
OPENABLE = {"Fridge|-2.10|+00.00|+01.07": [-1.0, 1.0, 270, 30], "Cabinet|+00.50|+01.20|-01.00": [0.25, 0.5, 180, 0]}
REACHABLE = np.array([[0.0, 0.0], [0.25, 0.0], [0.25, 0.25]], np.float64)


def write_layout(d: Path, objects: bytes, openable: bytes, npy: bytes) -> Path:
    write(d / "FloorPlan1-objects.json", objects)
    write(d / "FloorPlan1-openable.json", openable)
    write(d / "FloorPlan1-layout.npy", npy)
    return d


def npy_bytes(arr: np.ndarray) -> bytes:
    import io

    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def test_the_original_layout_reads(scratch: Path) -> None:
    good = (json.dumps(OBJECTS).encode(), json.dumps(OPENABLE).encode(), npy_bytes(REACHABLE))
    d = write_layout(scratch / "lay-ok", *good)
    layout = read_layout("FloorPlan1", d)
    assert layout.object_types == OBJECTS and layout.reachable.shape == (3, 2) and len(layout.openable) == 2


@FUZZ
@given(
    which=st.sampled_from(["objects", "openable", "layout"]),
    objects=mutated_tree(OBJECTS),
    openable=mutated_tree(OPENABLE),
    npy=mutated_bytes(npy_bytes(REACHABLE)),
    raw=st.booleans(),
)
def test_mutated_layouts(scratch: Path, which: str, objects, openable, npy: bytes, raw: bool) -> None:
    good = {"objects": json.dumps(OBJECTS).encode(), "openable": json.dumps(OPENABLE).encode(),
            "layout": npy_bytes(REACHABLE)}  # fmt: skip
    bad = {"objects": dump_json(objects).encode(), "openable": dump_json(openable).encode(), "layout": npy}[which]
    if raw and which != "layout":  # byte damage of the JSON file instead of a tree edit
        bad = good[which][: len(good[which]) // 2] + b"\xff"
    good[which] = bad
    d = write_layout(scratch / "lay", good["objects"], good["openable"], good["layout"])
    suffix = {"objects": "objects.json", "openable": "openable.json", "layout": "layout.npy"}[which]
    read_or_clean_error(d / f"FloorPlan1-{suffix}", read_layout, "FloorPlan1", d)


@pytest.mark.parametrize(
    "arr",
    [np.zeros((3, 2), np.complex128), np.array([[np.nan, 0.0]]), np.zeros((2, 2), "U3"), np.zeros((0, 2))],
    ids=["complex", "nan", "strings", "empty"],
)
def test_layout_arrays_of_the_wrong_kind(scratch: Path, arr: np.ndarray) -> None:
    d = write_layout(scratch / "lay-kind", json.dumps(OBJECTS).encode(), json.dumps(OPENABLE).encode(), npy_bytes(arr))
    with pytest.raises(DataFileError) as err:
        read_layout("FloorPlan1", d)
    assert err.value.field == "layout" and "FloorPlan1-layout.npy" in str(err.value)


@pytest.mark.realdata
@FUZZ
@given(data=st.data())
def test_mutated_real_trajectories(realdata: Path, scratch: Path, data) -> None:
    files = sorted((realdata / "alfred" / "json_2.1.0" / "valid_seen").glob("*/*/traj_data.json"))[:5]
    original = json.loads(data.draw(st.sampled_from(files)).read_text())
    path = write(scratch / "real" / "traj_data.json", dump_json(data.draw(mutated_tree(original))))
    read_or_clean_error(path, read_trajectory, path)


@pytest.mark.slow
@FUZZ_LONG
@given(tree=st.one_of(mutated_tree(TRAJ), mutated_tree(decoded(TRAJ))), data=mutated_bytes(json.dumps(TRAJ).encode()))
def test_mutated_trajectories_long(scratch: Path, tree, data: bytes) -> None:
    for i, content in enumerate((dump_json(tree), data)):
        path = write(scratch / f"long{i}" / "traj_data.json", content)
        read_or_clean_error(path, read_trajectory, path)
