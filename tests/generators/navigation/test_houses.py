"""Embedded houses: deterministic, varied, connected, furniture inside its room and off the doorways."""

from __future__ import annotations

from collections import Counter

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.generators.navigation.houses import make_house


def test_same_seed_same_house_and_seeds_differ():
    a, b, c = make_house(0, 4), make_house(0, 4), make_house(1, 4)
    assert np.array_equal(a.grid.navigable, b.grid.navigable) and a.objects == b.objects
    assert a.grid.shape != c.grid.shape or not np.array_equal(a.grid.navigable, c.grid.navigable)


def test_houses_are_varied():
    houses = [make_house(0, i) for i in range(60)]
    layouts = {(h.grid.shape, h.grid.navigable.tobytes()) for h in houses}
    assert len(layouts) == 60
    n_rooms = Counter(len(h.regions) for h in houses)
    assert len(n_rooms) >= 5  # 4 to 10 rooms
    categories = Counter(r.category for h in houses for r in h.regions)
    assert {"living room", "kitchen", "bedroom", "bathroom", "hallway", "dining room", "office"} <= set(categories)
    objects = Counter(o.category for h in houses for o in h.objects)
    assert len(objects) >= 25 and sum(objects.values()) >= 60 * 15


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 100_000))
def test_house_invariants(index):
    house = make_house(0, index)
    grid = house.grid
    islands = np.bincount(grid.islands[grid.islands >= 0])
    assert islands.max() >= 0.9 * grid.navigable.sum()  # essentially one connected floor
    assert {r.category for r in house.regions} >= {"living room", "kitchen", "bedroom", "bathroom"}
    for obj in house.objects:
        x0, _, z0, x1, _, z1 = obj.box
        region = house.regions[obj.region].box
        assert region[0] <= x0 < x1 <= region[3] and region[2] <= z0 < z1 <= region[5]
        r0, r1, c0, c1 = (round(v / 0.1) for v in (z0, z1, x0, x1))
        cells = grid.navigable[r0:r1, c0:c1]
        assert not cells.any()  # furniture is not navigable
    boxes = np.array([o.box for o in house.objects])
    for i in range(len(boxes)):  # footprints do not overlap
        for j in range(i + 1, len(boxes)):
            a, b = boxes[i], boxes[j]
            assert a[3] <= b[0] or b[3] <= a[0] or a[5] <= b[2] or b[5] <= a[2]
    # every room's floor is reachable from the main island
    main = int(np.argmax(islands))
    for i, _ in enumerate(house.regions):
        assert (grid.islands[house.region_map == i] == main).any()
