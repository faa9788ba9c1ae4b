"""AI2-THOR semantics of the embedded world, on a small hand-built kitchen."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.core import UnknownNameError
from eqagen.generators.household.metadata import step_metadata
from eqagen.generators.household.scene import HouseholdScene, SceneObject, make_object_id
from eqagen.generators.household.world import ACTIONS, HouseholdWorld


def _obj(t: str, pos: tuple[float, float, float], parent: str | None = None, **flags) -> SceneObject:
    return SceneObject(make_object_id(t, pos), t, pos, parent=parent, **flags)


def kitchen() -> HouseholdScene:
    """Agent at (0.5, 0) facing +z; a counter in front, a fridge to the front right, a far table."""
    counter = _obj("CounterTop", (0.5, 0.9, 0.75))
    table = _obj("DiningTable", (0.5, 0.75, 3.5))
    shelf = _obj("Shelf", (0.5, 1.2, -1.25))
    objs = [
        counter, table, shelf,
        _obj("Fridge", (1.25, 0.0, 0.75)),  # AI2-THOR pivot: on the floor (data/object_extents.csv)
        _obj("Microwave", (-0.1, 1.05, 0.75)),
        _obj("SinkBasin", (0.8, 0.88, 0.8)),
        _obj("Faucet", (0.8, 1.08, 0.85)),
        _obj("Apple", (0.4, 0.95, 0.7), counter.object_id),
        _obj("Knife", (0.6, 0.95, 0.7), counter.object_id),
        _obj("Mug", (0.3, 0.95, 0.8), counter.object_id, is_dirty=True),
        _obj("Potato", (0.7, 0.95, 0.65), counter.object_id),
        _obj("Tomato", (0.5, 0.8, 3.5), table.object_id),
        _obj("Bread", (0.5, 1.25, -1.25), shelf.object_id),
    ]  # fmt: skip
    xs, zs = np.meshgrid(np.arange(0, 5) * 0.25, np.arange(-2, 1) * 0.25)
    reach = np.stack([xs.ravel(), zs.ravel()], axis=1)
    return HouseholdScene("test-kitchen", "kitchen", reach, 0.0, (0.5, 0.9009997, 0.0, 0.0, 30.0), objs)


@pytest.fixture
def world() -> HouseholdWorld:
    return HouseholdWorld(kitchen(), max_steps=60)


def oid(w: HouseholdWorld, t: str) -> str:
    return next(i for i, ty in zip(w.native_id, w.types) if ty == t)


def idx(w: HouseholdWorld, t: str) -> int:
    return w.types.index(t)


def snapshot(w: HouseholdWorld) -> dict:
    return {
        "pos": w.pos.copy(), "parent": w.parent.copy(), "held": w.held, "cell": w.cell, "yaw": w.yaw,
        "horizon": w.horizon, **{k: v.copy() for k, v in w.flags.items()}, "visible": w.visible.copy(),
    }  # fmt: skip


def assert_unchanged(before: dict, w: HouseholdWorld) -> None:
    after = snapshot(w)
    for k, v in before.items():
        np.testing.assert_array_equal(np.asarray(after[k]), np.asarray(v), err_msg=k)


def test_pickup_put_into_fridge_and_close_cools(world):
    w = world
    apple, fridge = oid(w, "Apple"), oid(w, "Fridge")
    assert w.step("PickupObject", objectId=apple).success
    assert w.held == idx(w, "Apple") and w.parent[w.held] == -1
    before = snapshot(w)
    r = w.step("PutObject", objectId=fridge)
    assert not r.success and r.error == "Target openable Receptacle is CLOSED, can't place if target is closed!"
    assert_unchanged(before, w)
    assert w.step("OpenObject", objectId=fridge).success
    assert w.step("PutObject", objectId=apple, receptacleObjectId=fridge).success  # ALFRED's argument form
    assert w.parent[idx(w, "Apple")] == idx(w, "Fridge") and w.held == -1
    assert w.visible[idx(w, "Apple")]
    assert w.step("CloseObject", objectId=fridge).success
    a = idx(w, "Apple")
    assert w.flags["cold"][a] and w.cooled[a] and not w.visible[a]
    kinds = [(k, w.types[e]) for _, k, e, _ in w._raw_events]
    assert kinds == [("pickup", "Apple"), ("open", "Fridge"), ("put", "Apple"), ("close", "Fridge"), ("cool", "Apple")]


def test_interaction_preconditions_and_messages(world):
    w = world
    cases = [
        ("PickupObject", oid(w, "CounterTop"), "is not pickupable"),
        ("PickupObject", "Nothing|+0.00|+0.00|+0.00", "Object ID appears to be invalid."),
        ("PickupObject", oid(w, "Tomato"), "visibilityDistance"),
        ("PickupObject", oid(w, "Bread"), "is not visible"),
        ("OpenObject", oid(w, "Apple"), "is not openable"),
        ("CloseObject", oid(w, "Fridge"), "is already closed"),
        ("ToggleObjectOff", oid(w, "Faucet"), "already off"),
        ("SliceObject", oid(w, "Potato"), "Knife"),
        ("PutObject", oid(w, "CounterTop"), "Nothing is in the agent's hand"),
    ]
    for action, target, message in cases:
        before = snapshot(w)
        r = w.step(action, objectId=target)
        assert not r.success and message in r.error, (action, r.error)
        assert_unchanged(before, w)
    assert w.step("PickupObject", objectId=oid(w, "Apple")).success
    before = snapshot(w)
    r = w.step("PickupObject", objectId=oid(w, "Mug"))
    assert not r.success and "Agent hand has something in it already" in r.error
    assert_unchanged(before, w)
    r = w.step("PutObject", objectId=oid(w, "Mug"))  # a Mug cannot hold an apple (ALFRED's table)
    assert not r.success and "cannot be placed" in r.error
    for kwargs in ({"objectId": oid(w, "Apple"), "receptacleObjectId": "Nothing|+00.00|+00.00|+00.00"}, {}):
        r = w.step("PutObject", **kwargs)
        assert not r.success and r.error == "Object ID appears to be invalid."


def test_slice_needs_a_knife_and_spawns_slices(world):
    w = world
    potato = idx(w, "Potato")
    slices = np.flatnonzero(w.whole_of == potato)
    assert len(slices) >= 1 and not w.flags["exists"][slices].any()
    assert w.step("PickupObject", objectId=oid(w, "Knife")).success
    assert w.step("SliceObject", objectId=oid(w, "Potato")).success
    assert w.flags["exists"][slices].all() and not w.flags["exists"][potato] and w.flags["sliced"][potato]
    assert (w.parent[slices] == idx(w, "CounterTop")).all()
    assert all(w.types[s] == "PotatoSliced" for s in slices)
    assert w.native_id[slices[0]].startswith(w.native_id[potato] + "|PotatoSliced_")
    r = w.step("SliceObject", objectId=oid(w, "Potato"))
    assert not r.success and r.error == "Object ID appears to be invalid."  # the whole is gone
    md = step_metadata(w.to_episode("ep", "embedded", 0, {}, {}), 2)
    listed = {o["objectId"]: o for o in md["objects"]}
    whole = listed[w.native_id[potato]]  # AI2-THOR keeps the sliced whole, flagged, out of sight
    assert whole["isSliced"] and not whole["visible"]
    assert all(w.native_id[s] in listed for s in slices)


def test_microwave_heats_and_faucet_cleans_and_fills(world):
    w = world
    mw, sink, faucet = oid(w, "Microwave"), oid(w, "SinkBasin"), oid(w, "Faucet")
    assert w.step("PickupObject", objectId=oid(w, "Potato")).success
    assert w.step("OpenObject", objectId=mw).success
    assert w.step("PutObject", objectId=mw).success
    assert w.step("CloseObject", objectId=mw).success
    assert w.step("ToggleObjectOn", objectId=mw).success
    p = idx(w, "Potato")
    assert w.flags["hot"][p] and w.heated[p] and not w.flags["cold"][p]
    mug = idx(w, "Mug")
    assert w.step("PickupObject", objectId=oid(w, "Mug")).success
    assert w.step("PutObject", objectId=sink).success
    assert w.flags["dirty"][mug] and not w.cleaned[mug]
    assert w.step("ToggleObjectOn", objectId=faucet).success
    assert not w.flags["dirty"][mug] and w.flags["filled"][mug] and w.cleaned[mug]
    kinds = {k for _, k, _, _ in w._raw_events}
    assert {"heat", "clean", "fill", "toggle_on"} <= kinds


def test_navigation_units_and_limits(world):
    w = world
    assert w.step("MoveBack").success and np.allclose(w.agent_xz, (0.5, -0.25))
    assert w.step("MoveRight").success and np.allclose(w.agent_xz, (0.75, -0.25))
    assert w.step("MoveAhead").success and np.allclose(w.agent_xz, (0.75, 0.0))
    before = snapshot(w)
    r = w.step("MoveAhead")  # z = 0.25 is under the counter
    assert not r.success and "blocked" in r.error
    assert_unchanged(before, w)
    assert w.step("RotateRight").success and w.yaw == 90.0
    assert w.step("RotateLeft").success and w.step("RotateLeft").success and w.yaw == 270.0
    assert w.step("LookDown").success and w.step("LookDown").success and w.horizon == 60.0
    assert not w.step("LookDown").success and w.horizon == 60.0
    for _ in range(6):
        assert w.step("LookUp").success
    assert w.horizon == -30.0 and not w.step("LookUp").success
    with pytest.raises(UnknownNameError, match="Teleport"):
        w.step("Teleport")


def test_held_object_moves_with_the_agent(world):
    w = world
    assert w.step("PickupObject", objectId=oid(w, "Apple")).success
    a = idx(w, "Apple")
    p0 = w.pos[a].copy()
    assert w.step("MoveBack").success
    np.testing.assert_allclose(w.pos[a] - p0, (0.0, 0.0, -0.25), atol=1e-9)
    assert w.visible[a]


def test_episode_frame_and_ordinals(world):
    w = world
    fridge = oid(w, "Fridge")
    for _ in range(2):
        assert w.step("OpenObject", objectId=fridge).success
        assert w.step("CloseObject", objectId=fridge).success
    ep = w.to_episode("ep", "embedded", 0, {}, {})
    np.testing.assert_allclose(ep.steps.pose[0], (0, 0, 0, 0, 30), atol=1e-6)
    opens = [e for e in ep.events if e.kind == "open"]
    assert [e.ordinal for e in opens] == [1, 2] and [e.t for e in opens] == [1, 3]
    native = ep.frame.to_native(ep.timeline.field("position")[0].astype(np.float64))
    np.testing.assert_allclose(native, w.pos, atol=1e-5)
    ids = ep.entities.instance_id
    assert len(set(ids)) == len(ids) and "Fridge#1" in ids and ep.entities.native_id[ids.index("Fridge#1")] == fridge
    assert ep.entities.attributes[ids.index("Knife#1")]["utility"] == "cutting food"


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, len(ACTIONS) - 1), st.integers(-2, 40), st.integers(-2, 40)), max_size=40))
def test_any_action_sequence_keeps_the_invariants(seq):
    """Arbitrary actions on arbitrary (also invalid) targets: failures change nothing, hands hold freely."""
    w = HouseholdWorld(kitchen(), max_steps=40)
    n = w.n_entities
    for a, i, r in seq:
        before = snapshot(w)
        res = w.act(ACTIONS[a], i if i < n else -2, r if r < n else -2)
        if not res.success:
            assert res.error
            assert_unchanged(before, w)
        if w.held >= 0:
            assert w.parent[w.held] == -1 and w.visible[w.held]
        assert not (w.visible & w.hidden).any()
        assert w.cell >= 0
