"""An AI2-THOR-style metadata view of the household world, for ALFRED's goal checks.

Only the fields ALFRED's goal conditions read: per object ``objectId``, ``objectType``, ``position``,
``pickupable``, ``receptacle``, ``toggleable``, ``isToggled``, ``isSliced``, ``visible``,
``receptacleObjectIds`` (what rests directly in it) and ``parentReceptacles`` (every receptacle it is
in, innermost first), plus ``inventoryObjects``. Objects that no longer exist (a whole apple after
slicing) are left out, as AI2-THOR removes them.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eqagen.generators.household.world import HouseholdWorld


def _ancestors(parent: np.ndarray, i: int) -> list[int]:
    out, p = [], int(parent[i])
    while p >= 0 and p not in out:
        out.append(p)
        p = int(parent[p])
    return out


def world_metadata(
    world: HouseholdWorld, only_types: frozenset[str] | None = None, names: tuple[str, ...] | None = None
) -> dict[str, Any]:
    """The metadata view. ``only_types`` limits ``objects`` to those types, ``names`` to objects whose id
    contains one of the names (ALFRED's own matching, so a goal check over that view is unchanged)."""
    exists = world.flags["exists"]
    wanted = exists if only_types is None else exists & np.isin(np.array(world.types), list(only_types))
    if names is not None:
        wanted = wanted & np.array([any(n in oid for n in names if n) for oid in world.native_id])
    ids = world.native_id
    children: dict[int, list[str]] = {}
    for i in np.flatnonzero(exists & (world.parent >= 0)):
        children.setdefault(int(world.parent[i]), []).append(ids[i])
    objects = []
    for i in np.flatnonzero(wanted):
        i = int(i)
        x, y, z = world.pos[i]
        objects.append(
            {
                "objectId": ids[i],
                "objectType": world.types[i],
                "position": {"x": float(x), "y": float(y), "z": float(z)},
                "pickupable": bool(world.can["pickupable"][i]),
                "receptacle": bool(world.can["receptacle"][i]),
                "toggleable": bool(world.can["toggleable"][i]),
                "isToggled": bool(world.flags["toggled"][i]),
                "isSliced": bool(world.flags["sliced"][i]),
                "visible": bool(world.visible[i]),
                "receptacleObjectIds": children.get(i, []) if world.can["receptacle"][i] else None,
                "parentReceptacles": [ids[p] for p in _ancestors(world.parent, i)] or None,
            }
        )
    held = [{"objectId": ids[world.held], "objectType": world.types[world.held]}] if world.held >= 0 else []
    return {"objects": objects, "inventoryObjects": held}
