"""The navigation grid: a top-down navigability map in habitat's native frame, and exact segment checks.

A grid cell ``(row, col)`` covers native habitat coordinates ``x in [x0 + col*m, x0 + (col+1)*m)`` and
``z in [z0 + row*m, z0 + (row+1)*m)`` with ``m`` metres per pixel, at the floor height ``floor_y``; this
is the layout of habitat-sim's ``PathFinder.get_topdown_view`` (rows along +z, columns along +x).

Islands are the 8-connected components of the navigable cells, numbered in scan order (checked against
habitat-sim's own island map of 17DRP5sb8fy, which it reproduces exactly).
"""

from __future__ import annotations

import math
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
        self._padded_bytes = self._padded.tobytes()  # for the per-cell walk of short single segments

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
        # Clamping to [-1, size] then shifting by the padding makes truncation equal floor.
        rows = np.minimum(np.maximum(cells[..., 0], -1.0), h) + 1.0
        cols = np.minimum(np.maximum(cells[..., 1], -1.0), w) + 1.0
        return self._padded_flat[rows.astype(np.intp) * (w + 2) + cols.astype(np.intp)]

    def island_at(self, cells: np.ndarray) -> np.ndarray:
        """Island index at continuous cell coordinates (-1 where blocked or outside)."""
        if np.ndim(cells) == 1:  # one point: plain Python is several times cheaper
            r, c = math.floor(cells[0]), math.floor(cells[1])
            h, w = self.islands.shape
            return np.int32(self.islands[r, c] if 0 <= r < h and 0 <= c < w else -1)
        idx = np.floor(cells).astype(np.int64)
        h, w = self.shape
        inside = (idx[..., 0] >= 0) & (idx[..., 0] < h) & (idx[..., 1] >= 0) & (idx[..., 1] < w)
        out = np.full(idx.shape[:-1], -1, dtype=np.int32)
        out[inside] = self.islands[idx[..., 0][inside], idx[..., 1][inside]]
        return out

    def segments_clear(self, a: np.ndarray, b: np.ndarray, budget: int = 200_000) -> np.ndarray:
        """For segments ``a[i] -> b[i]`` in cell coordinates ``(B, 2)``: does every cell the segment
        touches lie on navigable ground? Exact: every grid-line crossing is found. Long batches first go
        through a cheap pass over points two cells apart, which rejects most blocked segments."""
        a, b = np.broadcast_arrays(
            np.asarray(a, dtype=np.float64).reshape(-1, 2), np.asarray(b, dtype=np.float64).reshape(-1, 2)
        )
        n = a.shape[0]
        if n == 0:
            return np.zeros(0, dtype=bool)
        span = np.abs(b - a).max(axis=1)
        longest = float(span.max())
        if n * longest <= 300.0:  # a few short segments: walking the cells in Python beats array set-up
            return np.array([self._walk_clear(*a[i], *b[i]) for i in range(n)], dtype=bool)
        if n * longest <= budget:
            if longest <= 8.0:
                return self._clear_exact(a, b, longest)
            out = self._sampled_clear(a, b, longest, 2.0)
            sel = np.flatnonzero(out)
            if len(sel):
                out[sel] = self._clear_exact(a[sel], b[sel], float(span[sel].max()))
            return out
        out = np.zeros(n, dtype=bool)
        order = np.argsort(span, kind="stable")  # similar lengths share a chunk, so padding stays small
        step = max(1, int(budget // max(longest, 1.0)))
        for start in range(0, n, step):
            sel = order[start : start + step]
            out[sel] = self.segments_clear(a[sel], b[sel], budget)
        return out

    def _walk_clear(self, r0: float, c0: float, r1: float, c1: float) -> bool:
        """The same exact test for one segment, walking cell to cell (Amanatides-Woo traversal)."""
        nav, width = self._padded_bytes, self.navigable.shape[1] + 2
        h, w = self.navigable.shape
        dr, dc = r1 - r0, c1 - c0
        # The first cell is the one the segment enters (a start exactly on a grid line going backward
        # lies in the lower cell), as in the vectorised test.
        i = math.floor(r0) - (1 if dr < 0 and r0 == math.floor(r0) else 0)
        j = math.floor(c0) - (1 if dc < 0 and c0 == math.floor(c0) else 0)
        if not (-1 <= i <= h and -1 <= j <= w) or not nav[(i + 1) * width + j + 1]:
            return False
        idx, inf = (i + 1) * width + j + 1, float("inf")
        di, dj = (width if dr > 0 else -width), (1 if dc > 0 else -1)
        ti_step, tj_step = (abs(1.0 / dr) if dr else inf), (abs(1.0 / dc) if dc else inf)
        ti = ((i + 1 - r0) if dr > 0 else (r0 - i)) * ti_step if dr else inf
        tj = ((j + 1 - c0) if dc > 0 else (c0 - j)) * tj_step if dc else inf
        # The padding is not navigable, so the walk stops before it could leave the array.
        while True:
            if ti < tj - 1e-12:
                if ti >= 1.0:
                    return True
                idx, ti = idx + di, ti + ti_step
            elif tj < ti - 1e-12:
                if tj >= 1.0:
                    return True
                idx, tj = idx + dj, tj + tj_step
            else:  # through a grid vertex exactly: touching the side cells is allowed
                if ti >= 1.0:
                    return True
                idx, ti, tj = idx + di + dj, ti + ti_step, tj + tj_step
            if not nav[idx]:
                return False

    def _sampled_clear(self, a: np.ndarray, b: np.ndarray, span: float, spacing: float) -> np.ndarray:
        s = np.linspace(0.0, 1.0, int(np.ceil(span / spacing)) + 2)
        pts = a[:, None, :] + s[None, :, None] * (b - a)[:, None, :]
        return self.lookup(pts).all(axis=1)

    def _clear_exact(self, a: np.ndarray, b: np.ndarray, span: float) -> np.ndarray:
        d = b - a
        lines = np.floor(np.minimum(a, b))[:, :, None] + np.arange(1.0, int(span) + 2.0)  # (B, 2, n)
        with np.errstate(divide="ignore", invalid="ignore"):
            t = (lines - a[:, :, None]) / d[:, :, None]
        t[~((t > 0.0) & (t < 1.0))] = 1.0  # lines beyond the segment (and NaN for d == 0)
        ts = np.sort(t.reshape(a.shape[0], -1), axis=1)
        lo = np.concatenate([np.zeros((a.shape[0], 1)), ts], axis=1)
        hi = np.concatenate([ts, np.ones((a.shape[0], 1))], axis=1)
        pts = a[:, None, :] + (0.5 * (lo + hi))[:, :, None] * d[:, None, :]  # one point inside each touched cell
        # A zero-length piece is a grid vertex passed exactly: touching cells there is allowed, as
        # 8-connected islands allow it.
        return (self.lookup(pts) | (hi - lo <= 1e-12)).all(axis=1)

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
