"""The explorer: MineRL actions whose effects match the recorded poses; visibility by cone and sight line."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.core import derive_rng
from eqagen.generators.blockworld.embedded import generate_world
from eqagen.generators.blockworld.explorer import ACTION_KEYS, explore
from eqagen.generators.blockworld.navigation import standable_mask
from eqagen.generators.blockworld.palette import Palette
from eqagen.generators.blockworld.visibility import EYE_HEIGHT, ViewParams, visible_points
from eqagen.generators.blockworld.world import BIOMES, BlockWorld

_FORWARD = {0.0: (0, 1), 90.0: (-1, 0), 180.0: (0, -1), 270.0: (1, 0)}  # Minecraft yaw -> (dx, dz)


def _expected_step(yaw: float, action: dict) -> tuple[int, int]:
    fx, fz = _FORWARD[yaw % 360.0]
    # the player's right: facing south (+z) it is west (-x)
    right = {0.0: (-1, 0), 90.0: (0, -1), 180.0: (1, 0), 270.0: (0, 1)}[yaw % 360.0]
    dx = action["forward"] * fx - action["back"] * fx + action["right"] * right[0] - action["left"] * right[0]
    dz = action["forward"] * fz - action["back"] * fz + action["right"] * right[1] - action["left"] * right[1]
    return dx, dz


@settings(max_examples=12, deadline=None)
@given(st.sampled_from(BIOMES), st.integers(0, 10**6))
def test_actions_explain_the_poses(biome, seed):
    world = generate_world(biome, seed)
    walk = explore(world, derive_rng(seed, "test-walk"))
    stand = standable_mask(world)
    assert walk.actions[0] == "Initialize" and len(walk) > 20
    assert min(walk.pitch) == 0.0 and max(walk.pitch) > 0.0 and min(walk.pitch) >= -90.0
    feet, yaw = np.asarray(walk.feet), np.asarray(walk.yaw)
    for t in range(1, len(walk)):
        a = walk.args[t]
        assert set(ACTION_KEYS) <= set(a) and len(a["camera"]) == 2
        assert yaw[t] == pytest.approx((yaw[t - 1] + a["camera"][1]) % 360.0)
        assert walk.pitch[t] == pytest.approx(walk.pitch[t - 1] + a["camera"][0])
        dx, dz = _expected_step(yaw[t - 1], a)
        step = feet[t] - feet[t - 1]
        assert (step[0], step[2]) == (dx, dz), (t, walk.actions[t])
        assert abs(step[1]) <= 3 and (step[1] <= 0 or a["jump"] == 1)
        x, y, z = (int(np.floor(v)) for v in feet[t])
        assert stand[x, y, z], "the player always stands on a floor with headroom"
        ls = a["location_stats"]
        native = np.asarray(world.origin) + feet[t]
        assert (ls["xpos"], ls["ypos"], ls["zpos"], ls["yaw"]) == pytest.approx((*native, yaw[t]))


def test_walk_visits_every_enterable_structure():
    for seed in range(4):
        world = generate_world("town", seed)
        walk = explore(world, derive_rng(seed, "w"))
        feet = np.asarray(walk.feet)
        for s in world.structures:
            if s.enterable:
                assert s.contains(feet + np.array([0, 0.1, 0])).any(), s.structure_id


def _box_world() -> BlockWorld:
    """A 20x8x20 stone floor with a wall at x=10 (z 0..19, y 1..5)."""
    p = Palette()
    blocks = np.zeros((20, 8, 20), np.uint16)
    blocks[:, 0, :] = p.id("minecraft:stone")
    blocks[10, 1:6, :] = p.id("minecraft:stone")
    return BlockWorld("box", "plains", blocks, p)


def test_line_of_sight_blocked_by_a_wall_and_cone():
    w = _box_world()
    occ = ~w.palette.see_through_table()[w.blocks]
    feet = np.array([[5.5, 1.0, 5.5]] * 4)
    yaw = np.array([270.0, 270.0, 90.0, 0.0])  # east, east, west, south
    pitch = np.zeros(4)
    points = np.array([[15.5, 1.5, 5.5], [8.5, 1.5, 5.5], [2.5, 1.5, 5.5]])
    vis = visible_points(occ, feet, yaw, pitch, points)
    assert vis.tolist() == [
        [False, True, False],  # facing east: the far point is behind the wall, the near one seen
        [False, True, False],
        [False, False, True],  # facing west: only the point to the west
        [False, False, False],  # facing south: none in the cone
    ]


def _slow_visible(occ, foot, yaw, pitch, point, params):
    eye = foot + np.array([0, EYE_HEIGHT, 0])
    d = point - eye
    dist = np.linalg.norm(d)
    if dist >= 1.0:
        f = np.array([-np.sin(np.radians(yaw)), 0.0, np.cos(np.radians(yaw))])
        r = np.array([-np.cos(np.radians(yaw)), 0.0, -np.sin(np.radians(yaw))])
        h = np.degrees(np.arctan2(d @ r, d @ f))
        v = np.degrees(np.arctan2(-d[1], np.hypot(d @ f, d @ r))) - pitch
        if dist > params.max_distance or abs(h) > params.half_fov_h or abs(v) > params.half_fov_v:
            return False
    n = max(int(np.ceil((dist - params.end_margin) / params.sample_step)), 0)
    for k in range(n):
        p = np.floor(eye + d * (k + 0.5) * params.sample_step / dist).astype(int)
        if all(0 <= p[i] < occ.shape[i] for i in range(3)) and occ[tuple(p)]:
            return False
    return True


def test_vectorised_visibility_matches_a_loop():
    params = ViewParams()
    for seed in range(3):
        w = generate_world("plains", seed)
        occ = ~w.palette.see_through_table()[w.blocks]
        walk = explore(w, derive_rng(seed, "v"))
        feet, yaw, pitch = np.asarray(walk.feet), np.asarray(walk.yaw), np.asarray(walk.pitch)
        rng = np.random.default_rng(seed)
        points = rng.uniform([0, 5, 0], [60, 12, 60], size=(40, 3))
        vis = visible_points(occ, feet, yaw, pitch, points, params)
        for t in rng.choice(len(feet), 25, replace=False):
            for i in range(len(points)):
                assert vis[t, i] == _slow_visible(occ, feet[t], yaw[t], pitch[t], points[i], params)
