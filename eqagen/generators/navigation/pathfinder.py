"""Path finding with habitat-sim's ``PathFinder`` vocabulary, on an embedded navigation grid.

:class:`PathFinder` is the interface the policies use; :class:`GridPathFinder` implements it on a
:class:`~eqagen.generators.navigation.grid.NavGrid`, and
:mod:`eqagen.generators.navigation.habitat_backend` wraps habitat-sim's own PathFinder behind it.

Shortest paths are any-angle, as on a navmesh: they bend only at cells next to convex obstacle
corners. Once per grid, the corners that see each other are joined and all-pairs geodesics between
them computed with ``scipy.sparse.csgraph``; a query then links start and end to the corners they see
and takes the best combination, so it costs a few vectorised segment checks instead of a search over
the whole grid. Where no corner route exists inside an island (diagonal-only contacts), the query
falls back to Dijkstra over the 8-connected grid, shortened by line of sight. Points on different
islands are infinitely far apart and have no path, as in habitat-sim.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np
from scipy import ndimage
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import dijkstra, shortest_path

from eqagen.generators.navigation.grid import NavGrid


@dataclass
class ShortestPath:
    """habitat-sim's ``ShortestPath``: fill ``requested_start``/``requested_end``, call
    ``find_path``; ``points`` is empty and ``geodesic_distance`` infinite when no path exists."""

    requested_start: np.ndarray
    requested_end: np.ndarray
    points: list[np.ndarray] = field(default_factory=list)
    geodesic_distance: float = float("inf")


class PathFinder(Protocol):
    """The part of habitat-sim's ``PathFinder`` that episodes need (points are native ``[x, y, z]``)."""

    @property
    def num_islands(self) -> int: ...

    def is_navigable(self, point: np.ndarray, max_y_delta: float = 0.5) -> bool: ...

    def snap_point(self, point: np.ndarray, island_index: int = -1) -> np.ndarray: ...

    def get_random_navigable_point(self, rng: np.random.Generator, island_index: int = -1) -> np.ndarray: ...

    def get_island(self, point: np.ndarray) -> int: ...

    def island_area(self, island_index: int = -1) -> float: ...

    def find_path(self, path: ShortestPath) -> bool: ...

    def geodesic_distances(self, points: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Geodesic distance from each point to ``goal`` (inf where there is no path)."""
        ...

    def segment_clear(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        """Whether straight moves ``a[i] -> b[i]`` (native points) stay on navigable ground."""
        ...


class GridPathFinder:
    """habitat-sim's PathFinder behaviour on a navigation grid (see the module docstring)."""

    def __init__(self, grid: NavGrid):
        self.grid = grid
        self._snap_cache: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._cells_by_island: dict[int, np.ndarray] = {}
        self._corners_by_island: dict[int, np.ndarray] = {}
        self._corner_graphs: dict[int, tuple[np.ndarray, np.ndarray]] = {}
        self._build_corner_graph()
        self._grid_graph = None

    # --- habitat-sim's PathFinder queries -------------------------------------------------------
    @property
    def num_islands(self) -> int:
        return self.grid.num_islands

    def is_navigable(self, point: np.ndarray, max_y_delta: float = 0.5) -> bool:
        p = np.asarray(point, dtype=np.float64)
        if abs(p[1] - self.grid.floor_y) > max_y_delta:
            return False
        return bool(self.grid.lookup(self.grid.to_cell(p)))

    def get_island(self, point: np.ndarray) -> int:
        return int(self.grid.island_at(self.grid.to_cell(np.asarray(point, dtype=np.float64))))

    def island_area(self, island_index: int = -1) -> float:
        cells = self.grid.navigable.sum() if island_index < 0 else (self.grid.islands == island_index).sum()
        return float(cells) * self.grid.meters_per_pixel**2

    def snap_point(self, point: np.ndarray, island_index: int = -1) -> np.ndarray:
        """The point itself if navigable (on the island), else the nearest navigable cell's centre."""
        p = np.asarray(point, dtype=np.float64)
        cell = self.grid.to_cell(p)
        island = int(self.grid.island_at(cell))
        if island >= 0 and island_index in (-1, island):
            return np.array([p[0], self.grid.floor_y, p[2]])
        idx = np.floor(cell).astype(np.int64)
        if (idx < 0).any() or (idx >= self.grid.shape).any():  # off the map: nearest centre by brute force
            cells = self._island_cells(island_index)
            r, c = cells[np.argmin(np.linalg.norm(cells + 0.5 - cell, axis=1))]
            return self.grid.cell_centers(r, c)
        rows, cols = self._nearest_cell_index(island_index)
        return self.grid.cell_centers(rows[idx[0], idx[1]], cols[idx[0], idx[1]])

    def get_random_navigable_point(self, rng: np.random.Generator, island_index: int = -1) -> np.ndarray:
        """Uniform over navigable area (optionally of one island): a random cell, then a point in it."""
        cells = self._island_cells(island_index)
        if len(cells) == 0:
            raise ValueError(f"island {island_index} has no navigable cells")
        cell = cells[rng.integers(len(cells))] + rng.uniform(0.05, 0.95, size=2)
        return self.grid.to_native(cell)

    def segment_clear(self, a: np.ndarray, b: np.ndarray) -> np.ndarray:
        g = self.grid
        a, b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
        if a.ndim == 1 and b.shape == (1, 3):  # the follower's common case: skip the array set-up
            (ax, _, az), (bx, _, bz) = a.tolist(), b[0].tolist()
            (ox, oz), m = g.origin, g.meters_per_pixel
            return np.array([g._walk_clear((az - oz) / m, (ax - ox) / m, (bz - oz) / m, (bx - ox) / m)])
        ca = (a[..., [2, 0]] - (g.origin[1], g.origin[0])) / g.meters_per_pixel  # (row, col), inlined to_cell
        cb = (b[..., [2, 0]] - (g.origin[1], g.origin[0])) / g.meters_per_pixel
        return g.segments_clear(ca, cb)

    def find_path(self, path: ShortestPath) -> bool:
        start = self.snap_point(path.requested_start)
        end = self.snap_point(path.requested_end)
        cells, dist = self._shortest(self.grid.to_cell(start), self.grid.to_cell(end))
        if cells is None:
            path.points, path.geodesic_distance = [], float("inf")
            return False
        pts = self.grid.to_native(cells)
        pts[0], pts[-1] = start, end
        path.points = list(pts)
        path.geodesic_distance = float(dist)
        return True

    def geodesic_distance(self, a: np.ndarray, b: np.ndarray) -> float:
        sp = ShortestPath(np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64))
        self.find_path(sp)
        return sp.geodesic_distance

    def geodesic_distances(self, points: np.ndarray, goal: np.ndarray) -> np.ndarray:
        """Geodesic distance from each of ``points`` (native, navigable) to ``goal``: straight where
        the goal is in sight, else through the corner graph; inf across islands. The goal's side is
        worked out once; each point then checks corners in order of the distance they would give, and
        the first one in sight gives the exact value."""
        g = self.grid
        cells, b = g.to_cell(np.asarray(points, dtype=np.float64)), g.to_cell(self.snap_point(goal))
        island = int(g.island_at(b))
        out = np.full(len(cells), np.inf)
        ids, dist = self._island_corner_graph(island) if island >= 0 else (np.zeros(0, int), None)
        walk, (b0, b1) = g._walk_clear, b.tolist()
        cl = self.corners[ids].tolist()
        to_b = np.array([math.hypot(c0 - b0, c1 - b1) if walk(c0, c1, b0, b1) else np.inf for c0, c1 in cl])
        via = (dist + to_b[None, :]).min(axis=1) if len(ids) else to_b  # corner i -> goal
        for n, (p0, p1) in enumerate(cells.tolist()):
            if int(g.island_at(cells[n])) != island:
                continue
            if walk(p0, p1, b0, b1):
                out[n] = math.hypot(p0 - b0, p1 - b1)
                continue
            total = np.hypot(self.corners[ids, 0] - p0, self.corners[ids, 1] - p1) + via
            for i in np.argsort(total):
                if not np.isfinite(total[i]):
                    break
                if walk(p0, p1, cl[i][0], cl[i][1]):
                    out[n] = total[i]
                    break
        return out * g.meters_per_pixel

    # --- internals ---------------------------------------------------------------------------------
    def _island_cells(self, island_index: int) -> np.ndarray:
        if island_index not in self._cells_by_island:
            mask = self.grid.navigable if island_index < 0 else self.grid.islands == island_index
            self._cells_by_island[island_index] = np.argwhere(mask)
        return self._cells_by_island[island_index]

    def _nearest_cell_index(self, island_index: int) -> tuple[np.ndarray, np.ndarray]:
        if island_index not in self._snap_cache:
            mask = self.grid.navigable if island_index < 0 else self.grid.islands == island_index
            if not mask.any():
                raise ValueError(f"island {island_index} has no navigable cells")
            _, (rows, cols) = ndimage.distance_transform_edt(~mask, return_indices=True)
            self._snap_cache[island_index] = (rows, cols)
        return self._snap_cache[island_index]

    def _build_corner_graph(self) -> None:
        """All-pairs geodesics between mutually visible corner cells (once per grid)."""
        corners = self.grid.corner_cells().astype(np.float64) + 0.5
        self.corners = corners
        self.corner_island = self.grid.island_at(corners)
        n = len(corners)
        i, j = np.triu_indices(n, k=1)
        same = self.corner_island[i] == self.corner_island[j]
        i, j = i[same], j[same]
        visible = self.grid.segments_clear(corners[i], corners[j])
        i, j = i[visible], j[visible]
        w = np.linalg.norm(corners[i] - corners[j], axis=1)
        graph = coo_matrix((w, (i, j)), shape=(n, n)).tocsr()
        if n:
            self.corner_dist, self.corner_pred = shortest_path(graph, directed=False, return_predecessors=True)
        else:
            self.corner_dist, self.corner_pred = np.zeros((0, 0)), np.zeros((0, 0), dtype=np.int32)

    def _shortest(self, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray | None, float]:
        """Any-angle shortest path between cell coordinates; (None, inf) across islands."""
        island = int(self.grid.island_at(a))
        if island < 0 or island != int(self.grid.island_at(b)):
            return None, float("inf")
        if self.grid.segments_clear(a[None], b[None])[0]:
            return np.stack([a, b]), float(np.linalg.norm(b - a)) * self.grid.meters_per_pixel
        route = self._corner_route(a, b, island)
        if route is None:
            route = self._grid_route(a, b)
        if route is None:
            return None, float("inf")
        length = np.linalg.norm(np.diff(route, axis=0), axis=1).sum() * self.grid.meters_per_pixel
        return route, float(length)

    def _corner_route(self, a: np.ndarray, b: np.ndarray, island: int) -> np.ndarray | None:
        """Best route a -> corner i -> ... -> corner j -> b. Candidate pairs (i, j) are taken in order
        of ``|a - c_i| + D[i, j] + |c_j - b|``, a lower bound that is exact once a sees c_i and c_j
        sees b; sight is checked lazily and a corner not in sight drops its row or column, so the
        first pair seen from both ends is optimal."""
        ids, dist = self._island_corner_graph(island)
        if len(ids) == 0:
            return None
        c = self.corners[ids]
        bound = np.linalg.norm(c - a, axis=1)[:, None] + dist + np.linalg.norm(c - b, axis=1)[None, :]
        best_j = bound.argmin(axis=1)  # per corner i: the best j still possible, and its bound
        row_min = bound[np.arange(len(ids)), best_j]
        seen_a: dict[int, bool] = {}
        seen_b: dict[int, bool] = {}
        walk, (a0, a1), (b0, b1), cl = self.grid._walk_clear, a.tolist(), b.tolist(), c.tolist()
        for _ in range(2 * len(ids) + 1):
            i = int(row_min.argmin())
            j = int(best_j[i])
            if not math.isfinite(row_min[i]):
                return None
            if i not in seen_a:
                seen_a[i] = walk(a0, a1, cl[i][0], cl[i][1])
            if not seen_a[i]:
                row_min[i] = np.inf
                continue
            if j not in seen_b:
                seen_b[j] = walk(cl[j][0], cl[j][1], b0, b1)
            if not seen_b[j]:  # drop column j and re-pick the rows that wanted it
                bound[:, j] = np.inf
                rows = np.flatnonzero((best_j == j) & np.isfinite(row_min))
                best_j[rows] = bound[rows].argmin(axis=1)
                row_min[rows] = bound[rows, best_j[rows]]
                continue
            return self._chain(a, b, int(ids[i]), int(ids[j]))
        return None

    def _island_corner_graph(self, island: int) -> tuple[np.ndarray, np.ndarray]:
        """The corners of one island and their geodesics (cached per island)."""
        if island not in self._corner_graphs:
            ids = self._island_corners(island)
            self._corner_graphs[island] = (ids, self.corner_dist[np.ix_(ids, ids)])
        return self._corner_graphs[island]

    def _chain(self, a: np.ndarray, b: np.ndarray, first: int, last: int) -> np.ndarray:
        chain = [last]
        while chain[-1] != first:
            chain.append(int(self.corner_pred[first, chain[-1]]))
        return np.concatenate([a[None], self.corners[chain[::-1]], b[None]])

    def _island_corners(self, island: int) -> np.ndarray:
        if island not in self._corners_by_island:
            self._corners_by_island[island] = np.flatnonzero(self.corner_island == island)
        return self._corners_by_island[island]

    def _grid_route(self, a: np.ndarray, b: np.ndarray) -> np.ndarray | None:
        """Dijkstra over the 8-connected grid, then shortened by line of sight (string pulling)."""
        graph, index = self._grid_graph_index()
        src, dst = index[tuple(np.floor(a).astype(int))], index[tuple(np.floor(b).astype(int))]
        _, pred = dijkstra(graph, directed=True, indices=src, return_predecessors=True)
        if pred[dst] < 0 and src != dst:
            return None
        cells = np.argwhere(self.grid.navigable)
        chain = [dst]
        while chain[-1] != src:
            chain.append(int(pred[chain[-1]]))
        pts = np.concatenate([a[None], cells[chain[::-1]] + 0.5, b[None]])
        return self._pull_string(pts)

    def _pull_string(self, pts: np.ndarray) -> np.ndarray:
        keep, i = [0], 0
        while i < len(pts) - 1:
            ahead = np.arange(i + 1, len(pts))
            clear = self.grid.segments_clear(np.repeat(pts[i][None], len(ahead), 0), pts[ahead])
            # The next point is always reachable (adjacent cells); jump to the furthest one in sight.
            i = int(ahead[np.flatnonzero(clear)[-1]]) if clear.any() else i + 1
            keep.append(i)
        return pts[keep]

    def _grid_graph_index(self):
        if self._grid_graph is None:
            self._grid_graph = grid_graph(self.grid.navigable)
        return self._grid_graph


def grid_graph(navigable: np.ndarray):
    """The 8-connected grid as a symmetric CSR matrix (edge weights in cells) and the cell->node index."""
    h, w = navigable.shape
    index = np.full((h, w), -1, dtype=np.int64)
    index[navigable] = np.arange(int(navigable.sum()))
    r0, c0 = np.nonzero(navigable)
    rows, cols, weights = [], [], []
    for dr, dc in ((0, 1), (1, 0), (1, 1), (1, -1)):
        r1, c1 = r0 + dr, c0 + dc
        ok = (r1 < h) & (c1 >= 0) & (c1 < w)
        ok[ok] = navigable[r1[ok], c1[ok]]
        rows.append(index[r0[ok], c0[ok]])
        cols.append(index[r1[ok], c1[ok]])
        weights.append(np.full(int(ok.sum()), np.hypot(dr, dc)))
    r, c, wt = np.concatenate(rows), np.concatenate(cols), np.concatenate(weights)
    n = int(navigable.sum())
    graph = coo_matrix((np.concatenate([wt, wt]), (np.concatenate([r, c]), np.concatenate([c, r]))), shape=(n, n))
    return graph.tocsr(), index
