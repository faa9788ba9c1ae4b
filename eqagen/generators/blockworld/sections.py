"""How a :class:`BlockWorld`'s voxels are cut into Minecraft's 16x16x16 sections on native coordinates.

Both save layouts cut alike: the 1.18+ chunks of :mod:`eqagen.generators.blockworld.savedir` and the 1.16
chunks of :mod:`eqagen.generators.blockworld.legacy`.
"""

from __future__ import annotations

import numpy as np

from eqagen.generators.blockworld.world import BlockWorld


def chunk_ranges(world: BlockWorld) -> tuple[range, range, range]:
    """The section coordinates (x, y, z) the world's voxels span."""
    ox, oy, oz = world.origin
    sx, sy, sz = world.shape
    return (
        range(ox // 16, (ox + sx - 1) // 16 + 1),
        range(oy // 16, (oy + sy - 1) // 16 + 1),
        range(oz // 16, (oz + sz - 1) // 16 + 1),
    )


def padded_blocks(world: BlockWorld) -> tuple[np.ndarray, tuple[int, int, int]]:
    """The voxel array padded with air to whole sections, and the native coordinate of its corner."""
    rx, ry, rz = chunk_ranges(world)
    corner = (rx.start * 16, ry.start * 16, rz.start * 16)
    out = np.zeros((len(rx) * 16, len(ry) * 16, len(rz) * 16), dtype=world.blocks.dtype)
    o = [world.origin[i] - corner[i] for i in range(3)]
    sx, sy, sz = world.shape
    out[o[0] : o[0] + sx, o[1] : o[1] + sy, o[2] : o[2] + sz] = world.blocks
    return out, corner
