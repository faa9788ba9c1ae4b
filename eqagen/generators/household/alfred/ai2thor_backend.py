"""The ``household/ai2thor`` backend: the FILM-like agent drives a real AI2-THOR controller.

The agent is the one of the embedded and ALFRED backends; it drives :class:`ThorWorld`, a
:class:`~eqagen.generators.household.world.HouseholdWorld` whose every action is sent to
``ai2thor.controller.Controller`` and whose state is then overwritten from the event's metadata
(:func:`apply_metadata`), so the episode is recorded exactly as the embedded world records one: each
event's metadata becomes one step of our episode.
The scene and the task come from ALFRED's test split as in FILM mode (floor plan, ``SetObjectPoses``
from the recorded poses, lamp toggles, the ``init_action`` teleport, FILM's parse of the instruction).

``ai2thor`` is an optional extra (``pip install eqagen[ai2thor]``), imported only when an episode is run.
``local_executable_path`` points at a local Unity build; ``platform: CloudRendering`` renders headless.
Not run against a real AI2-THOR build here: the contract tests drive :class:`ThorWorld` through a
stand-in controller that answers with metadata exported from our own world in AI2-THOR's documented
schema (:func:`world_to_metadata`), and check the conversion both ways.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any

import numpy as np

from eqagen.core import Episode, make_episode_id
from eqagen.generators.base import EpisodeSpec, register_backend
from eqagen.generators.household.objects import catalog
from eqagen.generators.household.scene import HouseholdScene, SceneObject
from eqagen.generators.household.world import CAMERA_HEIGHT, ActionResult, HouseholdWorld

# Our state flags and the AI2-THOR metadata keys that carry them.
FLAG_KEYS = {
    "open": "isOpen",
    "toggled": "isToggled",
    "broken": "isBroken",
    "sliced": "isSliced",
    "filled": "isFilledWithLiquid",
    "dirty": "isDirty",
}
CAPABILITY_KEYS = {
    "receptacle": "receptacle",
    "toggleable": "toggleable",
    "breakable": "breakable",
    "fillable": "canFillWithLiquid",
    "dirtyable": "dirtyable",
    "used_up": "canBeUsedUp",
    "cookable": "cookable",
    "heat_source": "isHeatSource",
    "cold_source": "isColdSource",
    "sliceable": "sliceable",
    "openable": "openable",
    "pickupable": "pickupable",
}
EVENT_OF_ACTION = {
    "PickupObject": "pickup",
    "PutObject": "put",
    "OpenObject": "open",
    "CloseObject": "close",
    "ToggleObjectOn": "toggle_on",
    "ToggleObjectOff": "toggle_off",
    "SliceObject": "slice",
    "BreakObject": "break",
}
MASS_BY_SIZE = {"small": 0.2, "medium": 2.0, "large": 30.0}


def _xyz(v: np.ndarray | tuple) -> dict[str, float]:
    return {"x": float(v[0]), "y": float(v[1]), "z": float(v[2])}


def _box(center: np.ndarray, r: float) -> dict[str, Any]:
    corners = [[float(center[0] + sx * r), float(center[1] + sy * r), float(center[2] + sz * r)]
               for sx in (1, -1) for sy in (1, -1) for sz in (1, -1)]  # fmt: skip
    return {"center": _xyz(center), "cornerPoints": corners, "size": _xyz((2 * r, 2 * r, 2 * r))}


def _temperature(world: HouseholdWorld, i: int) -> str:
    return "Hot" if world.flags["hot"][i] else "Cold" if world.flags["cold"][i] else "RoomTemp"


def _ancestors(world: HouseholdWorld, i: int) -> list[int]:
    out, p = [], int(world.parent[i])
    while p >= 0 and p not in out:
        out.append(p)
        p = int(world.parent[p])
    return out


def object_metadata(world: HouseholdWorld, i: int, children: dict[int, list[str]], agent: np.ndarray) -> dict:
    """One object's AI2-THOR metadata (every key AI2-THOR's metadata schema requires)."""
    ids, t = world.native_id, world.types[i]
    caps = {key: bool(world.can[c][i]) for c, key in CAPABILITY_KEYS.items()}
    flags = {key: bool(world.flags[f][i]) for f, key in FLAG_KEYS.items()}
    name = t + "_" + ids[i].split("|", 1)[-1].replace("|", "_")
    return {
        "name": name, "objectId": ids[i], "objectType": t,
        "position": _xyz(world.pos[i]), "rotation": _xyz(world.rot[i]),
        "visible": bool(world.visible[i]), "obstructed": bool(world.hidden[i]),
        **caps, **flags,
        "fillLiquid": None, "isUsedUp": False, "isCooked": bool(world.flags["hot"][i] and caps["cookable"]),
        "ObjectTemperature": _temperature(world, i), "isPickedUp": i == world.held,
        "moveable": False, "mass": MASS_BY_SIZE.get(world.attributes[i].get("size", ""), 1.0),
        "salientMaterials": [world.attributes[i].get("material", "")],
        "receptacleObjectIds": children.get(i, []) if caps["receptacle"] else None,
        "distance": float(np.linalg.norm(world.pos[i] - agent)),
        "parentReceptacles": [ids[p] for p in _ancestors(world, i)] or None,
        "isMoving": False,
        "axisAlignedBoundingBox": _box(world.pos[i], float(world.radius[i])),
        "objectOrientedBoundingBox": None,
    }  # fmt: skip


def world_to_metadata(world: HouseholdWorld, last_action: str = "", success: bool = True, error: str = "") -> dict:
    """The world's current state as an AI2-THOR event's metadata, per AI2-THOR's metadata schema."""
    exists = world.flags["exists"]
    # AI2-THOR keeps a sliced whole in the metadata (isSliced true) beside its new slices.
    listed = exists | world.flags["sliced"]
    children: dict[int, list[str]] = {}
    for i in np.flatnonzero(exists & (world.parent >= 0)):
        children.setdefault(int(world.parent[i]), []).append(world.native_id[i])
    x, z = world.grid.xz[world.cell]
    agent = np.array([x, world.agent_y, z])
    objects = [object_metadata(world, int(i), children, agent) for i in np.flatnonzero(listed)]
    held = world.held
    inventory = [{"objectId": world.native_id[held], "objectType": world.types[held]}] if held >= 0 else []
    zero = _xyz((0, 0, 0))
    return {
        "objects": objects, "isSceneAtRest": True,
        "agent": {"name": "agent", "position": _xyz(agent), "rotation": _xyz((0.0, world.yaw, 0.0)),
                  "cameraHorizon": float(world.horizon), "isStanding": True, "inHighFrictionArea": False},
        "heldObjectPose": {"position": zero, "rotation": zero, "localPosition": zero, "localRotation": zero},
        "fov": 90.0, "cameraPosition": _xyz(agent + np.array([0.0, CAMERA_HEIGHT, 0.0])), "cameraOrthSize": 0.0,
        "thirdPartyCameras": [], "collided": False, "collidedObjects": [], "inventoryObjects": inventory,
        "sceneName": world.scene.scene_id, "lastAction": last_action, "errorMessage": error, "errorCode": None,
        "lastActionSuccess": bool(success), "screenWidth": 300, "screenHeight": 300, "agentId": 0,
        "colors": None, "colorBounds": None, "flatSurfacesOnGrid": [], "distances": [], "normals": [],
        "isOpenableGrid": [], "segmentedObjectIds": [], "objectIdsInBox": [], "actionIntReturn": 0,
        "actionFloatReturn": 0.0, "actionStringsReturn": [], "actionFloatsReturn": [], "actionVector3sReturn": [],
        "visibleRange": None, "actionReturn": None, "currentTime": float(world.n_steps),
        "sceneBounds": _box(agent, 10.0),
    }  # fmt: skip


def _innermost_parent(o: dict, by_id: dict[str, dict]) -> str | None:
    """AI2-THOR lists every receptacle an object is in; the innermost is the one deepest in its own chain."""
    parents = [p for p in (o.get("parentReceptacles") or []) if p in by_id]
    if not parents:
        return None
    return max(parents, key=lambda p: len(by_id[p].get("parentReceptacles") or []))


def scene_from_metadata(md: dict, reachable: np.ndarray, scene_id: str, room_kind: str) -> HouseholdScene:
    """A household scene from an AI2-THOR event: every object of a type our object table knows."""
    cat = catalog()
    by_id = {o["objectId"]: o for o in md["objects"] if o["objectType"] in cat.index}
    objects = []
    for oid, o in by_id.items():
        p, r = o["position"], o.get("rotation") or {"x": 0.0, "y": 0.0, "z": 0.0}
        objects.append(SceneObject(
            oid, o["objectType"], (p["x"], p["y"], p["z"]), (r["x"], r["y"], r["z"]), _innermost_parent(o, by_id),
            is_open=bool(o.get("isOpen")), is_toggled=bool(o.get("isToggled")), is_dirty=bool(o.get("isDirty")),
            is_filled=bool(o.get("isFilledWithLiquid")), is_broken=bool(o.get("isBroken")),
            is_sliced=bool(o.get("isSliced")), is_hot=o.get("ObjectTemperature") == "Hot",
            is_cold=o.get("ObjectTemperature") == "Cold",
        ))  # fmt: skip
    a = md["agent"]
    start = (a["position"]["x"], a["position"]["y"], a["position"]["z"], a["rotation"]["y"], a["cameraHorizon"])
    return HouseholdScene(scene_id, room_kind, reachable, a["position"]["y"] - 0.9009, start, objects, source="ai2thor")


def _sync_objects(world: HouseholdWorld, md: dict) -> np.ndarray:
    """Positions, parents and state flags from the metadata; returns AI2-THOR's visible flags."""
    idx = world.id_index
    present = [(idx[o["objectId"]], o) for o in md["objects"] if o["objectId"] in idx]
    by_id = {o["objectId"]: o for _, o in present}
    world.flags["exists"][:] = False
    visible = np.zeros(world.n_entities, dtype=bool)
    for i, o in present:
        p = o["position"]
        world.pos[i] = (p["x"], p["y"], p["z"])
        parent = _innermost_parent(o, by_id)
        world.parent[i] = idx[parent] if parent is not None else -1
        # A sliced whole is still listed by AI2-THOR, but in our world its slices replace it.
        world.flags["exists"][i] = not (o.get("isSliced", False) and world.whole_of[i] < 0)
        for f, key in FLAG_KEYS.items():
            world.flags[f][i] = bool(o.get(key, False))
        world.flags["hot"][i] = o.get("ObjectTemperature") == "Hot"
        world.flags["cold"][i] = o.get("ObjectTemperature") == "Cold"
        visible[i] = bool(o.get("visible", False))
    return visible


def apply_metadata(world: HouseholdWorld, md: dict) -> None:
    """Overwrite the world's state with an AI2-THOR event's metadata (the metadata -> episode direction)."""
    visible = _sync_objects(world, md)
    inv = md.get("inventoryObjects") or []
    world.held = world.id_index.get(inv[0]["objectId"], -1) if inv else -1
    a = md["agent"]
    cell = world.grid.cell_of(a["position"]["x"], a["position"]["z"])
    world.cell = cell if cell >= 0 else world.cell  # off-grid positions keep the last cell
    world.agent_y, world.yaw = float(a["position"]["y"]), float(a["rotation"]["y"]) % 360.0
    world.horizon = float(a["cameraHorizon"])
    world._hidden_stale = True
    world._refresh_visibility()  # our geometry for what the agent's map sees ...
    world.visible = visible  # ... and AI2-THOR's word for what was visible
    world.in_view |= visible
    world.hidden &= ~visible


def _alfred_effects(world: HouseholdWorld, action: str, target: int) -> None:
    """ALFRED's heated/cooled/cleaned bookkeeping (its env, not AI2-THOR, keeps these sets)."""
    kind = world.types[target] if target >= 0 else ""
    if action == "ToggleObjectOn" and kind == "Microwave":
        world.heated[world._contents(target)] = True
    elif action == "CloseObject" and kind == "Fridge":
        world.cooled[world._contents(target)] = True
    elif action == "ToggleObjectOn" and kind == "Faucet" and world.effect_target[target] >= 0:
        world.cleaned[world._contents(int(world.effect_target[target]))] = True


class ThorWorld(HouseholdWorld):
    """A household world whose actions run in AI2-THOR; the state after each one comes from its metadata."""

    def __init__(self, controller: Any, scene: HouseholdScene, max_steps: int = 250):
        self.controller = controller
        super().__init__(scene, max_steps=max_steps)
        apply_metadata(self, controller.last_event.metadata)
        self._recorder = type(self._recorder)(max_steps + 1, self._state())  # restart from the synced state
        self._init_steps(max_steps + 1)
        self._raw_events, self.t = [], -1
        self._record("Initialize", -1, -1, {}, ActionResult(True))

    def _call(self, action: str, target: int, receptacle: int) -> dict[str, Any]:
        call: dict[str, Any] = {"action": action}
        if action == "PutObject":
            call |= {"objectId": self.native_id[receptacle] if receptacle >= 0 else None, "forceAction": True}
        elif target >= 0:
            call["objectId"] = self.native_id[target]
        if action in ("LookUp", "LookDown"):
            call["degrees"] = 15  # ALFRED's and FILM's camera step
        return call

    def act(self, action: str, target: int = -1, receptacle: int = -1, args: dict | None = None) -> ActionResult:
        if self.t + 1 >= self.max_steps + 1:
            raise IndexError(f"episode is full: {self.max_steps} steps taken")
        held_before, parent_before = self.held, int(self.parent[target]) if target >= 0 else -1
        md = self.controller.step(**self._call(action, target, receptacle)).metadata
        apply_metadata(self, md)
        result = ActionResult(bool(md["lastActionSuccess"]), str(md.get("errorMessage") or ""))
        if result.success and action in EVENT_OF_ACTION:
            entity = held_before if action == "PutObject" else target
            other = receptacle if action == "PutObject" else parent_before if action == "PickupObject" else -1
            self._event(EVENT_OF_ACTION[action], entity, other)
            _alfred_effects(self, action, target)
        self._record(action, target, receptacle, args or {}, result)
        return result


@dataclass
class ThorSettings:
    local_executable_path: str | None = None
    platform: str | None = None  # "CloudRendering" for headless rendering
    width: int = 300
    height: int = 300


def make_controller(settings: ThorSettings, scene: str) -> Any:
    """``ai2thor.controller.Controller`` for the scene (imported here: ai2thor is an optional extra)."""
    try:
        controller_mod = importlib.import_module("ai2thor.controller")
    except ImportError as exc:
        from eqagen.core import ConfigError

        raise ConfigError("generation.backend", "the ai2thor backend needs the ai2thor package",
                          "pip install 'eqagen[ai2thor]'") from exc  # fmt: skip
    kwargs: dict[str, Any] = {"scene": scene, "gridSize": 0.25, "width": settings.width, "height": settings.height}
    if settings.local_executable_path:
        kwargs["local_executable_path"] = settings.local_executable_path
    if settings.platform:
        kwargs["platform"] = getattr(importlib.import_module("ai2thor.platform"), settings.platform)
    return controller_mod.Controller(**kwargs)


def restore_alfred_scene(controller: Any, traj: Any) -> np.ndarray:
    """ALFRED's restore_scene in AI2-THOR 5's API: poses, lamp toggles, the start teleport.

    Returns the reachable (x, z) cells. ALFRED set lamps with the 2.1-era ``SetObjectStates``; here each
    lamp of a toggled type is switched with ``ToggleObjectOn/Off`` (``forceAction``). ``dirty_and_empty``
    is not applied (the current API documents no bulk state setter).
    """
    poses = [{"objectName": p.object_name, "position": _xyz(p.position), "rotation": _xyz(p.rotation)}
             for p in traj.object_poses]  # fmt: skip
    controller.step(action="SetObjectPoses", objectPoses=poses)
    for toggle in traj.object_toggles:
        on = bool(toggle.get("isOn", False))
        for o in controller.last_event.metadata["objects"]:
            if o["objectType"] == toggle.get("objectType") and bool(o.get("isToggled")) != on:
                action = "ToggleObjectOn" if on else "ToggleObjectOff"
                controller.step(action=action, objectId=o["objectId"], forceAction=True)
    a = traj.init_action
    controller.step(action="TeleportFull", position={"x": a["x"], "y": a["y"], "z": a["z"]},
                    rotation={"x": 0, "y": a["rotation"], "z": 0}, horizon=a["horizon"], standing=True)  # fmt: skip
    points = controller.step(action="GetReachablePositions").metadata["actionReturn"] or []
    return np.array([[p["x"], p["z"]] for p in points], dtype=np.float64).reshape(-1, 2)


@register_backend("household", "ai2thor")
class Ai2ThorBackend:
    """FILM mode of the ALFRED backend, with AI2-THOR as the world (same params plus the controller's)."""

    family = "household"
    backend = "ai2thor"

    def plan(self, n_episodes: int, seed: int, params: dict[str, Any]) -> list[EpisodeSpec]:
        from eqagen.generators.household.alfred.backend import AlfredBackend

        thor = {k: params[k] for k in ("local_executable_path", "platform") if k in params}
        rest = {k: v for k, v in params.items() if k not in thor}
        specs = AlfredBackend().plan(n_episodes, seed, rest | {"mode": "film"})
        return [EpisodeSpec(s.family, "ai2thor", s.scene_id, s.seed, s.index, s.params | thor) for s in specs]

    def run(self, spec: EpisodeSpec) -> Episode:
        from eqagen.core import derive_rng
        from eqagen.generators.household.agent import FilmAgent
        from eqagen.generators.household.alfred.backend import _parses, _realdata, data_root, parse_params
        from eqagen.generators.household.alfred.film import FILM_FILES, lookup_parse
        from eqagen.generators.household.alfred.film_run import FILM_AGENT, agent_task
        from eqagen.generators.household.alfred.reader import read_trajectory
        from eqagen.generators.household.alfred.scene_build import room_kind

        params = dict(spec.params)
        settings = ThorSettings(params.pop("local_executable_path", None), params.pop("platform", None))
        rel, repeat_idx = params.pop("trajectory"), int(params.pop("repeat_idx", 0))
        p = parse_params(params)
        traj = read_trajectory(data_root(p) / rel)
        parse = lookup_parse(_parses(p.parses or str(_realdata("film", FILM_FILES.get(p.split, p.split)))),
                             traj.instruction(repeat_idx))  # fmt: skip
        controller = make_controller(settings, traj.floor_plan)
        try:
            reachable = restore_alfred_scene(controller, traj)
            md = controller.last_event.metadata
            scene = scene_from_metadata(md, reachable, traj.floor_plan, room_kind(traj.floor_plan))
            world = ThorWorld(controller, scene, p.max_steps)
            agent = FilmAgent(world, agent_task(parse), derive_rng(spec.seed, "ai2thor", rel, repeat_idx), FILM_AGENT)
            success, reason = agent.run()
        finally:
            controller.stop()
        meta = {"mode": "film", "simulator": "ai2thor", "trajectory": rel, "instruction": traj.instruction(repeat_idx),
                "film_parse": parse.to_dict(), "success": success, "stop_reason": reason}  # fmt: skip
        episode_id = make_episode_id("ai2thor", traj.floor_plan, spec.seed, rel, repeat_idx)
        return world.to_episode(episode_id, "ai2thor", spec.seed, parse.goal().to_dict(), meta)
