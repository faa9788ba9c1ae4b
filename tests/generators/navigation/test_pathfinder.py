"""The embedded path finder against habitat-sim's behaviour, on the real 17DRP5sb8fy maps."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy.sparse.csgraph import dijkstra

from eqagen.generators.navigation.pathfinder import GridPathFinder, ShortestPath, grid_graph
from tests.generators.navigation.conftest import dense_navigable

pytestmark = pytest.mark.realdata


def _pairs(pf: GridPathFinder, n: int, seed: int) -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(seed)
    return [(pf.get_random_navigable_point(rng), pf.get_random_navigable_point(rng)) for _ in range(n)]


def test_paths_stay_on_navigable_cells_and_are_at_least_straight_line(real_pf):
    n_found = 0
    for a, b in _pairs(real_pf, 200, 0):
        path = ShortestPath(a, b)
        same_island = real_pf.get_island(a) == real_pf.get_island(b)
        assert real_pf.find_path(path) == same_island
        if not same_island:  # habitat-sim: no path, infinite distance between islands
            assert path.points == [] and path.geodesic_distance == float("inf")
            continue
        n_found += 1
        pts = np.asarray(path.points)
        assert np.allclose(pts[0], a) and np.allclose(pts[-1], b)
        assert all(dense_navigable(real_pf, p, q) for p, q in itertools.pairwise(pts))
        assert path.geodesic_distance >= np.linalg.norm(b - a) - 1e-9
        assert np.isclose(path.geodesic_distance, np.linalg.norm(np.diff(pts, axis=0), axis=1).sum())
    assert n_found > 150


def test_geodesic_is_shortest_compared_with_dijkstra_on_the_grid(real_pf):
    """Any-angle geodesics are at most the 8-connected grid's shortest path (plus the half cells from
    start and goal to their cell centres) and at least 1/1.0824 of it (octile paths are at most
    8.24% longer than straight lines)."""
    graph, index = grid_graph(real_pf.grid.navigable)
    m = real_pf.grid.meters_per_pixel
    for a, b in _pairs(real_pf, 60, 1):
        if real_pf.get_island(a) != real_pf.get_island(b):
            continue
        ca, cb = (np.floor(real_pf.grid.to_cell(p)).astype(int) for p in (a, b))
        octile = dijkstra(graph, indices=index[tuple(ca)])[index[tuple(cb)]] * m
        geo = real_pf.geodesic_distance(a, b)
        slack = 2 * np.sqrt(2) / 2 * m
        assert geo <= octile + slack + 1e-9
        assert geo >= (octile - slack) / 1.0824 - 1e-9


def test_snap_point_gives_the_nearest_navigable_cell(real_pf):
    rng = np.random.default_rng(2)
    nav = real_pf.grid.navigable
    centres = real_pf.grid.cell_centers(*np.nonzero(nav))
    for _ in range(50):
        p = np.array([rng.uniform(-1, 17), 0.3, rng.uniform(-1, 9)])
        snapped = real_pf.snap_point(p)
        assert real_pf.is_navigable(snapped)
        if not real_pf.is_navigable(p):
            best = np.linalg.norm((centres - p)[:, [0, 2]], axis=1).min()
            assert np.linalg.norm((snapped - p)[[0, 2]]) <= best + real_pf.grid.meters_per_pixel


def test_random_points_fall_on_the_requested_island(real_pf):
    rng = np.random.default_rng(3)
    for island in range(real_pf.num_islands):
        pts = [real_pf.get_random_navigable_point(rng, island_index=island) for _ in range(50)]
        assert {real_pf.get_island(p) for p in pts} == {island}
    assert np.isclose(real_pf.island_area(0) + real_pf.island_area(1), real_pf.island_area())
    assert np.isclose(real_pf.island_area(), 5433 * 0.01)


def test_is_navigable_respects_height(real_pf):
    p = real_pf.get_random_navigable_point(np.random.default_rng(4))
    assert real_pf.is_navigable(p)
    assert not real_pf.is_navigable(p + np.array([0.0, 0.8, 0.0]))
    assert real_pf.is_navigable(p + np.array([0.0, 0.8, 0.0]), max_y_delta=1.0)
