"""Scenes from real trajectories: the real grid, receptacles where their ids say, movables at their poses."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.generators.household.alfred.reader import (
    AlfredTrajectory,
    ObjectPose,
    format_object_id,
    iter_trajectory_paths,
    parse_object_id,
    read_layout,
    read_trajectory,
)
from eqagen.generators.household.alfred.scene_build import (
    build_alfred_scene,
    expert_cells,
    merge_cells,
    room_kind,
)


def test_room_kind_follows_ithor_numbering():
    assert [room_kind(f"FloorPlan{n}") for n in (1, 30, 201, 330, 430)] == [
        "kitchen", "kitchen", "living_room", "bedroom", "bathroom"]  # fmt: skip


def _walk(actions: list[str]) -> AlfredTrajectory:
    low = [{"action": a, "moveMagnitude": 0.25} if a == "MoveAhead" else {"action": a} for a in actions]
    return AlfredTrajectory(Path("x"), "t", "FloorPlan1", 1, [], [], False,
                            {"x": 1.0, "y": 0.9, "z": -0.5, "rotation": 0, "horizon": 30}, low_actions=low)  # fmt: skip


@settings(max_examples=60, deadline=None)
@given(st.lists(st.sampled_from(["MoveAhead", "RotateLeft", "RotateRight", "LookDown"]), max_size=40))
def test_expert_cells_dead_reckon_on_the_grid(actions: list[str]):
    cells = expert_cells(_walk(actions))
    moves = actions.count("MoveAhead")
    assert 1 <= len(cells) <= moves + 1
    assert np.allclose(cells * 4, np.round(cells * 4))  # on the 0.25 m grid
    steps = np.abs(np.diff(cells, axis=0)).sum(axis=1) if len(cells) > 1 else np.zeros(0)
    assert np.all(steps > 0)  # unique cells
    # every cell is within the number of moves of the start (Manhattan, in grid steps)
    assert np.all(np.abs(cells - (1.0, -0.5)).sum(axis=1) <= 0.25 * moves + 1e-9)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(-8, 8), st.integers(-8, 8)), max_size=30),
       st.lists(st.tuples(st.integers(-8, 8), st.integers(-8, 8)), max_size=30))  # fmt: skip
def test_merge_cells_is_a_union(a, b):
    ga, gb = np.array(a, dtype=float).reshape(-1, 2) / 4, np.array(b, dtype=float).reshape(-1, 2) / 4
    merged, added = merge_cells(np.unique(ga, axis=0), gb)
    assert {tuple(c) for c in merged} == {tuple(c) for c in np.concatenate([ga, gb])}
    assert added == len({tuple(c) for c in gb} - {tuple(c) for c in ga})


def test_tiny_scene_places_the_apple_on_the_nearest_counter(tiny_traj: Path, tmp_path: Path):
    import json

    lay = tmp_path / "lay"
    lay.mkdir()
    np.save(lay / "FloorPlan1-layout.npy", np.array([[0.0, 0.0], [0.25, 0.0], [0.5, 0.0]]))
    (lay / "FloorPlan1-objects.json").write_text(json.dumps(["CounterTop", "Fridge", "Apple"]))
    (lay / "FloorPlan1-openable.json").write_text(json.dumps({
        "CounterTop|+00.50|+00.90|-01.20": [0.5, 0.0, 180, 30], "CounterTop|+03.00|+00.90|-01.00": [2, 0, 180, 30],
        "Fridge|+00.60|+00.00|-01.50": [0.5, 0.0, 180, 0]}))  # fmt: skip
    built = build_alfred_scene(read_trajectory(tiny_traj), read_layout("FloorPlan1", lay))
    scene = built.scene
    scene.validate()
    apple = next(o for o in scene.objects if o.object_type == "Apple")
    assert apple.object_id == "Apple|+00.50|+00.95|-01.00" and apple.parent == "CounterTop|+00.50|+00.90|-01.20"
    assert built.position_source[apple.object_id] == "pose" and built.parent_source[apple.object_id] == "inferred"
    assert scene.agent_start == (0.0, 0.9, 0.0, 90.0, 30.0) and scene.room_kind == "kitchen"


@pytest.mark.realdata
def test_real_scenes_are_consistent(valid_seen: Path, tests_seen: Path, layouts: Path):
    paths = list(iter_trajectory_paths(valid_seen))[::5] + list(iter_trajectory_paths(tests_seen))[::10]
    for path in paths:
        traj = read_trajectory(path)
        lay = read_layout(traj.floor_plan, layouts)
        built = build_alfred_scene(traj, lay)
        scene = built.scene
        scene.validate()  # unique ids, known parents, the start on a reachable cell
        by_id = {o.object_id: o for o in scene.objects}
        for oid in lay.openable:  # every layout receptacle at the position its objectId encodes
            pid = parse_object_id(oid)
            if oid in by_id:
                assert np.allclose(by_id[oid].position, pid.position)
        for pose in traj.object_poses:  # every movable object at its recorded pose
            o = by_id.get(format_object_id(pose.object_type, pose.position))
            assert o is None or np.allclose(o.position, pose.position)
        assert sum(s == "pose" for s in built.position_source.values()) >= len(traj.object_poses) - 3
        # the layout's grid is kept whole; cells the expert stood on are added
        assert len(scene.reachable) == len(lay.reachable) + built.added_cells


@pytest.mark.realdata
def test_toggles_and_dirty_flags_follow_the_trajectory(valid_seen: Path, layouts: Path):
    from eqagen.generators.household.objects import catalog

    trajs = [read_trajectory(p) for p in iter_trajectory_paths(valid_seen)]
    toggled = next(t for t in trajs if t.object_toggles)
    scene = build_alfred_scene(toggled, read_layout(toggled.floor_plan, layouts)).scene
    lamp_type = toggled.object_toggles[0]["objectType"]
    lamps = [o for o in scene.objects if o.object_type == lamp_type]
    assert all(not o.is_toggled for o in lamps)  # {"isOn": false}: every lamp of that type starts off
    dirty = next(t for t in trajs if t.dirty_and_empty)
    scene = build_alfred_scene(dirty, read_layout(dirty.floor_plan, layouts)).scene
    movables = [o for o in scene.objects if catalog().get(o.object_type).can("pickupable")]
    assert movables and all(o.is_dirty == catalog().get(o.object_type).can("dirtyable") for o in movables)
    clean = next(t for t in trajs if not t.dirty_and_empty)
    assert not any(o.is_dirty for o in build_alfred_scene(clean, read_layout(clean.floor_plan, layouts)).scene.objects)


def test_pose_ids_stay_unique_for_duplicate_poses(tiny_traj: Path):
    traj = read_trajectory(tiny_traj)
    traj.object_poses.append(ObjectPose("Apple_1a2b", "Apple", (0.5, 0.95, -1.0), (0.0, 0.0, 0.0)))
    from eqagen.generators.household.alfred.scene_build import _pose_objects

    ids = [oid for oid, *_ in _pose_objects(traj)]
    assert len(set(ids)) == 2


def _candidate(object_type: str, x: float, y: float, z: float):
    from eqagen.generators.household.alfred.scene_build import _Candidate

    return _Candidate(f"{object_type}|{x}|{y}|{z}", object_type, (x, y, z))


def test_enclosure_boxes_follow_the_real_poses():
    """A microwave's contents sit above its origin, a cabinet's deep below it, and a counter object just
    above a drawer is on the counter, not in the drawer (the boxes read off the real poses)."""
    from eqagen.generators.household.alfred.scene_build import score_matrix
    from eqagen.generators.household.objects import catalog

    recs = [_candidate("Microwave", 0, 1.0, 0), _candidate("Cabinet", 3, 1.0, 0), _candidate("Drawer", 6, 0.8, 0)]
    movables = [
        _candidate("Apple", 0.1, 1.15, 0.0),  # in the microwave
        _candidate("Apple", 0.0, 1.45, 0.0),  # on top of it
        _candidate("Mug", 3.5, 0.45, 0.0),  # on a wall cabinet's shelf, 0.55 below and aside
        _candidate("Mug", 3.2, 0.25, 0.0),  # on the counter under it
        _candidate("Spoon", 6.1, 0.7, 0.0),  # in the drawer
        _candidate("Spoon", 6.1, 0.9, 0.0),  # on the counter above it
    ]
    inside = np.isfinite(score_matrix(movables, recs, catalog(), set()))
    assert inside.tolist() == [
        [True, False, False],
        [False, False, False],
        [False, True, False],
        [False, False, False],
        [False, False, True],
        [False, False, False],
    ]


def test_a_full_enclosure_keeps_what_its_box_holds():
    """Seven things in a fridge stay in it: the room kept for the task's puts does not spill them into view."""
    from eqagen.generators.household.alfred.scene_build import _assign_parents
    from eqagen.generators.household.objects import catalog

    fridge = _candidate("Fridge", 0, 0, 0)
    food = [_candidate(t, 0.05 * k, 0.3 + 0.2 * k, 0) for k, t in enumerate(["Apple", "Egg", "Tomato"] * 2 + ["Bread"])]
    parents = _assign_parents(food, [fridge], catalog(), {}, set())
    assert all(parents[f.object_id] == fridge.object_id for f in food)


@pytest.mark.realdata
@pytest.mark.slow
def test_inferred_parents_find_what_the_expert_took_from_closed_receptacles(valid_seen: Path, layouts: Path):
    """With the expert's evidence withheld, as on the test split, the inference shuts away every object the
    valid_seen experts picked up from a closed receptacle, and hardly any that they took from the open."""
    import dataclasses

    from eqagen.generators.household.alfred.scene_build import _close, _expert_parents
    from eqagen.generators.household.objects import catalog

    cat = catalog()
    closed = Counter()
    for path in iter_trajectory_paths(valid_seen):
        traj = read_trajectory(path)
        blind = dataclasses.replace(traj, high_pddl=[], low_actions=[])
        objects = build_alfred_scene(blind, read_layout(traj.floor_plan, layouts)).scene.objects
        types = {o.object_id: o.object_type for o in objects}
        for oid, (rec_type, _) in _expert_parents(traj).items():
            pid = parse_object_id(oid)
            match = [o for o in objects if o.object_type == pid.object_type and _close(o.position, pid.position)]
            if match:
                ours = bool(match[0].parent) and cat.get(types[match[0].parent]).can("enclosing")
                closed[(cat.get(rec_type).can("enclosing"), ours)] += 1
    assert closed[(True, True)] >= 19 and closed[(True, False)] == 0  # measured: 19 of 19
    assert closed[(False, True)] <= 3 and closed[(False, False)] >= 270  # measured: 2 of 277
