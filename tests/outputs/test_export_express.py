"""EXPRESS-Bench export: records recomputed from the episodes, native habitat frame, quaternions."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from eqagen.config import load_config
from eqagen.core import ConfigError, Paraphrase, derive_rng
from eqagen.generators import get_backend
from eqagen.outputs.export_express import export_express
from eqagen.outputs.exports import export
from eqagen.outputs.folder import write_dataset
from eqagen.outputs.schemas import episodes_table, questions_table
from eqagen.templates.records import sample_questions
from tests.outputs.builders import make_episode

MANIFEST_FIELDS = {"config": {}, "seed": 2, "config_hash": "test"}
KEYS = {"episode_id", "trajectory_id", "scene_id", "type", "question", "answer", "start_position", "start_rotation",
        "goal_position", "goal_rotation", "geodesic_distance", "step_length", "actions"}  # fmt: skip


def write_nav_dataset(out: Path, episodes, records) -> None:
    write_dataset(out, questions_table(records), episodes_table(episodes), MANIFEST_FIELDS, 1000)


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    out = tmp_path_factory.mktemp("nav")
    backend = get_backend("navigation", "embedded")
    config = load_config("express-bench").questions
    episodes, records = [], []
    for spec in backend.plan(4, 2, {"policy": "express", "n_scenes": 2}):
        ep = backend.run(spec)
        episodes.append(ep)
        qs, _ = sample_questions(ep, config, derive_rng(2, "questions", ep.episode_id))
        records.extend(replace(q, split="train" if i % 3 else "test") for i, q in enumerate(qs))
    records[0] = replace(records[0], paraphrase=Paraphrase("Reworded?", records[0].answer, "m", True))
    write_nav_dataset(out, episodes, records)
    return out, {ep.episode_id: ep for ep in episodes}, records


def test_records_rebuild_the_trajectory_in_the_native_frame(dataset, tmp_path):
    out, episodes, records = dataset
    dest = tmp_path / "express.json"
    assert export(out, "express", dest) == len(records)
    items = json.loads(dest.read_text())
    assert [i["episode_id"] for i in items] == sorted(r.question_id for r in records)
    by_id = {r.question_id: r for r in records}
    for item in items:
        assert set(item) == KEYS
        q, ep = by_id[item["episode_id"]], episodes[item["trajectory_id"]]
        assert item["type"] == q.express_category and item["answer"] == q.answer
        assert item["question"] == ("Reworded?" if q is records[0] else q.question)
        assert np.allclose(item["start_position"], ep.task["start_position"], atol=1e-4)
        assert np.allclose(item["goal_position"], ep.task["goal_position"], atol=1e-4)
        assert item["geodesic_distance"] == pytest.approx(ep.task["geodesic_distance"], abs=1e-4)
        assert item["step_length"] == 0.25
        steps = [item["actions"][f"step_{i}"] for i in range(len(item["actions"]))]
        assert [s["action"] for s in steps] == ep.steps.action[1:]
        positions = np.array([item["start_position"]] + [s["position"] for s in steps])
        moved = np.linalg.norm(np.diff(positions, axis=0), axis=1)
        for s, d in zip(steps, moved):
            assert d == pytest.approx(0.25 if s["action"] == "move_forward" else 0.0, abs=1e-4)
        assert np.linalg.norm(positions[-1] - np.array(item["goal_position"])) <= 0.1875 + 1e-4
        rotations = np.array([item["start_rotation"]] + [s["rotation"] for s in steps])
        assert np.allclose(np.linalg.norm(rotations, axis=1), 1.0, atol=1e-4)
        assert (rotations[:, 0] >= 0).all() and np.allclose(rotations[:, [1, 3]], 0.0)  # yaw about +y only
        assert steps[-1]["rotation"] == item["goal_rotation"]
        yaw = np.degrees(2 * np.arctan2(rotations[:, 2], rotations[:, 0]))
        forward = np.stack([-np.sin(np.radians(yaw)), -np.cos(np.radians(yaw))], axis=1)[:-1]  # habitat faces -Z
        step_xz = np.diff(positions[:, [0, 2]], axis=0)
        is_fwd = np.array([s["action"] == "move_forward" for s in steps])
        assert np.allclose(step_xz[is_fwd], 0.25 * forward[is_fwd], atol=1e-4)


def test_split_and_errors(dataset, tmp_path):
    out, _, records = dataset
    n_test = sum(r.split == "test" for r in records)
    assert export_express(out, tmp_path / "t.json", split="test") == n_test
    other = tmp_path / "household"
    household = make_episode(0)
    write_dataset(other, questions_table([]), episodes_table([household]), MANIFEST_FIELDS, 10)
    with pytest.raises(ConfigError, match="for navigation episodes only"):
        export_express(other, tmp_path / "x.json")
