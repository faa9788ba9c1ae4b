"""Fixtures of the navigation tests: the real 17DRP5sb8fy maps (habitat-sim's own top-down views)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from eqagen.generators.navigation.grid import NavGrid
from eqagen.generators.navigation.pathfinder import GridPathFinder
from eqagen.generators.navigation.readers import read_topdown_map

SCENE = "17DRP5sb8fy"


@pytest.fixture(scope="session")
def habitat_maps(realdata: Path) -> tuple[Path, Path]:
    folder = realdata / "habitat"
    return folder / f"{SCENE}_topdown_binary.npy", folder / f"{SCENE}_topdown_islands.npy"


@pytest.fixture(scope="session")
def real_grid(habitat_maps: tuple[Path, Path]) -> NavGrid:
    return read_topdown_map(*habitat_maps, meters_per_pixel=0.1)


@pytest.fixture(scope="session")
def real_pf(real_grid: NavGrid) -> GridPathFinder:
    return GridPathFinder(real_grid)


def dense_navigable(pf: GridPathFinder, a: np.ndarray, b: np.ndarray, spacing: float = 0.005) -> bool:
    """Independent check: points every ``spacing`` metres along a -> b all on navigable cells."""
    n = max(2, int(np.ceil(np.linalg.norm(b - a) / spacing)) + 1)
    pts = a + np.linspace(0.0, 1.0, n)[:, None] * (b - a)
    cells = np.floor(pf.grid.to_cell(pts)).astype(int)
    h, w = pf.grid.shape
    inside = (cells[:, 0] >= 0) & (cells[:, 0] < h) & (cells[:, 1] >= 0) & (cells[:, 1] < w)
    return bool(inside.all() and pf.grid.navigable[cells[:, 0], cells[:, 1]].all())
