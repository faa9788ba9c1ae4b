"""Procedural homes, the AI2-THOR metadata export and the household/embedded backend."""

from __future__ import annotations

import json

import numpy as np
import pytest
from scipy import ndimage

from eqagen.core import ConfigError, UnknownNameError
from eqagen.generators import get_backend
from eqagen.generators.household.homes import make_home
from eqagen.generators.household.metadata import step_metadata
from eqagen.generators.household.objects import catalog
from eqagen.generators.household.scene import ROOM_KINDS, HouseholdScene

FURNITURE_KEYS = ("CounterTop", "Fridge", "Sofa", "Bed", "Toilet", "DiningTable", "Desk", "TVStand")


def _signature(scene: HouseholdScene) -> tuple:
    layout = tuple(sorted(o.object_id for o in scene.objects if o.parent is None))
    contents = tuple(sorted(o.object_type for o in scene.objects if o.parent is not None))
    return layout, contents, scene.reachable.shape[0]


def test_hundred_seeds_give_hundred_different_rooms():
    scenes = [make_home(ROOM_KINDS[s % 4], s, 0) for s in range(100)]
    layouts = {_signature(s)[0] for s in scenes}
    contents = {_signature(s)[1] for s in scenes}
    assert len(layouts) == 100 and len(contents) >= 95
    sizes = {len(s.reachable) for s in scenes}
    assert len(sizes) > 40  # rooms differ in size too, not only in object ids


def test_homes_are_consistent():
    cat = catalog()
    for s in range(60):
        scene = make_home(ROOM_KINDS[s % 4], 40 + s, s)
        scene.validate()
        again = make_home(ROOM_KINDS[s % 4], 40 + s, s)  # same inputs, same room
        assert again.objects == scene.objects and np.array_equal(again.reachable, scene.reachable)
        by_id = {o.object_id: o for o in scene.objects}
        for o in scene.objects:
            if o.parent is not None:  # small objects rest in receptacles that may hold them (ALFRED's table)
                assert cat.can_hold(by_id[o.parent].object_type, o.object_type), (o.object_type, o.parent)
            assert scene.room_kind in cat.get(o.object_type).rooms or o.object_type in ("Faucet", "StoveKnob")
        # one connected floor area on the 0.25 m grid
        ij = np.rint(scene.reachable / 0.25).astype(int)
        ij -= ij.min(axis=0)
        grid = np.zeros(ij.max(axis=0) + 1, dtype=bool)
        grid[ij[:, 0], ij[:, 1]] = True
        assert ndimage.label(grid)[1] == 1
        # every floor-standing piece can be approached
        for o in scene.objects:
            if o.parent is None:
                d = np.hypot(scene.reachable[:, 0] - o.position[0], scene.reachable[:, 1] - o.position[2])
                assert d.min() <= 1.3, o.object_id
        assert sum(o.object_type in FURNITURE_KEYS for o in scene.objects) >= 1


def test_unknown_room_kind():
    with pytest.raises(UnknownNameError, match="room kind 'garage'"):
        make_home("garage", 0)


@pytest.fixture(scope="module")
def backend():
    return get_backend("household", "embedded")


def test_backend_is_deterministic_and_spreads_scenes(backend):
    specs = backend.plan(12, 3, {"n_scenes": 4, "room_kinds": ["kitchen", "bedroom"]})
    assert [s.scene_id for s in specs[:4]] == ["kitchen-3-0", "bedroom-3-1", "kitchen-3-2", "bedroom-3-3"]
    assert len({s.seed for s in specs}) == 12
    a, b = backend.run(specs[5]), backend.run(specs[5])
    assert json.dumps(a.to_dict(), sort_keys=True) == json.dumps(b.to_dict(), sort_keys=True)
    assert a.family == "household" and a.backend == "embedded" and a.scene_id == specs[5].scene_id
    assert a.frame.native == "ai2thor" and a.meta["stop_reason"] and "task_type" in a.task


def test_backend_params_are_checked(backend):
    with pytest.raises(ConfigError, match="room_kinds"):
        backend.plan(2, 0, {"room_kinds": ["garage"]})
    with pytest.raises(ConfigError, match="n_scenes"):
        backend.plan(2, 0, {"n_scenes": 0})
    with pytest.raises(ConfigError, match="agent"):
        backend.plan(2, 0, {"agent": {"bravery": 1.0}})
    with pytest.raises(UnknownNameError, match="pick_and_juggle"):
        backend.plan(2, 0, {"task": {"task_type": "pick_and_juggle", "object_target": "Apple"}})


def test_fixed_task_is_used(backend):
    task = {"task_type": "pick_and_place_simple", "object_target": "Apple", "parent_target": "Fridge"}
    specs = backend.plan(40, 9, {"room_kinds": ["kitchen"], "task": task, "n_scenes": 40})
    ran = 0
    for spec in specs:
        try:
            ep = backend.run(spec)
        except Exception as exc:  # a kitchen without an apple: the error names what is missing
            assert "Apple" in str(exc)
            continue
        assert ep.task["object_target"] == "Apple" and ep.task["parent_target"] == "Fridge"
        ran += 1
    assert ran >= 5


def test_metadata_export_matches_the_timeline(backend):
    ep = backend.run(backend.plan(3, 1, {"room_kinds": ["kitchen"]})[2])
    for t in (0, ep.n_steps // 2, ep.n_steps - 1):
        m = step_metadata(ep, t)
        assert m["lastAction"] == ep.steps.action[t] and m["lastActionSuccess"] == bool(ep.steps.success[t])
        assert m["errorMessage"] == ep.steps.error[t]
        native = ep.frame.to_native(ep.timeline.field("position")[t].astype(np.float64))
        exists = ep.timeline.field("exists")[t]
        sliced = ep.timeline.field("sliced")[t]
        ids = {o["objectId"]: o for o in m["objects"]}
        assert len(ids) == int((exists | sliced).sum())  # a sliced whole stays listed, as in AI2-THOR
        for i in np.flatnonzero(sliced & ~exists):
            assert ids[ep.entities.native_id[i]]["isSliced"] and not ids[ep.entities.native_id[i]]["visible"]
        for i in np.flatnonzero(exists):
            o = ids[ep.entities.native_id[i]]
            assert o["objectType"] == ep.entities.type[i]
            assert np.allclose([o["position"][k] for k in "xyz"], native[i], atol=1e-3)
            assert o["isOpen"] == bool(ep.timeline.field("open")[t, i])
            assert o["visible"] == bool(ep.timeline.field("visible")[t, i])
            for r in o["receptacleObjectIds"] or []:
                assert ids[r]["parentReceptacles"][0] == o["objectId"]
        pose = ep.steps.pose[t]
        agent = ep.frame.to_native(pose[:3].astype(np.float64))
        assert np.allclose([m["agent"]["position"][k] for k in "xyz"], agent, atol=1e-3)
        assert m["agent"]["cameraHorizon"] == pytest.approx(float(pose[4]))
    json.dumps(m)  # plain JSON, as AI2-THOR's metadata is
    with pytest.raises(IndexError):
        step_metadata(ep, ep.n_steps)
