"""The navigation grid: a top-down navigability map in habitat's native frame, and exact segment checks.

A grid cell ``(row, col)`` covers native habitat coordinates ``x in [x0 + col*m, x0 + (col+1)*m)`` and
``z in [z0 + row*m, z0 + (row+1)*m)`` with ``m`` metres per pixel, at the floor height ``floor_y``; this
is the layout of habitat-sim's ``PathFinder.get_topdown_view`` (rows along +z, columns along +x).

Islands are the 8-connected components of the navigable cells, numbered in scan order (checked against
habitat-sim's own island map of 17DRP5sb8fy, which it reproduces exactly).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from scipy import ndimage

EIGHT = np.ones((3, 3), dtype=bool)


@dataclass
class NavGrid:
    navigable: np.ndarray  # bool [H, W]
    meters_per_pixel: float = 0.1
    origin: tuple[float, float] = (0.0, 0.0)  # native (x0, z0) of the grid's corner
    floor_y: float = 0.0
    islands: np.ndarray = field(default=None)  # type: ignore[assignment]  # int32 [H, W], -1 where blocked

    def __post_init__(self) -> None:
        self.navigable = np.ascontiguousarray(self.navigable, dtype=bool)
        if self.islands is None:
            self.islands = label_islands(self.navigable)
        self._padded = np.pad(self.navigable, 1)
        self._padded_flat = self._padded.ravel()

    @property
    def shape(self) -> tuple[int, int]:
        return self.navigable.shape  # type: ignore[return-value]

    @property
    def num_islands(self) -> int:
        return int(self.islands.max()) + 1 if self.navigable.any() else 0

    def to_cell(self, points: np.ndarray) -> np.ndarray:
        """Native points ``(..., 3)`` to continuous cell coordinates ``(..., 2)`` as (row, col)."""
        p = np.asarray(points, dtype=np.float64)
        m = self.meters_per_pixel
        return np.stack([(p[..., 2] - self.origin[1]) / m, (p[..., 0] - self.origin[0]) / m], axis=-1)

    def to_native(self, cells: np.ndarray) -> np.ndarray:
        """Continuous (row, col) cell coordinates ``(..., 2)`` to native points ``(..., 3)`` on the floor."""
        c = np.asarray(cells, dtype=np.float64)
        m = self.meters_per_pixel
        y = np.full(c.shape[:-1], self.floor_y)
        return np.stack([self.origin[0] + c[..., 1] * m, y, self.origin[1] + c[..., 0] * m], axis=-1)

    def cell_centers(self, rows: np.ndarray, cols: np.ndarray) -> np.ndarray:
        return self.to_native(np.stack([np.asarray(rows) + 0.5, np.asarray(cols) + 0.5], axis=-1))

    def lookup(self, cells: np.ndarray) -> np.ndarray:
        """Navigability at continuous cell coordinates ``(..., 2)``; outside the map is not navigable."""
        h, w = self.navigable.shape
        # Clipping to [-1, size] then shifting by the padding makes truncation equal floor.
        rows = (np.clip(cells[..., 0], -1.0, h) + 1.0).astype(np.intp)
        cols = (np.clip(cells[..., 1], -1.0, w) + 1.0).astype(np.intp)
        return self._padded_flat[rows * (w + 2) + cols]

    def island_at(self, cells: np.ndarray) -> np.ndarray:
        """Island index at continuous cell coordinates (-1 where blocked or outside)."""
        idx = np.floor(cells).astype(np.int64)
        h, w = self.shape
        inside = (idx[..., 0] >= 0) & (idx[..., 0] < h) & (idx[..., 1] >= 0) & (idx[..., 1] < w)
        out = np.full(idx.shape[:-1], -1, dtype=np.int32)
        out[inside] = self.islands[idx[..., 0][inside], idx[..., 1][inside]]
        return out

    def segments_clear(self, a: np.ndarray, b: np.ndarray, chunk: int = 128) -> np.ndarray:
        """For segments ``a[i] -> b[i]`` in cell coordinates ``(B, 2)``: does every cell the segment
        touches lie on navigable ground? Exact (every grid-line crossing is found); a cheap pass over
        points half a cell apart first rejects most blocked segments."""
        a = np.atleast_2d(np.asarray(a, dtype=np.float64))
        b = np.atleast_2d(np.asarray(b, dtype=np.float64))
        a, b = np.broadcast_arrays(a, b)
        out = np.zeros(a.shape[0], dtype=bool)
        if a.shape[0] == 0:
            return out
        span = np.abs(b - a).max(axis=1)
        order = np.argsort(span, kind="stable")  # similar lengths share a chunk, so padding stays small
        for start in range(0, len(order), chunk):
            sel = order[start : start + chunk]
            for spacing in (3.0, 0.5):  # coarse, then fine: most blocked segments fail early
                sel = sel[self._sampled_clear(a[sel], b[sel], span[sel], spacing)]
            if len(sel):
                out[sel] = self._clear_chunk(a[sel], b[sel], int(span[sel].max()) + 1)
        return out

    def _sampled_clear(self, a: np.ndarray, b: np.ndarray, span: np.ndarray, spacing: float) -> np.ndarray:
        if len(a) == 0:
            return np.zeros(0, dtype=bool)
        s = np.linspace(0.0, 1.0, int(np.ceil(span.max() / spacing)) + 2)
        pts = a[:, None, :] + s[None, :, None] * (b - a)[:, None, :]
        return self.lookup(pts).all(axis=1)

    def _clear_chunk(self, a: np.ndarray, b: np.ndarray, n_lines: int) -> np.ndarray:
        d = b - a
        lo = np.floor(np.minimum(a, b))
        hi = np.floor(np.maximum(a, b))
        k = np.arange(1, n_lines + 1, dtype=np.float64)
        lines = lo[:, :, None] + k  # grid lines crossed on each axis: (B, 2, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (lines - a[:, :, None]) / d[:, :, None]
        t[(lines > hi[:, :, None]) | ~np.isfinite(t)] = 1.0
        bounds = np.zeros((a.shape[0], 2))
        bounds[:, 1] = 1.0
        ts = np.sort(np.concatenate([bounds, t.reshape(a.shape[0], -1)], axis=1), axis=1)
        mids = 0.5 * (ts[:, 1:] + ts[:, :-1])  # one parameter inside every touched cell
        pts = a[:, None, :] + mids[:, :, None] * d[:, None, :]
        # A zero-length piece is a grid vertex passed exactly: touching cells there is allowed, as
        # 8-connected islands allow it.
        touched = (ts[:, 1:] - ts[:, :-1]) > 1e-12
        return (self.lookup(pts) | ~touched).all(axis=1)

    def corner_cells(self) -> np.ndarray:
        """Navigable cells diagonal to a convex obstacle corner: ``(K, 2)`` (row, col), where any-angle
        shortest paths bend (the grid's counterpart of a navmesh's polygon vertices)."""
        nav, p = self.navigable, self._padded
        h, w = nav.shape
        hit = np.zeros_like(nav)
        for dr in (-1, 1):
            for dc in (-1, 1):
                diag = p[1 + dr : 1 + dr + h, 1 + dc : 1 + dc + w]
                side_r = p[1 + dr : 1 + dr + h, 1 : 1 + w]
                side_c = p[1 : 1 + h, 1 + dc : 1 + dc + w]
                hit |= nav & ~diag & side_r & side_c
        return np.argwhere(hit)


def label_islands(navigable: np.ndarray) -> np.ndarray:
    """8-connected components of the navigable cells: int32, -1 where blocked."""
    labels, _ = ndimage.label(navigable, structure=EIGHT)
    return (labels - 1).astype(np.int32)
