"""Contract of the ai2thor backend against AI2-THOR's documented metadata schema, offline.

No AI2-THOR build runs here. :class:`StandInController` stands in for ``ai2thor.controller.Controller``:
it steps our own household world and answers each action with that world's state exported as an
AI2-THOR event (``ai2thor.server.Event`` when the ai2thor package is installed). The checks: the export
carries every key AI2-THOR's ``tests/data/metadata-schema.json`` requires, with the documented JSON
types; metadata -> world state reproduces the source state exactly; and the FILM-like agent driving
:class:`ThorWorld` through the stand-in takes exactly the steps it takes in the world directly.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from eqagen.core import derive_rng
from eqagen.generators.household.agent import AgentConfig, FilmAgent
from eqagen.generators.household.alfred.ai2thor_backend import (
    ThorWorld,
    apply_metadata,
    scene_from_metadata,
    world_to_metadata,
)
from eqagen.generators.household.backend import home_for
from eqagen.generators.household.tasks import sample_task
from eqagen.generators.household.world import HouseholdWorld

# Required keys and JSON types of AI2-THOR's metadata schema (ai2thor tests/data/metadata-schema.json).
NUM, BOOL, STR, ARR, OBJ, NULL, INT = (int, float), bool, str, list, dict, type(None), int
OBJECT_KEYS = {
    "name": STR, "position": OBJ, "rotation": OBJ, "visible": BOOL, "obstructed": BOOL, "receptacle": BOOL,
    "toggleable": BOOL, "isToggled": BOOL, "breakable": BOOL, "isBroken": BOOL, "canFillWithLiquid": BOOL,
    "fillLiquid": NULL, "isFilledWithLiquid": BOOL, "dirtyable": BOOL, "isDirty": BOOL, "canBeUsedUp": BOOL,
    "isUsedUp": BOOL, "cookable": BOOL, "isCooked": BOOL, "ObjectTemperature": STR, "isHeatSource": BOOL,
    "isColdSource": BOOL, "sliceable": BOOL, "isSliced": BOOL, "openable": BOOL, "isOpen": BOOL,
    "pickupable": BOOL, "isPickedUp": BOOL, "moveable": BOOL, "mass": NUM, "salientMaterials": (NULL, ARR),
    "receptacleObjectIds": (NULL, ARR), "distance": NUM, "objectType": STR, "objectId": STR,
    "parentReceptacles": (NULL, ARR), "isMoving": BOOL, "axisAlignedBoundingBox": OBJ,
    "objectOrientedBoundingBox": (NULL, OBJ),
}  # fmt: skip
TOP_KEYS = {
    "actionFloatReturn": NUM, "actionFloatsReturn": ARR, "actionIntReturn": INT, "actionReturn": (OBJ, NULL),
    "actionStringsReturn": ARR, "actionVector3sReturn": ARR, "agent": OBJ, "agentId": INT, "cameraOrthSize": NUM,
    "cameraPosition": OBJ, "collided": BOOL, "collidedObjects": ARR, "colorBounds": NULL, "colors": NULL,
    "currentTime": NUM, "distances": ARR, "errorCode": NULL, "errorMessage": STR, "flatSurfacesOnGrid": ARR,
    "fov": NUM, "heldObjectPose": OBJ, "inventoryObjects": ARR, "isOpenableGrid": ARR, "isSceneAtRest": BOOL,
    "lastAction": STR, "lastActionSuccess": BOOL, "normals": ARR, "objectIdsInBox": ARR, "objects": ARR,
    "sceneBounds": OBJ, "sceneName": STR, "screenHeight": INT, "screenWidth": INT, "segmentedObjectIds": ARR,
    "thirdPartyCameras": ARR, "visibleRange": (OBJ, NULL),
}  # fmt: skip
AGENT_KEYS = {"cameraHorizon": NUM, "inHighFrictionArea": BOOL, "isStanding": BOOL, "name": STR, "position": OBJ,
              "rotation": OBJ}  # fmt: skip


def _typed(value: Any, kinds: Any) -> bool:
    kinds = kinds if isinstance(kinds, tuple) else (kinds,)
    flat = tuple(k for kk in kinds for k in (kk if isinstance(kk, tuple) else (kk,)))
    if isinstance(value, bool):
        return bool in flat
    return isinstance(value, flat)


def check_schema(md: dict) -> None:
    for key, kind in TOP_KEYS.items():
        assert key in md and _typed(md[key], kind), key
    for key, kind in AGENT_KEYS.items():
        assert key in md["agent"] and _typed(md["agent"][key], kind), key
    for o in md["objects"]:
        for key, kind in OBJECT_KEYS.items():
            assert key in o and _typed(o[key], kind), (o["objectId"], key)
        assert set(o["position"]) == {"x", "y", "z"} and set(o["axisAlignedBoundingBox"]) >= {"center", "size"}


def make_event(md: dict) -> Any:
    try:
        from ai2thor.server import Event
    except ImportError:  # the ai2thor extra is absent: the metadata itself is what is checked
        return SimpleNamespace(metadata=md)
    return Event(md)


class StandInController:
    """Stands in for ai2thor.controller.Controller, which cannot run here: our world answers as AI2-THOR."""

    def __init__(self, world: HouseholdWorld):
        self.world = world
        self.last_event = make_event(world_to_metadata(world))
        self.calls: list[dict] = []
        self.events: list[dict] = []

    def step(self, action: str, objectId: str | None = None, **kwargs: Any) -> Any:
        self.calls.append({"action": action, "objectId": objectId, **kwargs})
        result = self.world.step(action, objectId=objectId, **kwargs)
        md = world_to_metadata(self.world, action, result.success, result.error)
        self.events.append(md)
        self.last_event = make_event(md)
        return self.last_event


SCENES = ["kitchen-0-3", "living_room-0-1", "bedroom-0-2", "bathroom-0-5"]


def _agent_run(world: HouseholdWorld, scene_id: str, seed: int) -> None:
    task = sample_task(home_for(scene_id), derive_rng(seed, "task", scene_id))
    FilmAgent(world, task, derive_rng(seed, "agent", scene_id), AgentConfig()).run()


@pytest.mark.parametrize("scene_id", SCENES)
def test_export_follows_the_schema_at_every_step(scene_id: str):
    controller = StandInController(HouseholdWorld(home_for(scene_id), max_steps=400))
    world = controller.world
    scene = scene_from_metadata(controller.last_event.metadata, world.grid.xz, scene_id, world.scene.room_kind)
    _agent_run(ThorWorld(controller, scene, max_steps=80), scene_id, 0)
    assert len(controller.events) > 10
    for md in controller.events:
        check_schema(md)
        ids = {o["objectId"] for o in md["objects"]}
        for o in md["objects"]:  # receptacleObjectIds and parentReceptacles agree with each other
            assert set(o["parentReceptacles"] or []) <= ids
            for c in o["receptacleObjectIds"] or []:
                child = next(x for x in md["objects"] if x["objectId"] == c)
                assert child["parentReceptacles"][0] == o["objectId"]
    last = controller.events[-1]
    assert {o["objectId"] for o in last["objects"]} == {
        world.native_id[i] for i in np.flatnonzero(world.flags["exists"])
    }


@pytest.mark.parametrize("scene_id", SCENES)
def test_metadata_to_world_reproduces_the_state(scene_id: str):
    source = HouseholdWorld(home_for(scene_id), max_steps=120)
    mirror_scene = scene_from_metadata(world_to_metadata(source), source.grid.xz, scene_id, source.scene.room_kind)
    mirror = HouseholdWorld(mirror_scene, max_steps=5)
    assert mirror.native_id == source.native_id
    _agent_run(source, scene_id, 1)
    apply_metadata(mirror, world_to_metadata(source))
    assert np.array_equal(mirror.pos, source.pos) and np.array_equal(mirror.parent, source.parent)
    for flag in ("open", "toggled", "broken", "sliced", "filled", "dirty", "hot", "cold", "exists"):
        assert np.array_equal(mirror.flags[flag], source.flags[flag]), flag
    assert (mirror.held, mirror.cell, mirror.yaw, mirror.horizon) == (source.held, source.cell, source.yaw,
                                                                      source.horizon)  # fmt: skip
    assert np.array_equal(mirror.visible, source.visible)


@pytest.mark.parametrize("scene_id", SCENES[:2])
def test_agent_through_the_controller_takes_the_same_steps(scene_id: str):
    direct = HouseholdWorld(home_for(scene_id), max_steps=150)
    _agent_run(direct, scene_id, 2)
    controller = StandInController(HouseholdWorld(home_for(scene_id), max_steps=400))
    md = controller.last_event.metadata
    scene = scene_from_metadata(md, controller.world.grid.xz, scene_id, direct.scene.room_kind)
    thor = ThorWorld(controller, scene, max_steps=150)
    _agent_run(thor, scene_id, 2)
    assert thor.s_action == direct.s_action
    n = direct.n_steps
    assert np.array_equal(thor.s_success[:n], direct.s_success[:n]) and np.array_equal(
        thor.s_held[:n], direct.s_held[:n]
    )
    a, b = thor.dense_timeline(), direct.dense_timeline()
    for name in b:
        assert np.array_equal(a[name], b[name]), name
    ep = thor.to_episode("x", "ai2thor", 2, {}, {})
    assert [(e.t, e.kind, e.entity) for e in ep.events if e.kind in ("pickup", "put", "open", "close")] == [
        (e.t, e.kind, e.entity) for e in direct.to_episode("x", "embedded", 2, {}, {}).events
        if e.kind in ("pickup", "put", "open", "close")
    ]  # fmt: skip
    # actions reached the controller in AI2-THOR's form: PutObject names the receptacle only
    puts = [c for c in controller.calls if c["action"] == "PutObject"]
    assert all(c["forceAction"] and c["objectId"] for c in puts)


def test_household_step_metadata_converts_back_to_the_episode():
    metadata = pytest.importorskip("eqagen.generators.household.metadata", reason="household metadata export absent")
    scene_id = SCENES[0]
    world = HouseholdWorld(home_for(scene_id), max_steps=120)
    _agent_run(world, scene_id, 3)
    ep = world.to_episode("x", "embedded", 3, {}, {})
    first = metadata.step_metadata(ep, 0)
    mirror = HouseholdWorld(scene_from_metadata(first, world.grid.xz, scene_id, world.scene.room_kind), max_steps=5)
    frame = ep.frame
    for t in range(0, ep.n_steps, 7):
        apply_metadata(mirror, metadata.step_metadata(ep, t))
        state = ep.timeline.state_at(t)
        native = frame.to_native(state["position"].astype(np.float64))
        exists = state["exists"]
        idx = [mirror.id_index[ep.entities.native_id[i]] for i in range(ep.n_entities)]
        assert np.allclose(mirror.pos[idx][exists], native[exists], atol=1e-4)
        assert np.array_equal(mirror.flags["exists"][idx], exists)
        for flag in ("open", "toggled", "sliced", "dirty"):
            assert np.array_equal(mirror.flags[flag][idx][exists], state[flag][exists]), (t, flag)
        assert mirror.held == (idx[ep.steps.held[t]] if ep.steps.held[t] >= 0 else -1)


class SceneStandIn(StandInController):
    """The stand-in also answers the scene-setup calls the backend makes (the world already is that scene)."""

    SETUP = ("SetObjectPoses", "SetObjectStates", "TeleportFull")

    def step(self, action: str, objectId: str | None = None, **kwargs: Any) -> Any:
        if action in self.SETUP or action == "GetReachablePositions":
            self.calls.append({"action": action, **kwargs})
            md = world_to_metadata(self.world, action, True, "")
            if action == "GetReachablePositions":
                md["actionReturn"] = [{"x": x, "y": self.world.agent_y, "z": z} for x, z in self.world.grid.xz]
            self.last_event = make_event(md)
            return self.last_event
        return super().step(action, objectId=objectId, **kwargs)

    def stop(self) -> None:
        self.stopped = True


@pytest.mark.realdata
def test_backend_runs_an_alfred_test_episode_through_the_controller(realdata, monkeypatch: pytest.MonkeyPatch):
    from eqagen.generators import get_backend
    from eqagen.generators.household.alfred import ai2thor_backend
    from eqagen.generators.household.alfred.film_run import film_scene
    from eqagen.generators.household.alfred.reader import read_layout, read_trajectory

    monkeypatch.setenv("EQAGEN_REALDATA", str(realdata))
    made: list[SceneStandIn] = []

    def stand_in(settings, floor_plan):
        assert settings.platform == "CloudRendering" and settings.local_executable_path == "/opt/thor/build"
        traj = read_trajectory(realdata / "alfred" / "json_2.1.0" / "tests_seen" / spec.params["trajectory"])
        scene = film_scene(traj, read_layout(floor_plan, realdata / "alfred" / "layouts"), None).scene
        made.append(SceneStandIn(HouseholdWorld(scene, max_steps=400)))
        return made[-1]

    monkeypatch.setattr(ai2thor_backend, "make_controller", stand_in)
    backend = get_backend("household", "ai2thor")
    spec = backend.plan(1, 0, {"local_executable_path": "/opt/thor/build", "platform": "CloudRendering",
                               "max_steps": 60})[0]  # fmt: skip
    ep = backend.run(spec)
    controller = made[0]
    assert [c["action"] for c in controller.calls[:3]] == ["SetObjectPoses", "TeleportFull", "GetReachablePositions"]
    assert controller.stopped and ep.backend == "ai2thor" and ep.scene_id == spec.scene_id
    assert ep.n_steps == len(controller.calls) - 2  # every agent action is one recorded step (plus Initialize)
    assert ep.meta["simulator"] == "ai2thor" and ep.meta["instruction"]


@pytest.mark.realdata
def test_restore_switches_lamps_as_the_trajectory_says(realdata):
    from eqagen.generators.household.alfred.ai2thor_backend import restore_alfred_scene
    from eqagen.generators.household.alfred.reader import iter_trajectory_paths, read_layout, read_trajectory
    from eqagen.generators.household.alfred.scene_build import build_alfred_scene

    valid = realdata / "alfred" / "json_2.1.0" / "valid_seen"
    traj = next(t for t in map(read_trajectory, iter_trajectory_paths(valid)) if t.object_toggles)
    scene = build_alfred_scene(traj, read_layout(traj.floor_plan, realdata / "alfred" / "layouts")).scene
    lamp_type = traj.object_toggles[0]["objectType"]
    for o in scene.objects:  # the scene as AI2-THOR loads it: lamps on
        o.is_toggled = o.is_toggled or o.object_type == lamp_type
    controller = SceneStandIn(HouseholdWorld(scene, max_steps=50))
    cells = restore_alfred_scene(controller, traj)
    world = controller.world
    lamps = [i for i, t in enumerate(world.types) if t == lamp_type]
    assert lamps and not world.flags["toggled"][lamps].any()
    assert [c["action"] for c in controller.calls].count("ToggleObjectOff") == len(lamps)
    assert len(cells) == len(world.grid.xz) and controller.calls[-1]["action"] == "GetReachablePositions"
