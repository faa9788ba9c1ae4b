"""Chunks in the Minecraft 1.16 layout, the version MineRL 1.0 runs (Minecraft 1.16.5, DataVersion 2586).

Differences from the 1.18+ layout written by :mod:`eqagen.generators.blockworld.savedir`: everything
sits under a ``Level`` compound; sections are ``Sections`` with ``Palette`` and ``BlockStates`` (the same
non-spanning packing, always present, at least 4 bits), all-air sections are left out and ``Y`` runs
0..15 (no blocks below y = 0); biomes are one ``Biomes`` int array of 1024 numeric ids per chunk;
chests are ``TileEntities`` and mobs ``Entities`` inside the chunk (no entities region files). The
readers accept both layouts.
"""

from __future__ import annotations

import nbtlib
import numpy as np
from nbtlib import tag

from eqagen.generators.blockworld import anvil
from eqagen.generators.blockworld.palette import parse_state
from eqagen.generators.blockworld.sections import chunk_ranges, padded_blocks
from eqagen.generators.blockworld.world import BlockWorld

DATA_VERSION_1_16 = 2586  # Minecraft 1.16.5
# Numeric biome ids of Minecraft 1.16 (dripstone caves did not exist yet: caves are plains).
BIOME_IDS_1_16 = {
    "minecraft:plains": 1,
    "minecraft:desert": 2,
    "minecraft:nether_wastes": 8,
    "minecraft:snowy_plains": 12,
    "minecraft:dark_forest": 29,
    "minecraft:dripstone_caves": 1,
}


def _section(world: BlockWorld, cube: np.ndarray, sec_y: int) -> nbtlib.Compound | None:
    order = cube.transpose(1, 2, 0).reshape(-1)  # y*256 + z*16 + x
    uniq, inverse = np.unique(order, return_inverse=True)
    if uniq.size == 1 and uniq[0] == 0:
        return None
    palette = nbtlib.List[nbtlib.Compound]([anvil.state_tag(*parse_state(world.palette.states[u])) for u in uniq])
    data = anvil.pack_indices(inverse.astype(np.uint64), anvil.bits_for(uniq.size, 4) or 4)
    return nbtlib.Compound({"Y": tag.Byte(sec_y), "Palette": palette, "BlockStates": tag.LongArray(data)})


def legacy_chunks(world: BlockWorld, chest_tags: dict, mob_tags: dict) -> dict[tuple[int, int], nbtlib.Compound]:
    """1.16 chunks keyed by chunk coordinates; ``chest_tags``/``mob_tags`` map a chunk to its tags."""
    if world.origin[1] < 0:
        raise ValueError(f"world {world.scene_id}: Minecraft 1.16 has no blocks below y=0 (origin {world.origin})")
    padded, _ = padded_blocks(world)
    rx, ry, rz = chunk_ranges(world)
    biome = BIOME_IDS_1_16.get(world.meta.get("minecraft_biome", "minecraft:plains"), 1)
    out = {}
    for i, cx in enumerate(rx):
        for k, cz in enumerate(rz):
            cubes = (
                (padded[16 * i : 16 * i + 16, 16 * j : 16 * j + 16, 16 * k : 16 * k + 16], cy)
                for j, cy in enumerate(ry)
            )
            sections = [s for cube, cy in cubes if (s := _section(world, cube, cy)) is not None]
            level = nbtlib.Compound({
                "xPos": tag.Int(cx), "zPos": tag.Int(cz), "LastUpdate": tag.Long(0), "InhabitedTime": tag.Long(0),
                "Status": tag.String("full"), "isLightOn": tag.Byte(0),
                "Sections": nbtlib.List[nbtlib.Compound](sections),
                "Biomes": tag.IntArray([biome] * 1024),
                "TileEntities": nbtlib.List[nbtlib.Compound](chest_tags.get((cx, cz), [])),
                "Entities": nbtlib.List[nbtlib.Compound](mob_tags.get((cx, cz), [])),
            })  # fmt: skip
            out[(cx, cz)] = nbtlib.Compound({"DataVersion": tag.Int(DATA_VERSION_1_16), "Level": level})
    return out
