"""Expert replay on the real valid_seen trajectories: fidelity, the recorded episode, determinism."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from eqagen.core import Episode
from eqagen.generators.household.alfred.reader import TASK_TYPES, read_layout, read_trajectory
from eqagen.generators.household.alfred.replay import replay_trajectory
from eqagen.generators.household.alfred.runs import fidelity_summary, replay_root

from .conftest import first_of_type


@pytest.mark.realdata
def test_fidelity_on_all_251_valid_seen(valid_seen: Path, layouts: Path):
    entries = [fid for _, fid in replay_root(valid_seen, layouts)]
    summary = fidelity_summary(entries)
    assert summary["all"]["n"] == 251 and set(summary) == {"all", *TASK_TYPES}
    assert summary["all"]["actions_ok_rate"] >= 0.98
    assert summary["all"]["goal_ok_rate"] >= 0.95
    for e in entries:  # a failure always says why; a clean replay never does
        assert (e.reason is None) == (e.actions_ok and e.goal_ok)
        assert e.trajectory.endswith("traj_data.json") and not e.trajectory.startswith("/")


@pytest.mark.realdata
@pytest.mark.parametrize("task_type", TASK_TYPES)
def test_one_replay_per_task_type_records_the_expert(valid_seen: Path, layouts: Path, task_type: str):
    path = first_of_type(valid_seen, task_type)
    traj = read_trajectory(path)
    ep, fid = replay_trajectory(traj, read_layout(traj.floor_plan, layouts), path.name)
    assert fid.actions_ok and fid.goal_ok and fid.reason is None
    assert ep.steps.action[1:] == [a["action"] for a in traj.low_actions]
    assert ep.steps.success.all() and ep.backend == "alfred" and ep.scene_id == traj.floor_plan
    assert ep.task["task_type"] == task_type and ep.meta["instruction"] == traj.instruction(0)
    # the episode frame puts the agent at the origin facing +z at its first observation
    assert np.allclose(ep.steps.pose[0, [0, 2, 3]], 0.0, atol=1e-5)
    picks = [ep.entities.native_id[t] for a, t in zip(ep.steps.action, ep.steps.target) if a == "PickupObject"]
    assert len(picks) == sum(a["action"] == "PickupObject" for a in traj.low_actions)
    counts = Counter(e.kind for e in ep.events)
    assert counts["pickup"] == len(picks) and counts["put"] == sum(a["action"] == "PutObject" for a in traj.low_actions)


@pytest.mark.realdata
def test_replay_is_deterministic_and_round_trips(valid_seen: Path, layouts: Path):
    path = first_of_type(valid_seen, "pick_heat_then_place_in_recep")
    traj = read_trajectory(path)
    a, _ = replay_trajectory(traj, read_layout(traj.floor_plan, layouts), "x")
    b, _ = replay_trajectory(read_trajectory(path), read_layout(traj.floor_plan, layouts), "x")
    assert a.to_dict() == b.to_dict()
    back = Episode.from_dict(a.to_dict())
    assert back.to_dict() == a.to_dict()
    assert any(e.kind == "heat" for e in a.events)


@pytest.mark.realdata
def test_a_corrupted_plan_fails_with_a_reason(valid_seen: Path, layouts: Path):
    traj = read_trajectory(first_of_type(valid_seen, "pick_and_place_simple"))
    pick = next(i for i, a in enumerate(traj.low_actions) if a["action"] == "PickupObject")
    traj.low_actions[pick] = {**traj.low_actions[pick], "objectId": "Apple|+09.00|+09.00|+09.00"}
    _, fid = replay_trajectory(traj, read_layout(traj.floor_plan, layouts), "x")
    assert not fid.actions_ok and not fid.goal_ok
    assert fid.reason.startswith(f"step {pick + 1} PickupObject") and "invalid" in fid.reason
