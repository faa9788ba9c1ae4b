"""``Draws``: scalar draws read from blocks of one generator's stream."""

from __future__ import annotations

import math

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.core import Draws, derive_rng


def test_draws_are_the_generator_stream_in_order():
    """``random`` returns the generator's own uniforms, block after block, and nothing else."""
    draws = Draws(derive_rng(3, "draws"), block=7)
    got = [draws.random() for _ in range(30)]
    stream = derive_rng(3, "draws")
    want = np.concatenate([stream.random(7) for _ in range(5)])[:30].tolist()
    assert got == want


@settings(max_examples=200, deadline=None)
@given(seed=st.integers(0, 2**32), n=st.integers(1, 10_000), block=st.integers(1, 64))
def test_below_stays_in_range_and_is_deterministic(seed, n, block):
    a, b = Draws(derive_rng(seed, "below"), block), Draws(derive_rng(seed, "below"), block)
    xs = [a.below(n) for _ in range(50)]
    assert all(0 <= x < n for x in xs)
    assert xs == [b.below(n) for _ in range(50)]


def test_below_is_uniform():
    draws, n, k = Draws(derive_rng(0, "uniform")), 7, 70_000
    counts = np.bincount([draws.below(n) for _ in range(k)], minlength=n)
    chi2 = float(((counts - k / n) ** 2 / (k / n)).sum())
    assert chi2 < 22.5  # chi-squared, 6 degrees of freedom: p < 0.001 above this


def test_below_at_the_top_of_the_unit_interval():
    """A uniform just below 1 still gives n - 1, never n."""
    draws = Draws(derive_rng(0, "edge"))
    draws._values, draws._next = [math.nextafter(1.0, 0.0)], 0
    assert draws.below(3) == 2


def test_geometric_matches_its_distribution():
    for p in (0.2, 0.5, 0.8):
        draws, k = Draws(derive_rng(1, "geometric", p)), 40_000
        xs = np.array([draws.geometric(p) for _ in range(k)])
        assert xs.min() >= 1
        assert abs(xs.mean() - 1 / p) < 4 * math.sqrt((1 - p) / p**2 / k)  # mean 1/p, variance (1-p)/p^2
        assert abs((xs == 1).mean() - p) < 0.01  # P(1) = p
    assert Draws(derive_rng(1, "sure")).geometric(1.0) == 1
