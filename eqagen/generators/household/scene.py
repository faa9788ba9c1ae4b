"""A household scene before anything happens: what the world starts from.

Both sources build this one structure: the embedded procedural homes (:mod:`.homes`) and the real
ALFRED scenes (from AI2-THOR layouts and ``traj_data.json``). Everything is in AI2-THOR's native
Unity frame (left-handed, y up, metres, yaw 0 faces +z, yaw 90 faces +x), so object ids and
positions read exactly like an AI2-THOR metadata dump. :class:`~.world.HouseholdWorld` takes a
scene and simulates it.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

ROOM_KINDS = ("kitchen", "living_room", "bedroom", "bathroom")
GRID_SIZE = 0.25  # AI2-THOR's default gridSize, as ALFRED uses it


def make_object_id(object_type: str, position: tuple[float, float, float]) -> str:
    """AI2-THOR's objectId form ``Type|x|y|z``, printed as the simulator does: ``Apple|-01.49|+00.94|+00.39``."""
    x, y, z = position
    return f"{object_type}|{x:+06.2f}|{y:+06.2f}|{z:+06.2f}"


@dataclass
class SceneObject:
    """One object instance at the start of an episode.

    ``parent`` is the objectId of the receptacle it rests in or on (None for furniture standing on
    the floor). The ``is_*`` flags are its initial state; a flag an object type cannot have (an
    apple is never open) is simply ignored by the world. ``attributes`` may override the type's
    default static attributes (color, material, utility, size).
    """

    object_id: str
    object_type: str
    position: tuple[float, float, float]
    rotation: tuple[float, float, float] = (0.0, 0.0, 0.0)
    parent: str | None = None
    is_open: bool = False
    is_toggled: bool = False
    is_dirty: bool = False
    is_filled: bool = False  # filled with liquid (isFilledWithLiquid)
    is_broken: bool = False
    is_sliced: bool = False
    is_hot: bool = False  # ObjectTemperature "Hot"
    is_cold: bool = False  # ObjectTemperature "Cold"
    attributes: dict[str, str] = field(default_factory=dict)


@dataclass
class HouseholdScene:
    """A room: its navigable grid, the agent's start and its objects, in AI2-THOR's native frame.

    ``reachable`` is ``[K, 2]`` float (x, z) of the positions the agent may stand on, on the 0.25 m
    grid (what ``GetReachablePositions`` returns, without y). ``agent_start`` is
    ``(x, y, z, yaw, horizon)``: y is the agent's (camera-less) body height as AI2-THOR reports it,
    yaw in degrees (multiples of 90), horizon in degrees, positive looking down.
    """

    scene_id: str
    room_kind: str
    reachable: np.ndarray
    floor_y: float
    agent_start: tuple[float, float, float, float, float]
    objects: list[SceneObject]
    source: str = "embedded"  # "embedded" (procedural) or "alfred" (a real FloorPlan)
    # Derived static structures (navigation grid, ...) built once per scene by the world; not data.
    cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.reachable = np.asarray(self.reachable, dtype=np.float64).reshape(-1, 2)

    def object_index(self) -> dict[str, int]:
        return {o.object_id: i for i, o in enumerate(self.objects)}

    def validate(self) -> None:
        """Raise ValueError naming the first inconsistency (unknown room kind, dangling parent, ...)."""
        if self.room_kind not in ROOM_KINDS:
            raise ValueError(f"scene {self.scene_id}: room_kind '{self.room_kind}' not in {ROOM_KINDS}")
        if len(self.reachable) == 0:
            raise ValueError(f"scene {self.scene_id}: no reachable positions")
        ids = self.object_index()
        if len(ids) != len(self.objects):
            raise ValueError(f"scene {self.scene_id}: duplicate objectIds")
        for o in self.objects:
            if o.parent is not None and o.parent not in ids:
                raise ValueError(f"scene {self.scene_id}: {o.object_id} has unknown parent {o.parent}")
        start = np.array(self.agent_start[:3:2])
        if np.min(np.abs(self.reachable - start).sum(axis=1)) > 1e-3:
            raise ValueError(f"scene {self.scene_id}: agent start {self.agent_start} is not a reachable cell")
