"""The navigation grid: islands as habitat-sim reports them, exact segment checks."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.generators.navigation.grid import NavGrid, label_islands
from eqagen.generators.navigation.houses import make_house


@pytest.mark.realdata
def test_islands_match_habitat_sims_own_island_map(habitat_maps):
    binary, islands = (np.load(p) for p in habitat_maps)
    ours = label_islands(binary.astype(bool))
    assert ours.max() + 1 == 2  # the scene has two islands
    assert np.array_equal(ours, islands)


def _segments(grid: NavGrid, seed: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    cells = np.argwhere(grid.navigable).astype(float)
    a = cells[rng.integers(len(cells), size=n)] + rng.random((n, 2))
    b = a + rng.normal(size=(n, 2)) * rng.choice([0.5, 3.0, 15.0], size=(n, 1))
    return a, b


def _touched_all_navigable(grid: NavGrid, a: np.ndarray, b: np.ndarray) -> bool:
    """Reference: sample the segment every 1/400 of a cell (no vertex-exact cases with random floats)."""
    n = int(np.ceil(np.abs(b - a).max() * 400)) + 2
    pts = a + np.linspace(0, 1, n)[:, None] * (b - a)
    return bool(grid.lookup(pts).all())


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 10_000))
def test_segment_checks_agree_with_dense_sampling(seed):
    grid = make_house(3, seed % 7).grid
    a, b = _segments(grid, seed, 60)
    got = grid.segments_clear(a, b)
    want = np.array([_touched_all_navigable(grid, x, y) for x, y in zip(a, b)])
    assert np.array_equal(got, want)


def test_cell_walk_agrees_with_vectorised_test_including_grid_vertices():
    grid = make_house(0, 1).grid
    a, b = _segments(grid, 5, 3000)
    a[:600] = np.round(a[:600])  # starts on grid lines and vertices, moves through vertices
    b[:600] = a[:600] + np.random.default_rng(1).integers(-4, 5, size=(600, 2))
    span = float(np.abs(b - a).max())
    vectorised = grid._clear_exact(a, b, span)
    walked = np.array([grid._walk_clear(*x, *y) for x, y in zip(a, b)])
    assert np.array_equal(vectorised, walked)
    assert 0.2 < vectorised.mean() < 0.95  # both outcomes are exercised


def test_outside_the_map_is_not_navigable():
    grid = NavGrid(np.ones((5, 5), dtype=bool))
    assert grid.segments_clear(np.array([[2.5, 2.5]]), np.array([[2.5, 7.0]]))[0] == np.False_
    assert grid.segments_clear(np.array([[0.5, 0.5]]), np.array([[4.5, 4.5]]))[0] == np.True_
