"""Export any step of a household episode as an AI2-THOR metadata dict.

The dict uses AI2-THOR's key names and native (Unity) coordinates, so tools written against
``controller.last_event.metadata`` can read it: ``objects`` (objectId, objectType, position,
rotation, visible, parentReceptacles, receptacleObjectIds, isOpen, isToggled, isBroken, isSliced,
isFilledWithLiquid, isDirty, ObjectTemperature, isPickedUp, the capability booleans, ...), ``agent``
(position, rotation, cameraHorizon), ``inventoryObjects``, ``lastAction``, ``lastActionSuccess``,
``errorMessage`` and ``sceneName``. Slices not yet cut are left out; a sliced whole stays listed with
``isSliced`` true and not visible, as AI2-THOR keeps it (ALFRED's ``correct_slice_id`` reads the
whole's ``isSliced`` after slicing).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eqagen.core import Episode

# AI2-THOR capability key -> this project's capability name.
CAPABILITY_KEYS = {
    "pickupable": "pickupable",
    "receptacle": "receptacle",
    "openable": "openable",
    "toggleable": "toggleable",
    "sliceable": "sliceable",
    "breakable": "breakable",
    "canFillWithLiquid": "fillable",
    "dirtyable": "dirtyable",
    "cookable": "cookable",
    "canBeUsedUp": "used_up",
}
# AI2-THOR state key -> timeline flag.
STATE_KEYS = {
    "isOpen": "open",
    "isToggled": "toggled",
    "isBroken": "broken",
    "isSliced": "sliced",
    "isFilledWithLiquid": "filled",
    "isDirty": "dirty",
}


def _xyz(v: np.ndarray) -> dict[str, float]:
    return {"x": round(float(v[0]), 4), "y": round(float(v[1]), 4), "z": round(float(v[2]), 4)}


def _ancestors(parent: np.ndarray, i: int) -> list[int]:
    out: list[int] = []
    p = int(parent[i])
    while p >= 0 and p not in out:
        out.append(p)
        p = int(parent[p])
    return out


def _temperature(hot: bool, cold: bool) -> str:
    return "Hot" if hot else "Cold" if cold else "RoomTemp"


def _object_dict(ep: Episode, state: dict[str, np.ndarray], native: np.ndarray, i: int, held: int) -> dict[str, Any]:
    ents = ep.entities
    caps = set(ents.capabilities[i])
    parent = state["parent"]
    rot = ep.meta.get("native_rotation")
    children = np.flatnonzero((parent == i) & state["exists"])
    d: dict[str, Any] = {
        "objectId": ents.native_id[i],
        "objectType": ents.type[i],
        "name": ents.instance_id[i],
        "position": _xyz(native[i]),
        "rotation": _xyz(np.asarray(rot[i])) if rot else {"x": 0.0, "y": 0.0, "z": 0.0},
        "visible": bool(state["visible"][i]),
        "isInteractable": bool(state["visible"][i]),
        "parentReceptacles": [ents.native_id[p] for p in _ancestors(parent, i)] or None,
        "receptacleObjectIds": [ents.native_id[c] for c in children] if "receptacle" in caps else None,
        "isPickedUp": bool(i == held),
        "ObjectTemperature": _temperature(bool(state["hot"][i]), bool(state["cold"][i])),
        "salientMaterials": [ents.attributes[i].get("material", "")],
        "moveable": False,
        "isUsedUp": False,
        "isCooked": False,
    }
    d.update({key: cap in caps for key, cap in CAPABILITY_KEYS.items()})
    d.update({key: bool(state[flag][i]) for key, flag in STATE_KEYS.items()})
    return d


def step_metadata(ep: Episode, t: int) -> dict[str, Any]:
    """The AI2-THOR metadata of step ``t`` (after its action), in native coordinates."""
    if not 0 <= t < ep.n_steps:
        raise IndexError(f"step {t} is outside the episode (0..{ep.n_steps - 1})")
    state = ep.timeline.state_at(t)
    native = ep.frame.to_native(state["position"])
    pose = ep.steps.pose[t]
    agent_native = ep.frame.to_native(pose[:3])
    held = int(ep.steps.held[t])
    listed = np.flatnonzero(state["exists"] | state["sliced"])
    objects = [_object_dict(ep, state, native, i, held) for i in listed]
    for o, i in zip(objects, listed):
        o["distance"] = round(float(np.hypot(*(native[i, [0, 2]] - agent_native[[0, 2]]))), 4)
    return {
        "sceneName": ep.scene_id,
        "objects": objects,
        "agent": {
            "position": _xyz(agent_native),
            "rotation": {"x": 0.0, "y": round(float(ep.frame.yaw_to_native(pose[3])), 4), "z": 0.0},
            "cameraHorizon": round(float(pose[4]), 4),
            "isStanding": True,
        },
        "inventoryObjects": (
            [{"objectId": ep.entities.native_id[held], "objectType": ep.entities.type[held]}] if held >= 0 else []
        ),
        "lastAction": ep.steps.action[t],
        "lastActionSuccess": bool(ep.steps.success[t]),
        "errorMessage": ep.steps.error[t],
    }
