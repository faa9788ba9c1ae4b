import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.core import Timeline, TimelineRecorder


def _random_dense(rng: np.random.Generator, T: int, N: int) -> dict[str, np.ndarray]:
    # Sparse changes, as in a real episode: each row copies the previous and flips a few cells.
    pos = np.zeros((T, N, 3), np.float32)
    vis = np.zeros((T, N), bool)
    parent = np.full((T, N), -1, np.int32)
    pos[0] = rng.normal(size=(N, 3))
    for t in range(1, T):
        pos[t], vis[t], parent[t] = pos[t - 1], vis[t - 1], parent[t - 1]
        k = rng.integers(0, N)
        pos[t, k] += rng.normal(size=3).astype(np.float32) * (rng.random() < 0.3)
        vis[t] = rng.random(N) < 0.5
        parent[t, k] = rng.integers(-1, N)
    return {"position": pos, "visible": vis, "parent": parent}


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), T=st.integers(1, 40), N=st.integers(1, 12))
def test_rebuilt_timeline_equals_recorded(seed, T, N):
    dense = _random_dense(np.random.default_rng(seed), T, N)
    rec = TimelineRecorder(T, {k: v[0] for k, v in dense.items()})
    for t in range(T):
        rec.record({k: v[t] for k, v in dense.items()})
    tl = rec.finish()
    for name, arr in dense.items():
        np.testing.assert_array_equal(tl.field(name), arr)
    assert tl.n_changes() <= sum(int((v[1:] != v[:-1]).sum()) for v in dense.values())


def test_changes_are_only_the_differences():
    vis = np.array([[0, 0], [1, 0], [1, 0], [0, 1]], bool)
    tl = Timeline.from_dense({"visible": vis})
    c = tl.changes["visible"]
    assert c.t.tolist() == [1, 3, 3] and c.entity.tolist() == [0, 0, 1]
    assert c.value.tolist() == [True, False, True]
    assert not tl.field("visible").flags.writeable
