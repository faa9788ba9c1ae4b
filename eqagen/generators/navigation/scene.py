"""A navigation scene: the navigation grid plus HM3D-like semantics (objects and regions).

Objects carry a category, a region and an axis-aligned box; regions a room category and a box; all in
habitat's native frame (y up, metres). ``region_map`` gives the region index of every grid cell (-1 in
walls and doorways) and ``transparent`` the cells that do not block sight (everything but walls).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from eqagen.generators.navigation.grid import NavGrid
from eqagen.generators.navigation.pathfinder import GridPathFinder, PathFinder


@dataclass(frozen=True)
class SceneObject:
    object_id: int  # the scene's own id (HM3D semantic id)
    category: str
    region: int  # index into the scene's regions, -1 if unknown
    box: tuple[float, float, float, float, float, float]  # native [xmin, ymin, zmin, xmax, ymax, zmax]
    color: str | None = None

    @property
    def center(self) -> np.ndarray:
        b = np.asarray(self.box, dtype=np.float64)
        return (b[:3] + b[3:]) / 2.0


@dataclass(frozen=True)
class SceneRegion:
    region_id: str
    category: str
    box: tuple[float, float, float, float, float, float]  # native


@dataclass
class NavScene:
    scene_id: str
    grid: NavGrid
    objects: list[SceneObject]
    regions: list[SceneRegion]
    region_map: np.ndarray  # int32 [H, W]
    transparent: np.ndarray  # bool [H, W]
    source: str = "embedded"
    _pathfinder: PathFinder | None = field(default=None, repr=False)
    _sight: NavGrid | None = field(default=None, repr=False)

    @property
    def pathfinder(self) -> PathFinder:
        if self._pathfinder is None:
            self._pathfinder = GridPathFinder(self.grid)
        return self._pathfinder

    @property
    def sight(self) -> NavGrid:
        """The grid of see-through cells, for line-of-sight checks."""
        if self._sight is None:
            g = self.grid
            no_islands = np.where(self.transparent, 0, -1).astype(np.int32)  # islands are not needed for sight
            self._sight = NavGrid(self.transparent, g.meters_per_pixel, g.origin, g.floor_y, islands=no_islands)
        return self._sight

    def region_at(self, points: np.ndarray) -> np.ndarray:
        """Region index at native points ``(..., 3)`` (-1 outside any region)."""
        cells = np.floor(self.grid.to_cell(points)).astype(np.int64)
        h, w = self.region_map.shape
        inside = (cells[..., 0] >= 0) & (cells[..., 0] < h) & (cells[..., 1] >= 0) & (cells[..., 1] < w)
        out = np.full(cells.shape[:-1], -1, dtype=np.int32)
        out[inside] = self.region_map[cells[..., 0][inside], cells[..., 1][inside]]
        return out

    def object_boxes(self) -> np.ndarray:
        return np.asarray([o.box for o in self.objects], dtype=np.float64).reshape(-1, 6)
