import json

import numpy as np
import pyarrow as pa
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.core import Entities, Episode, Event, FrameTransform, Region, Steps, Timeline, looped_poses, number_events


def _episode(seed: int) -> Episode:
    rng = np.random.default_rng(seed)
    T, N = int(rng.integers(1, 20)), int(rng.integers(1, 6))
    dense = {
        "position": rng.normal(size=(T, N, 3)).astype(np.float32),
        "visible": rng.random((T, N)) < 0.5,
        "parent": rng.integers(-1, N, (T, N)).astype(np.int32),
        "open": rng.random((T, N)) < 0.2,
    }
    steps = Steps(
        action=["Initialize"] + ["MoveAhead"] * (T - 1),
        target=rng.integers(-1, N, T).astype(np.int32),
        receptacle=np.full(T, -1, np.int32),
        args=[{"k": int(i)} for i in range(T)],
        success=rng.random(T) < 0.9,
        error=[""] * T,
        pose=rng.normal(size=(T, 5)).astype(np.float32),
        held=np.full(T, -1, np.int32),
    )
    ents = Entities([f"Cup#{i}" for i in range(N)], ["Cup"] * N, [f"Cup|{i}|0|0" for i in range(N)],
                    [{"color": "red"}] * N, [("pickupable",)] * N)  # fmt: skip
    return Episode("e1", "household", "embedded", "s1", seed, {"type": "pick"}, steps, ents,
                   Timeline.from_dense(dense), number_events([(1, "open", 0, -1), (3, "open", 0, -1)], ["Cup"] * N),
                   [Region("r0", "kitchen", (0, 0, 0, 1, 1, 1))], FrameTransform("ai2thor", (1, 0, 2), 90),
                   {"success": True})  # fmt: skip


@settings(max_examples=30, deadline=None)
@given(seed=st.integers(0, 10_000))
def test_dict_round_trip_through_arrow(seed):
    ep = _episode(seed)
    d = ep.to_dict()
    # Every field shares one schema: a table of several episodes is built without type conflicts.
    table = pa.Table.from_pylist([d, _episode(seed + 1).to_dict()])
    back = Episode.from_dict(table.to_pylist()[0])
    for name in ep.timeline.fields:
        np.testing.assert_array_equal(back.timeline.field(name), ep.timeline.field(name))
        assert back.timeline.field(name).dtype == ep.timeline.field(name).dtype
    np.testing.assert_array_equal(back.steps.pose, ep.steps.pose)
    assert back.events == ep.events and back.regions == ep.regions and back.frame == ep.frame
    assert json.dumps(back.to_dict(), sort_keys=True) == json.dumps(d, sort_keys=True)


def test_event_ordinals_count_per_kind_and_entity_type():
    types = ["Fridge", "Drawer", "Drawer"]
    raw = [(5, "open", 1, -1), (2, "open", 1, -1), (3, "open", 2, -1), (4, "close", 1, -1), (6, "open", 0, -1)]
    evs = number_events(raw, types)
    assert [(e.t, e.entity, e.ordinal) for e in evs if e.kind == "open"] == [(2, 1, 1), (3, 2, 2), (5, 1, 3), (6, 0, 1)]
    assert Event(4, "close", 1, -1, 1) in evs


def test_a_loop_is_one_pose_arrived_at_five_separate_times():
    a, b, c = [0, 0.9, 0, 0, 0], [0.25, 0.9, 0, 0, 0], [0.25, 0.9, 0, 90, 0]
    assert looped_poses(np.array([a, b] * 5)) == 2  # both poses arrived at five times
    assert looped_poses(np.array([a] * 20)) == 0  # standing still is one arrival
    assert looped_poses(np.array([a, b, a, b])) == 0  # turning away and back is no loop
    assert looped_poses(np.array([a, b, c, b] * 4)) == 1  # b eight times, a and c four
    assert looped_poses(np.zeros((0, 5))) == 0
