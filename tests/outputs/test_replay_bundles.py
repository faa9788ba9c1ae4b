"""Replay bundles: ALFRED's traj_data.json rebuilt from the episode alone equals ALFRED's own file in every field
it writes, on all 251 valid_seen expert trajectories; navigation, Minecraft and procedural episodes get the
files their simulators read, and the manifest says which can be replayed."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from eqagen.core import Episode
from eqagen.generators.household.alfred.reader import iter_trajectory_paths, read_layout, read_trajectory
from eqagen.generators.household.alfred.replay import replay_trajectory
from eqagen.outputs.export_express import native_poses
from eqagen.outputs.exports import export
from eqagen.outputs.replay import camera_to_world, teleports, traj_data
from tests.outputs.model_fixtures import episodes_and_records, write_family_dataset

SCENE_KEYS = ("floor_plan", "scene_num", "object_poses", "object_toggles", "dirty_and_empty", "init_action",
              "random_seed")  # fmt: skip


def decoded(value):
    """A scene value as ALFRED's reader takes it: some copies store Python literals inside strings."""
    import ast

    if isinstance(value, str):
        try:
            return ast.literal_eval(value)
        except (ValueError, SyntaxError):
            return value
    return value


@pytest.mark.realdata
@pytest.mark.slow
def test_alfred_bundle_equals_every_valid_seen_traj_data(realdata: Path):
    """For each of the 251 expert trajectories: replay it, write the episode through its table row and back,
    write the bundle from that episode, and compare each field the bundle writes with ALFRED's file."""
    root = realdata / "alfred" / "json_2.1.0" / "valid_seen"
    layouts, n = {}, 0
    for path in iter_trajectory_paths(root):
        traj = read_trajectory(path)
        layout = layouts.setdefault(traj.floor_plan, read_layout(traj.floor_plan, realdata / "alfred" / "layouts"))
        episode, _ = replay_trajectory(traj, layout, str(path.relative_to(root)))
        bundle = json.loads(json.dumps(traj_data(Episode.from_dict(json.loads(json.dumps(episode.to_dict()))))))
        original = json.loads(path.read_text())
        assert {k: bundle["scene"][k] for k in SCENE_KEYS} == {k: decoded(original["scene"][k]) for k in SCENE_KEYS}
        assert [a["api_action"] for a in bundle["plan"]["low_actions"]] == [
            a["api_action"] for a in original["plan"]["low_actions"]
        ], path
        assert bundle["task_id"] == original["task_id"] and bundle["task_type"] == original["task_type"]
        assert bundle["pddl_params"] == original["pddl_params"]
        assert set(bundle) == {"task_id", "scene", "plan", "task_type", "pddl_params"}
        n += 1
    assert n == 251


@pytest.fixture(scope="module")
def bundles(tmp_path_factory):
    dataset = write_family_dataset(tmp_path_factory.mktemp("families") / "ds")
    dest = tmp_path_factory.mktemp("replay") / "bundles"
    n = export(dataset, "replay", dest, split="all")
    return dest, n


def test_manifest_says_which_episodes_replay_and_why_not(bundles):
    dest, n = bundles
    manifest = json.loads((dest / "manifest.json").read_text())
    episodes = {ep.episode_id: ep for ep in episodes_and_records()[0]}
    assert n == len(manifest["episodes"]) == len(episodes)
    for entry in manifest["episodes"]:
        ep = episodes[entry["episode_id"]]
        folder = dest / ep.episode_id
        assert all((folder / f.rstrip("/")).exists() for f in entry["files"])
        if ep.family == "blockworld":
            assert entry["replayable"] and entry["version"] == "1.20.1" and (folder / "world" / "level.dat").exists()
        else:  # embedded households and houses: no simulator has the scene
            assert not entry["replayable"] and "procedural" in entry["why"]
            assert {"history.json", "scenegraph.json"} <= set(entry["files"])


def test_navigation_poses_are_the_native_trajectory(bundles):
    dest, _ = bundles
    ep = next(e for e in episodes_and_records()[0] if e.family == "navigation")
    positions, rotations = native_poses(ep)
    habitat = json.loads((dest / ep.episode_id / "habitat_episode.json").read_text())["episodes"][0]
    path = habitat["shortest_paths"][0]
    assert len(path) == ep.n_steps and np.allclose([p["position"] for p in path], positions, atol=1e-5)
    assert habitat["start_position"] == path[0]["position"]
    matrix = np.loadtxt(dest / ep.episode_id / "poses" / f"{ep.n_steps - 1:05d}.txt")
    assert np.allclose(matrix, camera_to_world(positions[-1], rotations[-1]), atol=1e-5)
    assert np.allclose(matrix[:3, 3], positions[-1], atol=1e-5)
    # habitat's agent looks along -z at yaw 0: the camera's -z axis is the heading the quaternion gives
    yaw = np.deg2rad(ep.frame.yaw_to_native(ep.steps.pose[-1:, 3].astype(float))[0])
    assert np.allclose(matrix[:3, :3] @ [0, 0, -1], [-np.sin(yaw), 0, -np.cos(yaw)], atol=1e-5)


def test_minecraft_teleports_walk_the_native_path():
    ep = next(e for e in episodes_and_records()[0] if e.family == "blockworld")
    lines = teleports(ep).splitlines()
    assert len(lines) == ep.n_steps
    native = ep.frame.to_native(ep.steps.pose[:, :3].astype(float))
    assert np.allclose([[float(v) for v in line.split()[2:5]] for line in lines], native, atol=1e-3)


def test_a_minecraft_bundle_without_the_run_config_is_refused(tmp_path):
    """A folder whose manifest has no generation config cannot rebuild its worlds: one error naming the key."""
    from eqagen.core import DataFileError
    from eqagen.outputs.folder import write_dataset
    from eqagen.outputs.schemas import episodes_table, questions_table

    episodes, records = episodes_and_records()
    blocks = [e for e in episodes if e.family == "blockworld"]
    asked = [r for r in records if r.family == "blockworld"]
    write_dataset(tmp_path / "ds", questions_table(asked), episodes_table(blocks), {"config": {}, "seed": 3,
                  "config_hash": "no-config"}, 1000)  # fmt: skip
    with pytest.raises(DataFileError, match=r"config\.generation"):
        export(tmp_path / "ds", "replay", tmp_path / "bundles")
