"""World invariants over 200+ seeded agent episodes and 200 random-action episodes.

Each check recomputes its property from the recorded arrays (timeline, steps, events), independently
of the code that produced them.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from eqagen.core import Episode
from eqagen.generators.household.backend import HouseholdParams, episode_of, home_for, simulate
from eqagen.generators.household.homes import make_home
from eqagen.generators.household.world import ACTIONS, HouseholdWorld

N_AGENT_EPISODES = 200
N_RANDOM_EPISODES = 200
ROOMS = ("kitchen", "living_room", "bedroom", "bathroom")


def _scene_id(k: int) -> str:
    return f"{ROOMS[k % 4]}-11-{k % 40}"


@pytest.fixture(scope="module")
def agent_runs() -> list[tuple[HouseholdWorld, Episode]]:
    params = HouseholdParams()
    out = []
    for i in range(N_AGENT_EPISODES):
        world, agent = simulate(home_for(_scene_id(i)), 1000 + i, i, params)
        out.append((world, episode_of(world, agent, 1000 + i, i)))
    return out


def _random_world(seed: int) -> tuple[HouseholdWorld, Episode]:
    """A world driven by uniformly random actions and targets (many fail), to exercise every error path."""
    rng = np.random.default_rng(seed)
    scene = make_home(ROOMS[seed % 4], 7, seed % 25)
    world = HouseholdWorld(scene, max_steps=80)
    actions = [a for a in ACTIONS if a != "Initialize"]
    for _ in range(80):
        action = actions[int(rng.integers(0, len(actions)))]
        visible = np.flatnonzero(world.visible)
        pool = visible if len(visible) and rng.random() < 0.8 else np.arange(world.n_entities)
        target = int(rng.choice(pool)) if rng.random() < 0.95 else -2
        recep = int(rng.choice(pool))
        if action == "PutObject":
            target = world.held
        world.act(action, target, recep)
    return world, world.to_episode(f"random-{seed}", "embedded", seed, {}, {})


@pytest.fixture(scope="module")
def random_runs() -> list[tuple[HouseholdWorld, Episode]]:
    return [_random_world(s) for s in range(N_RANDOM_EPISODES)]


def _all_runs(agent_runs, random_runs):
    return agent_runs + random_runs


def _state_rows(ep: Episode) -> dict[str, np.ndarray]:
    return {name: ep.timeline.field(name) for name in ep.timeline.fields}


def test_failed_action_changes_nothing(agent_runs, random_runs):
    n_failed = 0
    for _, ep in _all_runs(agent_runs, random_runs):
        failed = np.flatnonzero(~ep.steps.success)
        n_failed += len(failed)
        rows = _state_rows(ep)
        for name, arr in rows.items():
            np.testing.assert_array_equal(arr[failed], arr[failed - 1], err_msg=f"{ep.episode_id}: {name}")
        np.testing.assert_array_equal(ep.steps.pose[failed], ep.steps.pose[failed - 1])
        np.testing.assert_array_equal(ep.steps.held[failed], ep.steps.held[failed - 1])
        assert all(ep.steps.error[t] for t in failed)
        assert not any(ep.steps.error[t] for t in np.flatnonzero(ep.steps.success))
        assert not any(e.t in set(failed.tolist()) for e in ep.events)
    assert n_failed > 2000  # the random actor fails a lot: the check is not vacuous


def test_held_object_is_in_no_receptacle(agent_runs, random_runs):
    n_held = 0
    for _, ep in _all_runs(agent_runs, random_runs):
        parent = ep.timeline.field("parent")
        held = ep.steps.held
        t = np.flatnonzero(held >= 0)
        n_held += len(t)
        assert (parent[t, held[t]] == -1).all()
        assert ep.timeline.field("visible")[t, held[t]].all()
    assert n_held > 1000


def _hidden(parent: np.ndarray, enclosing: np.ndarray, is_open: np.ndarray) -> np.ndarray:
    """[T, N]: some ancestor (any depth) is an enclosing receptacle that is closed."""
    T, N = parent.shape
    closed = enclosing[None, :] & ~is_open
    hidden = np.zeros((T, N), dtype=bool)
    rows = np.arange(T)[:, None]
    p = parent.copy()
    for _ in range(N):
        live = p >= 0
        if not live.any():
            break
        hidden |= live & closed[rows, np.maximum(p, 0)]
        p = np.where(live, parent[rows, np.maximum(p, 0)], -1)
    return hidden


def test_nothing_inside_a_closed_receptacle_is_visible(agent_runs, random_runs):
    n_hidden = 0
    for _, ep in _all_runs(agent_runs, random_runs):
        enclosing = ep.entities.has_capability("enclosing")
        hidden = _hidden(ep.timeline.field("parent"), enclosing, ep.timeline.field("open"))
        n_hidden += int(hidden.sum())
        assert not (hidden & ep.timeline.field("visible")).any(), ep.episode_id
    assert n_hidden > 10_000


def test_slices_exist_only_after_slice_object(agent_runs, random_runs):
    n_slices = 0
    for _, ep in _all_runs(agent_runs, random_runs):
        exists = ep.timeline.field("exists")
        sliced_at = {e.entity: e.t for e in ep.events if e.kind == "slice"}
        ids = ep.entities.native_id
        for i, nid in enumerate(ids):
            if "Sliced_" not in nid and "Cracked_" not in nid:
                continue
            n_slices += 1
            whole = ids.index(nid.rsplit("|", 1)[0])
            first = np.flatnonzero(exists[:, i])
            if len(first) == 0:
                assert whole not in sliced_at
                continue
            assert whole in sliced_at, f"{nid} exists but {ids[whole]} was never sliced"
            assert first[0] == sliced_at[whole] and ep.steps.action[first[0]] == "SliceObject"
            assert exists[first[0] :, i].all() and not exists[sliced_at[whole] :, whole].any()
    assert n_slices > 100
    assert sum(e.kind == "slice" for _, ep in agent_runs for e in ep.events) >= 2  # slicing happens


def test_agent_stays_on_reachable_cells(agent_runs, random_runs):
    for world, ep in _all_runs(agent_runs, random_runs):
        native = ep.frame.to_native(ep.steps.pose[:, :3].astype(np.float64))
        cells = np.rint(world.scene.reachable / 0.25).astype(int)
        visited = np.rint(native[:, [0, 2]] / 0.25).astype(int)
        ok = (visited[:, None, :] == cells[None, :, :]).all(axis=2).any(axis=1)
        assert ok.all(), f"{ep.episode_id}: off the grid at steps {np.flatnonzero(~ok)}"
        step = np.abs(np.diff(visited, axis=0)).sum(axis=1)
        assert (step <= 1).all()  # one grid cell per action at most


def test_rebuilt_timeline_equals_step_by_step_record(agent_runs, random_runs):
    for world, ep in _all_runs(agent_runs, random_runs):
        dense = world.dense_timeline()
        assert set(dense) == set(ep.timeline.fields)
        for name, arr in dense.items():
            np.testing.assert_array_equal(ep.timeline.field(name), arr, err_msg=f"{ep.episode_id}: {name}")
        assert ep.timeline.n_changes() < sum(a[0].size for a in dense.values()) * ep.n_steps


def test_episode_dict_round_trip(agent_runs):
    for _, ep in agent_runs[:60]:
        d = ep.to_dict()
        back = Episode.from_dict(json.loads(json.dumps(d)))
        assert back.to_dict() == d
        for name in ep.timeline.fields:
            np.testing.assert_array_equal(back.timeline.field(name), ep.timeline.field(name))
        assert back.events == ep.events and back.task == ep.task and back.meta == ep.meta


def test_agent_episodes_record_task_and_outcome(agent_runs):
    reasons = {ep.meta["stop_reason"] for _, ep in agent_runs}
    assert reasons <= {"success", "max_steps", "max_failures", "plan_finished"}
    for _, ep in agent_runs:
        assert ep.n_steps <= 251 and ep.task["task_type"]
        fails = int((~ep.steps.success).sum())
        assert fails <= 10
        if ep.meta["stop_reason"] == "max_failures":
            assert fails == 10
        if ep.meta["stop_reason"] == "max_steps":
            assert ep.n_steps == 251
    success = np.mean([ep.meta["success"] for _, ep in agent_runs])
    assert 0.3 <= success <= 0.9
