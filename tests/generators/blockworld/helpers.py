"""Shared checks for blockworld tests."""

import numpy as np

from eqagen.generators.blockworld.world import BlockWorld


def state_grid(world: BlockWorld) -> np.ndarray:
    """The world's blocks as state text per voxel (palette-independent)."""
    return np.asarray(world.palette.states, dtype=object)[world.blocks]


def assert_same_world(a: BlockWorld, b: BlockWorld) -> None:
    assert a.shape == b.shape
    assert (state_grid(a) == state_grid(b)).all()
    assert a.mobs == b.mobs
    assert a.chests == b.chests
    assert a.structures == b.structures
    assert (a.scene_id, a.biome, tuple(a.origin), a.spawn) == (b.scene_id, b.biome, tuple(b.origin), b.spawn)
