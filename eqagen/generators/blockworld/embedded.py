"""Seeded 60x60 single-biome worlds of PQB's eight kinds, built directly as voxel arrays.

A world is flat ground of the biome's blocks (with a few one-block mounds to jump on; a stone roof in
caves), structures placed whole inside one quadrant each (houses with a door, fenced gardens of one
fence material, walls, wagons, wells), vegetation (the biome's trees, cacti on sand, nether fungi),
chests with items and the biome's mobs. Everything is drawn from one generator derived from
(seed, "blockworld-world", scene_id), so the same arguments give the same bytes.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eqagen.core import derive_rng
from eqagen.generators.blockworld.biomes import BiomeProfile, mob_extra, profile
from eqagen.generators.blockworld.palette import Palette
from eqagen.generators.blockworld.world import BlockWorld, Chest, Mob, Structure, quadrant_of

SIZE_XZ = 60
SIZE_Y = 32
GROUND = 6  # y where a player stands on flat ground (the surface block is at GROUND - 1)
_QUADRANT_ORIGINS = {"northwest": (0, 0), "northeast": (30, 0), "southwest": (0, 30), "southeast": (30, 30)}
_LOOT = ("bread", "apple", "iron_ingot", "gold_ingot", "diamond", "emerald", "coal", "torch", "wheat", "string")
_WOOL = ("white_wool", "red_wool", "brown_wool", "light_gray_wool")


@dataclass
class _Builder:
    prof: BiomeProfile
    rng: np.random.Generator
    blocks: np.ndarray
    palette: Palette = field(default_factory=Palette)
    occupied: np.ndarray = field(default_factory=lambda: np.zeros((SIZE_XZ, SIZE_XZ), dtype=bool))
    structures: list[Structure] = field(default_factory=list)
    chests: list[Chest] = field(default_factory=list)

    def put(self, state: str, xs, ys, zs) -> None:
        """Set a block state over slices or index arrays."""
        self.blocks[xs, ys, zs] = self.palette.id(state)

    def fill_air(self, state: str, x0, y0, z0, x1, y1, z1) -> None:
        """Fill a box, but only where it is air (leaves around a trunk)."""
        sub = self.blocks[x0:x1, y0:y1, z0:z1]
        sub[sub == 0] = self.palette.id(state)

    def find_spot(self, w: int, d: int, quadrant: str, margin: int = 1) -> tuple[int, int] | None:
        """A free ``w x d`` rectangle (plus margin) inside one quadrant, or None after 40 tries."""
        qx, qz = _QUADRANT_ORIGINS[quadrant]
        lo, hi_x, hi_z = 1 + margin, 30 - w - 1 - margin, 30 - d - 1 - margin
        if hi_x < lo or hi_z < lo:
            return None
        for _ in range(40):
            x = qx + int(self.rng.integers(lo, hi_x + 1))
            z = qz + int(self.rng.integers(lo, hi_z + 1))
            if not self.occupied[x - margin : x + w + margin, z - margin : z + d + margin].any():
                self.occupied[x : x + w, z : z + d] = True
                return x, z
        return None

    def add_structure(self, kind: str, material: str, bbox, **kw) -> Structure:
        n = sum(s.kind == kind for s in self.structures) + 1
        cx, cz = (bbox[0] + bbox[3]) / 2, (bbox[2] + bbox[5]) / 2
        s = Structure(
            f"{kind}#{n}", kind, material, tuple(int(v) for v in bbox), quadrant_of(cx, cz, SIZE_XZ, SIZE_XZ), **kw
        )
        self.structures.append(s)
        return s


def _lay_ground(b: _Builder) -> None:
    p = b.prof
    b.put("minecraft:bedrock", slice(None), 0, slice(None))
    b.put(f"minecraft:{p.deep}", slice(None), slice(1, GROUND - 3), slice(None))
    b.put(f"minecraft:{p.subsurface}", slice(None), slice(GROUND - 3, GROUND - 1), slice(None))
    b.put(f"minecraft:{p.surface}", slice(None), GROUND - 1, slice(None))
    if p.road:
        mid = SIZE_XZ // 2
        b.put(f"minecraft:{p.road}", slice(None), GROUND - 1, slice(mid - 1, mid + 1))
        b.put(f"minecraft:{p.road}", slice(mid - 1, mid + 1), GROUND - 1, slice(None))
    if p.ceiling:
        heights = GROUND + 7 + b.rng.integers(0, 3, size=(SIZE_XZ, SIZE_XZ))
        ys = np.arange(SIZE_Y)[None, :, None]
        b.blocks[(ys >= heights[:, None, :])] = b.palette.id("minecraft:stone")
        b.blocks[:, :, [0, -1]] = b.palette.id("minecraft:stone")  # walls at the edge of the cave
        b.blocks[[0, -1], :, :] = b.palette.id("minecraft:stone")
        b.blocks[:, 0, :] = b.palette.id("minecraft:bedrock")
    # keep the centre (the player's start) free
    b.occupied[SIZE_XZ // 2 - 2 : SIZE_XZ // 2 + 2, SIZE_XZ // 2 - 2 : SIZE_XZ // 2 + 2] = True


def _add_mounds(b: _Builder) -> None:
    for _ in range(int(b.rng.integers(2, 6))):
        q = str(b.rng.choice(list(_QUADRANT_ORIGINS)))
        w, d = (int(v) for v in b.rng.integers(3, 6, size=2))
        spot = b.find_spot(w, d, q, margin=1)
        if spot:
            x, z = spot
            b.put(f"minecraft:{b.prof.surface}", slice(x, x + w), GROUND, slice(z, z + d))


def _build_house(b: _Builder, quadrant: str) -> None:
    w, d = (int(v) for v in b.rng.integers(5, 9, size=2))
    h = int(b.rng.integers(4, 6))
    spot = b.find_spot(w, d, quadrant, margin=2)
    if spot is None:
        return
    x, z = spot
    mat = str(b.rng.choice(b.prof.house_materials))
    y0 = GROUND
    b.put(f"minecraft:{mat}", slice(x, x + w), slice(y0, y0 + h), slice(z, z + d))
    b.put("minecraft:air", slice(x + 1, x + w - 1), slice(y0, y0 + h - 1), slice(z + 1, z + d - 1))
    b.put(f"minecraft:{mat}", slice(x, x + w), y0 + h, slice(z, z + d))  # roof
    b.put("minecraft:oak_planks", slice(x + 1, x + w - 1), y0 - 1, slice(z + 1, z + d - 1))  # floor
    side = str(b.rng.choice(["north", "south", "west", "east"]))
    mx, mz = x + w // 2, z + d // 2
    door_wall = {"north": (mx, z), "south": (mx, z + d - 1), "west": (x, mz), "east": (x + w - 1, mz)}[side]
    b.put("minecraft:air", door_wall[0], slice(y0, y0 + 2), door_wall[1])
    inside = {"north": (mx, z + 1), "south": (mx, z + d - 2), "west": (x + 1, mz), "east": (x + w - 2, mz)}[side]
    for wx, wz in ((x, z + 1), (x + w - 1, z + d - 2)):  # two windows
        b.put("minecraft:glass_pane", wx, y0 + 1, wz)
    b.add_structure(
        "house", mat, (x, y0, z, x + w, y0 + h + 1, z + d), enterable=True, door=(int(inside[0]), y0, int(inside[1]))
    )
    if b.rng.random() < 0.6:
        corner = (x + 1, z + 1) if inside != (x + 1, z + 1) else (x + w - 2, z + d - 2)
        _place_chest(b, corner[0], y0, corner[1])


def _place_chest(b: _Builder, x: int, y: int, z: int) -> None:
    facing = str(b.rng.choice(["north", "south", "east", "west"]))
    b.put(f"minecraft:chest[facing={facing},type=single]", x, y, z)
    n_items = int(b.rng.integers(1, 4))
    kinds = b.rng.choice(len(_LOOT), size=n_items, replace=False)
    items = [(f"minecraft:{_LOOT[k]}", int(b.rng.integers(1, 9))) for k in sorted(kinds)]
    b.chests.append(Chest((x, y, z), items, facing))


def _build_garden(b: _Builder, quadrant: str) -> None:
    w, d = (int(v) for v in b.rng.integers(5, 9, size=2))
    spot = b.find_spot(w, d, quadrant, margin=1)
    if spot is None:
        return
    x, z = spot
    fence = str(b.rng.choice(b.prof.fence_materials))
    y0 = GROUND
    b.put(f"minecraft:{fence}", slice(x, x + w), y0, slice(z, z + d))
    b.put("minecraft:air", slice(x + 1, x + w - 1), y0, slice(z + 1, z + d - 1))
    crop = "minecraft:wheat[age=7]" if b.prof.surface != "netherrack" else "minecraft:nether_wart[age=3]"
    soil = "minecraft:farmland[moisture=7]" if b.prof.surface != "netherrack" else "minecraft:soul_sand"
    b.put(soil, slice(x + 1, x + w - 1), y0 - 1, slice(z + 1, z + d - 1))
    b.put(crop, slice(x + 1, x + w - 1), y0, slice(z + 1, z + d - 1))
    gate = (x + w // 2, z) if b.rng.random() < 0.5 else (x + w // 2, z + d - 1)
    b.put("minecraft:air", gate[0], y0, gate[1])
    inner_z = z + 1 if gate[1] == z else z + d - 2
    b.add_structure("garden", fence, (x, y0, z, x + w, y0 + 2, z + d), enterable=True, door=(gate[0], y0, inner_z))


def _build_wall(b: _Builder, quadrant: str) -> None:
    length, h = int(b.rng.integers(6, 13)), int(b.rng.integers(2, 4))
    along_x = bool(b.rng.random() < 0.5)
    w, d = (length, 1) if along_x else (1, length)
    spot = b.find_spot(w, d, quadrant, margin=1)
    if spot is None:
        return
    x, z = spot
    mat = str(b.rng.choice(b.prof.wall_materials))
    b.put(f"minecraft:{mat}", slice(x, x + w), slice(GROUND, GROUND + h), slice(z, z + d))
    b.add_structure("wall", mat, (x, GROUND, z, x + w, GROUND + h, z + d))


def _build_wagon(b: _Builder, quadrant: str) -> None:
    spot = b.find_spot(3, 5, quadrant, margin=1)
    if spot is None:
        return
    x, z = spot
    planks = f"{b.rng.choice(['oak', 'spruce', 'dark_oak'])}_planks"
    wool = str(b.rng.choice(_WOOL))
    y0 = GROUND
    for cx, cz in ((x, z), (x + 2, z), (x, z + 4), (x + 2, z + 4)):
        b.put("minecraft:dark_oak_fence", cx, y0, cz)  # wheels and axles
    b.put(f"minecraft:{planks}", slice(x, x + 3), y0 + 1, slice(z, z + 5))
    b.put(f"minecraft:{wool}", [x, x + 2], slice(y0 + 2, y0 + 4), slice(z, z + 5))
    b.put(f"minecraft:{wool}", x + 1, y0 + 4, slice(z, z + 5))
    b.add_structure("wagon", planks, (x, y0, z, x + 3, y0 + 5, z + 5))


def _build_well(b: _Builder, quadrant: str) -> None:
    spot = b.find_spot(4, 4, quadrant, margin=1)
    if spot is None:
        return
    x, z = spot
    mat = "sandstone" if b.prof.surface == "sand" else "cobblestone"
    y0 = GROUND
    b.put(f"minecraft:{mat}", slice(x, x + 4), y0, slice(z, z + 4))
    b.put("minecraft:water", slice(x + 1, x + 3), slice(y0 - 2, y0 + 1), slice(z + 1, z + 3))
    for cx, cz in ((x, z), (x + 3, z), (x, z + 3), (x + 3, z + 3)):
        b.put("minecraft:oak_fence", cx, slice(y0 + 1, y0 + 3), cz)
    b.put(f"minecraft:{mat}", slice(x, x + 4), y0 + 3, slice(z, z + 4))
    b.add_structure("well", mat, (x, y0 - 2, z, x + 4, y0 + 4, z + 4))


_BUILDERS = {
    "house": _build_house,
    "garden": _build_garden,
    "wall": _build_wall,
    "wagon": _build_wagon,
    "well": _build_well,
}


def _place_structures(b: _Builder) -> None:
    kinds = sorted(set(b.prof.structures))
    weights = {k: b.prof.structures.count(k) for k in kinds}
    for kind in kinds:
        n = int(b.rng.choice([0, 1, 1, 2] if weights[kind] == 1 else [1, 2, 2, 3]))
        for _ in range(n):
            _BUILDERS[kind](b, str(b.rng.choice(list(_QUADRANT_ORIGINS))))


def _grow_tree(b: _Builder, x: int, z: int, wood: str) -> None:
    h = int(b.rng.integers(4, 7))
    nether = wood in ("crimson", "warped")
    log = f"minecraft:{wood}_stem" if nether else f"minecraft:{wood}_log[axis=y]"
    leaves = (
        ("minecraft:nether_wart_block" if wood == "crimson" else "minecraft:warped_wart_block")
        if nether
        else f"minecraft:{wood}_leaves[distance=1,persistent=true]"
    )
    top = GROUND + h - 1
    b.fill_air(leaves, x - 2, top - 1, z - 2, x + 3, top + 1, z + 3)
    b.fill_air(leaves, x - 1, top + 1, z - 1, x + 2, top + 2, z + 2)
    b.put(log, x, slice(GROUND, top + 1), z)


def _add_vegetation(b: _Builder) -> None:
    p = b.prof
    if p.plant:
        for _ in range(int(b.rng.integers(0, p.max_plants + 1))):
            q = str(b.rng.choice(list(_QUADRANT_ORIGINS)))
            if p.plant == "cactus":
                spot = b.find_spot(1, 1, q, margin=1)
                if spot:
                    b.put(
                        "minecraft:cactus[age=0]", spot[0], slice(GROUND, GROUND + int(b.rng.integers(1, 4))), spot[1]
                    )
            else:
                spot = b.find_spot(5, 5, q, margin=0)
                if spot:
                    _grow_tree(b, spot[0] + 2, spot[1] + 2, str(b.rng.choice(p.woods)))
    if p.ground_cover:
        free = (~b.occupied) & (b.blocks[:, GROUND, :] == 0) & (b.rng.random((SIZE_XZ, SIZE_XZ)) < 0.06)
        xs, zs = np.nonzero(free)
        picks = b.rng.integers(0, len(p.ground_cover), size=xs.size)
        for k, plant in enumerate(p.ground_cover):
            sel = picks == k
            b.put(f"minecraft:{plant}", xs[sel], GROUND, zs[sel])


def _free_cells(b: _Builder) -> np.ndarray:
    """Walkable flat-ground cells ``[K, 2]`` outside every structure, plant and mound, in a stable order."""
    passable = (
        b.palette.passable_table()[b.blocks[:, GROUND, :]] & b.palette.passable_table()[b.blocks[:, GROUND + 1, :]]
    )
    free = ~b.occupied & passable & b.palette.floor_table()[b.blocks[:, GROUND - 1, :]]
    cells = np.argwhere(free)
    return cells[(cells[:, 0] > 1) & (cells[:, 0] < SIZE_XZ - 2) & (cells[:, 1] > 1) & (cells[:, 1] < SIZE_XZ - 2)]


def _place_mobs(b: _Builder) -> list[Mob]:
    cells = _free_cells(b)
    mobs: list[Mob] = []
    for kind in b.prof.mobs:
        if b.rng.random() < 0.4:
            continue
        for _ in range(int(b.rng.integers(1, 4))):
            x, z = cells[int(b.rng.integers(0, len(cells)))]
            y = GROUND + (int(b.rng.integers(2, 5)) if kind == "bat" else 0)
            pos = (float(x) + 0.5, float(y), float(z) + 0.5)
            uuid = tuple(int(v) for v in b.rng.integers(-(2**31), 2**31, size=4))
            yaw = float(b.rng.integers(0, 360))
            mobs.append(Mob(kind, pos, uuid, yaw, mob_extra(b.prof, kind)))  # type: ignore[arg-type]
    return mobs


def _place_outdoor_chests(b: _Builder) -> None:
    for _ in range(int(b.rng.integers(0, 3))):
        spot = b.find_spot(1, 1, str(b.rng.choice(list(_QUADRANT_ORIGINS))), margin=1)
        if spot:
            _place_chest(b, spot[0], GROUND, spot[1])


def generate_world(biome: str, seed: int, scene_id: str | None = None) -> BlockWorld:
    """One embedded world of the given PQB biome kind (city, town, cave, desert, mansion, nether, plains, snow)."""
    prof = profile(biome)
    scene_id = scene_id or f"{biome}-{seed}"
    rng = derive_rng(seed, "blockworld-world", scene_id)
    b = _Builder(prof, rng, np.zeros((SIZE_XZ, SIZE_Y, SIZE_XZ), dtype=np.uint16))
    _lay_ground(b)
    if not prof.ceiling:
        _add_mounds(b)
    _place_structures(b)
    _place_outdoor_chests(b)
    _add_vegetation(b)
    mobs = _place_mobs(b)
    world = BlockWorld(
        scene_id=scene_id,
        biome=biome,
        blocks=b.blocks,
        palette=b.palette,
        mobs=mobs,
        chests=b.chests,
        structures=b.structures,
        origin=(0, 0, 0),
        spawn=(SIZE_XZ / 2, float(GROUND), SIZE_XZ / 2),
        meta={"source": "embedded", "seed": int(seed), "minecraft_biome": prof.minecraft_biome},
    )
    world.sort_objects()
    return world
