"""The block world: a voxel array of palette ids plus mobs, chests and named structures.

Coordinates: the voxel array is indexed ``[x, y, z]`` on Minecraft's axes (x east, y up, z south);
voxel ``(i, j, k)`` is the block at native ``(origin[0] + i, origin[1] + j, origin[2] + k)``. Positions of
mobs and objects are floats in the same voxel frame (a block spans ``[i, i+1)``), so native coordinates
are ``origin + position``. North is ``-z``: the northwest quadrant has small x and small z.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqagen.generators.blockworld.palette import Palette, base_name, short_name

BIOMES = ("city", "town", "cave", "desert", "mansion", "nether", "plains", "snow")
QUADRANTS = ("northwest", "northeast", "southwest", "southeast")
QUADRANT_CODES = {"nw": "northwest", "ne": "northeast", "sw": "southwest", "se": "southeast"}


@dataclass
class Mob:
    kind: str  # entity id without namespace: pig, rabbit, polar_bear
    position: tuple[float, float, float]  # voxel frame (feet)
    uuid: tuple[int, int, int, int]
    yaw: float = 0.0
    extra: dict[str, int] = field(default_factory=dict)  # integer NBT extras, e.g. {"RabbitType": 4}


@dataclass
class Chest:
    position: tuple[int, int, int]  # voxel of the chest block
    items: list[tuple[str, int]]  # (item id with namespace, count)
    facing: str = "north"


@dataclass
class Structure:
    structure_id: str  # unique in the world: house#1, garden#2, city_ne_1
    kind: str  # house, garden, wall, wagon, well, mineshaft, ruin, portal, igloo, tower, structure
    material: str  # block id without namespace of its main material (oak_planks, spruce_fence)
    bbox: tuple[int, int, int, int, int, int]  # voxel [x0, y0, z0, x1, y1, z1), upper bounds exclusive
    quadrant: str = ""
    enterable: bool = False  # has an interior the player can walk into
    door: tuple[int, int, int] | None = None  # voxel where a player stands to enter

    def contains(self, points: np.ndarray) -> np.ndarray:
        """Which voxel-frame points ``(..., 3)`` lie inside the box."""
        p = np.asarray(points, dtype=np.float64)
        lo, hi = np.asarray(self.bbox[:3], np.float64), np.asarray(self.bbox[3:], np.float64)
        return np.all((p >= lo) & (p < hi), axis=-1)


@dataclass
class BlockWorld:
    scene_id: str
    biome: str
    blocks: np.ndarray  # uint16 [X, Y, Z] palette ids
    palette: Palette
    mobs: list[Mob] = field(default_factory=list)
    chests: list[Chest] = field(default_factory=list)
    structures: list[Structure] = field(default_factory=list)
    origin: tuple[int, int, int] = (0, 0, 0)  # native block coordinates of voxel (0, 0, 0)
    spawn: tuple[float, float, float] | None = None  # voxel-frame feet position where the player starts
    meta: dict[str, Any] = field(default_factory=dict)

    @property
    def shape(self) -> tuple[int, int, int]:
        return tuple(int(s) for s in self.blocks.shape)  # type: ignore[return-value]

    def state_at(self, x: int, y: int, z: int) -> str:
        return self.palette.states[int(self.blocks[x, y, z])]

    def quadrant_of(self, x: float, z: float) -> str:
        return quadrant_of(x, z, self.shape[0], self.shape[2])

    def sort_objects(self) -> None:
        """Mobs by UUID and chests by position: one order whatever file or chunk order they came in."""
        self.mobs.sort(key=lambda m: m.uuid)
        self.chests.sort(key=lambda c: c.position)

    def block_counts(self) -> Counter[str]:
        """Blocks per id without properties (air excluded)."""
        counts = np.bincount(self.blocks.ravel(), minlength=len(self.palette))
        out: Counter[str] = Counter()
        for state, n in zip(self.palette.states, counts.tolist()):
            if n and base_name(state) not in ("minecraft:air", "minecraft:cave_air"):
                out[base_name(state)] += n
        return out


def quadrant_of(x: float, z: float, size_x: int, size_z: int) -> str:
    ns = "north" if z < size_z / 2 else "south"
    ew = "west" if x < size_x / 2 else "east"
    return ns + ew


def material_label(block_or_material: str) -> str:
    """Readable material text: ``spruce_fence`` -> ``spruce``, ``oak_planks`` -> ``oak planks``."""
    s = short_name(block_or_material)
    for suffix in ("_fence_gate", "_fence", "_log", "_stem"):
        if s.endswith(suffix):
            s = s[: -len(suffix)]
            break
    return s.replace("_", " ")
