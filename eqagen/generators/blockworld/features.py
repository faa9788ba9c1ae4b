"""Objects found in the voxels: trees, cacti and chest blocks, and the ground-truth index of a world.

Trees and cacti are not stored anywhere but in the blocks, so they are detected from the voxel array
(vectorised masks over palette lookup tables): a cactus is a column of cactus blocks, counted at its
lowest block; a tree is a column of logs (or nether stems) standing on a non-log block whose top
touches leaves (or wart blocks).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from eqagen.generators.blockworld.palette import base_name, is_see_through, parse_state, short_name
from eqagen.generators.blockworld.world import QUADRANTS, BlockWorld, material_label

_NATURAL = {
    "stone",
    "dirt",
    "grass_block",
    "sand",
    "red_sand",
    "sandstone",
    "gravel",
    "netherrack",
    "snow_block",
    "snow",
    "water",
    "lava",
    "grass",
    "tall_grass",
    "fern",
    "podzol",
    "soul_sand",
    "soul_soil",
    "bedrock",
    "vine",
    "kelp_plant",
    "kelp",
    "seagrass",
    "andesite",
    "diorite",
    "granite",
    "coarse_dirt",
    "packed_ice",
    "ice",
    "basalt",
    "blackstone",
    "crimson_nylium",
    "warped_nylium",
    "cactus",
    "dead_bush",
    "glowstone",
    "deepslate",
}


@dataclass(frozen=True)
class Feature:
    kind: str  # tree, fungus (a huge nether fungus), cactus
    position: tuple[int, int, int]  # voxel of the lowest block
    material: str  # wood of a tree (oak, spruce, crimson), "cactus"
    height: int


def _is_log(state: str) -> bool:
    s = short_name(state)
    return (s.endswith("_log") or s.endswith("_stem")) and not s.startswith("stripped_")


def _is_leaves(state: str) -> bool:
    s = short_name(state)
    return s.endswith("_leaves") or s.endswith("_wart_block")


def column_bases(mask: np.ndarray) -> np.ndarray:
    """Voxels ``[K, 3]`` where a vertical run of ``mask`` starts (the block below is not in the mask)."""
    below = np.zeros_like(mask)
    below[:, 1:, :] = mask[:, :-1, :]
    return np.argwhere(mask & ~below)


def _run_top(mask: np.ndarray, x: int, y: int, z: int) -> int:
    col = mask[x, y:, z]
    stop = np.flatnonzero(~col)
    return y + (int(stop[0]) if stop.size else col.size) - 1


def detect_cacti(world: BlockWorld) -> list[Feature]:
    table = world.palette.ids_where(lambda s: base_name(s) == "minecraft:cactus")
    mask = table[world.blocks]
    return [
        Feature("cactus", (int(x), int(y), int(z)), "cactus", _run_top(mask, x, y, z) - int(y) + 1)
        for x, y, z in column_bases(mask)
    ]


def detect_trees(world: BlockWorld) -> list[Feature]:
    logs = world.palette.ids_where(_is_log)[world.blocks]
    leaves = world.palette.ids_where(_is_leaves)[world.blocks]
    sx, sy, sz = world.shape
    out = []
    for x, y, z in column_bases(logs):
        if y == 0:
            continue
        top = _run_top(logs, x, y, z)
        x0, x1, z0, z1 = max(x - 1, 0), min(x + 2, sx), max(z - 1, 0), min(z + 2, sz)
        if not leaves[x0:x1, top : min(top + 2, sy), z0:z1].any():
            continue
        state = world.state_at(int(x), int(y), int(z))
        wood = material_label(state)
        kind = "fungus" if short_name(state).endswith("_stem") else "tree"
        out.append(Feature(kind, (int(x), int(y), int(z)), wood.replace(" ", "_"), top - int(y) + 1))
    return out


def chest_blocks(world: BlockWorld) -> list[tuple[int, int, int]]:
    """Chest voxels, one per chest: the right half of a double chest is merged into its left half."""
    table = world.palette.ids_where(
        lambda s: (
            base_name(s) in ("minecraft:chest", "minecraft:trapped_chest")
            and parse_state(s)[1].get("type", "single") != "right"
        )
    )
    return [tuple(int(v) for v in p) for p in np.argwhere(table[world.blocks])]


def dominant_material(world: BlockWorld, bbox: tuple[int, int, int, int, int, int]) -> str:
    """The most frequent built (not natural) block id inside a box, without namespace; "" if none."""
    x0, y0, z0, x1, y1, z1 = bbox
    sub = world.blocks[x0:x1, y0:y1, z0:z1]
    counts = np.bincount(sub.ravel(), minlength=len(world.palette))
    by_name: Counter[str] = Counter()
    for state, n in zip(world.palette.states, counts.tolist()):
        name = short_name(state)
        skip = name in _NATURAL or name.endswith("_ore") or is_see_through(state) or _is_leaves(state)
        if n and not skip:
            by_name[name] += n
    return min(by_name.items(), key=lambda kv: (-kv[1], kv[0]))[0] if by_name else ""


@dataclass
class GroundTruth:
    """What a world holds, for answering questions: counts, materials, mobs, structures per quadrant."""

    biome: str
    block_counts: dict[str, int]
    mobs: dict[str, int]
    features: dict[str, int]
    structures: dict[str, int]
    per_quadrant: dict[str, dict[str, int]]
    materials: dict[str, str]  # structure id -> material
    chest_items: dict[str, int]
    extra: dict[str, Any] = field(default_factory=dict)


def ground_truth(world: BlockWorld) -> GroundTruth:
    feats = detect_cacti(world) + detect_trees(world)
    per_q: dict[str, Counter[str]] = {q: Counter() for q in QUADRANTS}
    for m in world.mobs:
        per_q[world.quadrant_of(m.position[0], m.position[2])][m.kind] += 1
    for f in feats:
        per_q[world.quadrant_of(f.position[0] + 0.5, f.position[2] + 0.5)][f.kind] += 1
    for s in world.structures:
        per_q[s.quadrant][s.kind] += 1
    for c in world.chests:
        per_q[world.quadrant_of(c.position[0] + 0.5, c.position[2] + 0.5)]["chest"] += 1
    items: Counter[str] = Counter()
    for c in world.chests:
        for item, n in c.items:
            items[item] += n
    return GroundTruth(
        biome=world.biome,
        block_counts=dict(sorted(world.block_counts().items())),
        mobs=dict(sorted(Counter(m.kind for m in world.mobs).items())),
        features=dict(sorted(Counter(f.kind for f in feats).items())),
        structures=dict(sorted(Counter(s.kind for s in world.structures).items())),
        per_quadrant={q: dict(sorted(c.items())) for q, c in per_q.items()},
        materials={s.structure_id: s.material for s in world.structures},
        chest_items=dict(sorted(items.items())),
    )
