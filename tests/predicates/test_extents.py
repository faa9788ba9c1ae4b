"""Above and under read boxes: hand-built rooms with the issue's cases, and invariants over random boxes.

Positions are in the household's convention (``data/object_extents.csv``): furniture and small objects at
the bottom of their box, a countertop at its top, drawers, cabinets, sink basins, burners and faucets at
their centre.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.core import FilterSpec, Program, QuerySpec
from eqagen.predicates import context_for
from eqagen.predicates.extents import MAX_DEPTH, units
from eqagen.predicates.filters import vertical_relation
from eqagen.templates.answers import evaluate
from tests.predicates.conftest import tiny_episode


def room(objects: list[tuple[str, tuple[float, float, float], int]]):
    """A one-step episode of (type, position, parent index or -1), everything seen."""
    types = [t for t, _, _ in objects]
    pos = np.array([[p for _, p, _ in objects]], dtype=float)
    parent = np.array([[q for _, _, q in objects]])
    return tiny_episode(types, pos, np.ones((1, len(objects)), bool), parent)


def related(ep, key: str, anchor: str) -> list[str]:
    """The instance ids ``key`` (above/under) the only ``anchor`` of the episode."""
    groups = evaluate(ep, Program((FilterSpec("location", key, anchor),), QuerySpec("listObjects")))
    return sorted(r.entity for g in groups for r in g.result)


def kitchen_counter():
    """One counter (top at 0.92) with its sink basin, faucet, two burners and their knobs, a coffee machine
    and a pot on a burner, a house plant 0.39 m beside a burner and 0.05 m higher; a wall cabinet (bottom at
    1.55) over the counter and a mug on the counter under it."""
    return room(
        [
            ("CounterTop", (0.0, 0.92, 0.0), -1),
            ("SinkBasin", (-0.4, 0.88, 0.0), -1),
            ("Faucet", (-0.4, 1.08, 0.01), -1),
            ("StoveBurner", (0.3, 0.95, 0.0), -1),
            ("StoveBurner", (0.55, 0.95, 0.0), -1),
            ("StoveKnob", (0.35, 0.85, 0.02), -1),
            ("StoveKnob", (0.6, 0.85, 0.02), -1),
            ("CoffeeMachine", (-0.1, 0.92, 0.1), -1),
            ("Pot", (0.3, 0.97, 0.0), 3),
            ("HousePlant", (0.69, 1.0, 0.0), -1),
            ("Cabinet", (0.0, 1.85, 0.0), -1),
            ("Mug", (0.05, 0.93, -0.1), 0),
        ]
    )


def test_nothing_on_or_in_the_counter_is_under_the_faucet_or_above_a_burner():
    ep = kitchen_counter()
    assert related(ep, "under", "Faucet") == []  # the "eleven objects under the faucet"
    assert related(ep, "above", "StoveBurner") == ["Cabinet#1"]  # not the plant beside it, 0.05 m higher
    assert related(ep, "under", "CounterTop") == []  # not the sink basin set into it
    assert related(ep, "above", "SinkBasin") == ["Cabinet#1"]  # not the faucet over it, part of the counter


def test_what_hangs_over_the_counter_is_above_what_stands_on_it():
    ep = kitchen_counter()
    # the cabinet's footprint (0.5 m, at x=0) over the counter: what stands within it, and not the faucet
    # 0.4 m to the side, the plant at 0.69 m or the second burner at 0.55 m (their footprints 0.05 m off)
    expected = ["CoffeeMachine#1", "CounterTop#1", "Mug#1", "Pot#1", "SinkBasin#1", "StoveBurner#1"]
    assert related(ep, "under", "Cabinet") == expected
    assert related(ep, "above", "Mug") == ["Cabinet#1"]


def test_furniture_is_not_above_its_own_drawer_nor_a_cabinet_above_what_is_inside_it():
    for furniture, drawer_y in (("Desk", 0.6), ("SideTable", 0.5), ("Dresser", 0.6)):
        ep = room([(furniture, (0.0, 0.0, 0.0), -1), ("Drawer", (0.1, drawer_y, 0.0), -1)])
        for key in ("above", "under"):  # the drawer sits inside the furniture's box
            assert related(ep, key, "Drawer") == [] and related(ep, key, furniture) == []
    ep = room([("Cabinet", (0.0, 1.85, 0.0), -1), ("CellPhone", (0.0, 1.6, 0.0), 0)])
    for key in ("above", "under"):
        assert related(ep, key, "CellPhone") == [] and related(ep, key, "Cabinet") == []


def test_footprints_meet_within_the_margin_and_the_gap_within_a_metre():
    # a wall shelf (board top at 1.2, 0.9 m wide) over a garbage can (0.35 m wide and tall)
    def shelf_over_can(dx: float, shelf_y: float = 1.2) -> list[str]:
        return related(room([("Shelf", (0.0, shelf_y, 0.0), -1), ("GarbageCan", (dx, 0.0, 0.0), -1)]), "under", "Shelf")

    assert shelf_over_can(0.0) == ["GarbageCan#1"]
    assert shelf_over_can(0.45 + 0.175 + 0.04) == ["GarbageCan#1"]  # footprints 0.04 m apart: within the margin
    assert shelf_over_can(0.45 + 0.175 + 0.06) == []  # 0.06 m apart: beside it
    assert shelf_over_can(0.0, shelf_y=0.35 + 0.04 + 1.0) == ["GarbageCan#1"]  # 1.0 m of open air between
    assert shelf_over_can(0.0, shelf_y=0.35 + 0.04 + 1.02) == []


def test_boxes_that_overlap_in_height_are_neither_above_nor_under():
    # a lamp on a desk beside a box on the floor whose top reaches above the desk's top
    ep = room([("Desk", (0.0, 0.0, 0.0), -1), ("Box", (0.5, 0.5, 0.0), -1)])
    assert related(ep, "above", "Desk") == [] and related(ep, "under", "Box") == []


SMALL = ("Mug", "Book", "Apple", "Bowl", "Plate", "Cup")
BIG = ("Shelf", "Cabinet", "Drawer", "Desk", "CounterTop", "SideTable")
coordinate = st.floats(-1.0, 1.0, allow_nan=False).map(lambda v: round(v, 2))


@st.composite
def rooms(draw):
    n = draw(st.integers(2, 6))
    types = [draw(st.sampled_from(SMALL + BIG)) for _ in range(n)]
    pos = [(draw(coordinate), draw(st.floats(0.0, 2.0)).__round__(2), draw(coordinate)) for _ in range(n)]
    parent = [draw(st.integers(-1, i - 1)) if types[i] in SMALL and i else -1 for i in range(n)]
    return list(zip(types, pos, parent))


@settings(max_examples=60, deadline=None)
@given(rooms())
def test_above_is_under_reversed_never_both_never_itself_or_its_receptacle(objects):
    ctx = context_for(room(objects))
    n = ctx.N
    e, a = np.arange(n)[:, None], np.arange(n)[None, :]
    above = vertical_relation(ctx, "above", np.int64(0), e, a)
    under = vertical_relation(ctx, "under", np.int64(0), e, a)
    assert (above == under.T).all()
    assert not (above & under).any()
    assert not above.diagonal().any() and not under.diagonal().any()
    for i, (_, _, p) in enumerate(objects):
        if p >= 0:
            assert not above[i, p] and not under[i, p] and not above[p, i] and not under[p, i]


def test_a_part_inside_its_furniture_is_read_through_the_furniture():
    """A pencil on a wall shelf over a counter is above the counter, not above the cabinet under its top; a
    towel hangs below its holder's bar, so it is beside the sink basin below the bar, not over it."""
    ep = room(
        [
            ("CounterTop", (0.0, 0.92, 0.0), -1),
            ("Cabinet", (0.0, 0.45, 0.0), -1),
            ("Shelf", (0.0, 1.25, 0.0), -1),
            ("Pencil", (0.0, 1.26, 0.0), 2),
            ("TowelHolder", (0.6, 1.2, 0.0), -1),
            ("Towel", (0.6, 1.2, 0.0), 4),
            ("SinkBasin", (0.6, 0.88, 0.0), -1),
        ]
    )
    assert related(ep, "under", "Pencil") == ["CounterTop#1"]
    assert related(ep, "above", "Cabinet") == [] and related(ep, "under", "Cabinet") == []
    assert related(ep, "under", "Towel") == []


@st.composite
def receptacle_histories(draw):
    """``[T, N]`` receptacles (runs of steps alike, a cycle now and then) and ``[N]`` hosts."""
    n = draw(st.integers(1, 6))
    rows = draw(st.lists(st.lists(st.integers(-1, n - 1), min_size=n, max_size=n), min_size=1, max_size=5))
    runs = draw(st.lists(st.integers(1, 4), min_size=len(rows), max_size=len(rows)))
    parent = np.repeat(np.array(rows), runs, axis=0)
    host = np.array(draw(st.lists(st.integers(0, n - 1), min_size=n, max_size=n)))
    return parent, host


@settings(max_examples=80, deadline=None)
@given(receptacle_histories())
def test_an_entitys_unit_is_its_top_receptacles_host_at_every_step(history):
    """``units`` (followed once per run of steps with the same receptacles) equals the walk at each step: up
    the receptacle chain (``MAX_DEPTH`` links at most), then to that one's host."""
    parent, host = history
    want = np.empty_like(parent)
    for t, e in np.ndindex(parent.shape):
        r = e
        for _ in range(MAX_DEPTH):
            if parent[t, r] < 0:
                break
            r = parent[t, r]
        want[t, e] = host[r]
    np.testing.assert_array_equal(units(parent, host), want)


def test_each_entity_has_its_types_box():
    """The context's boxes (looked up once per type) are each entity's type's extent: half its side, its bottom
    and top; a point where the catalogue lists no extent."""
    from eqagen.predicates.household import object_extent
    from tests.predicates.helpers import household_episodes

    for ep in household_episodes(5):
        ctx = context_for(ep)
        for i, t in enumerate(ctx.types.tolist()):
            width, bottom, top, _ = object_extent(t) or (0.0, 0.0, 0.0, "loose")
            assert (ctx.half_width[i], ctx.box_bottom[i], ctx.box_top[i]) == (width / 2, bottom, top)
        assert (ctx.half_width > 0).sum() > ctx.N // 2  # most types have a box
