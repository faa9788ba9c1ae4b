"""Fixtures for the ALFRED tests: the real data folders (skipped when absent) and tiny files built in code."""

from __future__ import annotations

import json
from pathlib import Path

import pytest


@pytest.fixture(scope="session")
def alfred_root(realdata: Path) -> Path:
    root = realdata / "alfred"
    if not (root / "json_2.1.0").is_dir():
        pytest.skip("real ALFRED data not found under realdata/alfred")
    return root


@pytest.fixture(scope="session")
def valid_seen(alfred_root: Path) -> Path:
    return alfred_root / "json_2.1.0" / "valid_seen"


@pytest.fixture(scope="session")
def tests_seen(alfred_root: Path) -> Path:
    return alfred_root / "json_2.1.0" / "tests_seen"


@pytest.fixture(scope="session")
def layouts(alfred_root: Path) -> Path:
    return alfred_root / "layouts"


@pytest.fixture(scope="session")
def film_dir(realdata: Path) -> Path:
    return realdata / "film"


def first_of_type(valid_seen: Path, task_type: str) -> Path:
    return sorted(valid_seen.glob(f"{task_type}-*/*/traj_data.json"))[0]


@pytest.fixture
def tiny_traj(tmp_path: Path) -> Path:
    """A minimal json_2.1.0 trajectory (scene values as Python literals, as the shared copies store them)."""
    scene = {
        "floor_plan": "'FloorPlan1'",
        "scene_num": "1",
        "object_poses": repr(
            [
                {
                    "objectName": "Apple_1a2b",
                    "position": {"x": 0.5, "y": 0.95, "z": -1.0},
                    "rotation": {"x": 0.0, "y": 0.0, "z": 0.0},
                }
            ]
        ),
        "object_toggles": "[]",
        "dirty_and_empty": "False",
        "init_action": repr({"action": "TeleportFull", "horizon": 30, "rotation": 90, "x": 0.0, "y": 0.9, "z": 0.0}),
        "random_seed": "7",
    }
    path = tmp_path / "t" / "traj_data.json"
    path.parent.mkdir()
    path.write_text(json.dumps({"scene": scene, "task_id": "'trial_x'", "turk_annotations": "{'anns': []}"}))
    return path
