"""Household episodes with AI2-THOR semantics: embedded procedural homes, ALFRED replay, a FILM-like agent.

Modules: :mod:`.objects` (object types, capabilities, receptacle rules, static attributes),
:mod:`.scene` (the starting state of a room), :mod:`.world` (the simulator), :mod:`.homes`
(procedural rooms), :mod:`.tasks` and :mod:`.agent` (ALFRED tasks and the FILM-like agent),
:mod:`.metadata` (AI2-THOR metadata export) and :mod:`.backend` (the ``household/embedded`` backend).
"""

from eqagen.generators.household.scene import (
    GRID_SIZE,
    ROOM_KINDS,
    HouseholdScene,
    SceneObject,
    make_object_id,
)

__all__ = ["GRID_SIZE", "ROOM_KINDS", "HouseholdScene", "SceneObject", "make_object_id"]
