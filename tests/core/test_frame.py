import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqagen.core import FrameTransform, to_egocentric

coords = st.floats(-50, 50, allow_nan=False)


@pytest.mark.parametrize("native", ["ai2thor", "habitat", "minecraft"])
@given(ox=coords, oy=coords, oz=coords, yaw0=st.floats(0, 360), px=coords, py=coords, pz=coords)
def test_native_round_trip(native, ox, oy, oz, yaw0, px, py, pz):
    fr = FrameTransform(native, (ox, oy, oz), yaw0)
    p = np.array([px, py, pz])
    np.testing.assert_allclose(fr.to_native(fr.to_episode(p)), p, atol=1e-9)
    assert fr.yaw_to_native(fr.yaw_to_episode(yaw0 + 30)) == pytest.approx((yaw0 + 30) % 360, abs=1e-9)


def test_start_pose_becomes_origin_facing_plus_z_ai2thor():
    # Agent at (1, 0.9, 2) facing native +x (yaw 90): a point 1 m ahead natively is (2, 0.9, 2).
    fr = FrameTransform("ai2thor", (1.0, 0.9, 2.0), 90.0)
    np.testing.assert_allclose(fr.to_episode([1.0, 0.9, 2.0]), [0, 0, 0], atol=1e-12)
    np.testing.assert_allclose(fr.to_episode([2.0, 0.9, 2.0]), [0, 0, 1], atol=1e-12)
    # Its right in Unity is native -z when facing +x.
    np.testing.assert_allclose(fr.to_episode([1.0, 0.9, 1.0]), [1, 0, 0], atol=1e-12)
    assert fr.yaw_to_episode(90.0) == pytest.approx(0.0)
    assert fr.yaw_to_episode(180.0) == pytest.approx(90.0)


def test_habitat_agent_faces_minus_z_and_turns_counter_clockwise():
    fr = FrameTransform("habitat", (0.0, 0.0, 0.0), 0.0)
    np.testing.assert_allclose(fr.to_episode([0, 0, -1]), [0, 0, 1], atol=1e-12)  # ahead
    np.testing.assert_allclose(fr.to_episode([1, 0, 0]), [1, 0, 0], atol=1e-12)  # right
    # habitat yaw +90 is a left turn: episode yaw 270.
    assert fr.yaw_to_episode(90.0) == pytest.approx(270.0)


def test_minecraft_south_is_ahead_and_west_is_right():
    fr = FrameTransform("minecraft", (0.0, 64.0, 0.0), 0.0)
    np.testing.assert_allclose(fr.to_episode([0, 64, 1]), [0, 0, 1], atol=1e-12)
    np.testing.assert_allclose(fr.to_episode([-1, 64, 0]), [1, 0, 0], atol=1e-12)
    assert fr.yaw_to_episode(90.0) == pytest.approx(90.0)  # yaw 90 faces west, to the right


def test_egocentric_right_and_forward():
    ego = to_egocentric(np.array([[1.0, 0, 0], [0, 0, -1.0]]), np.zeros(3), 90.0)
    np.testing.assert_allclose(ego, [[0, 0, 1], [1, 0, 0]], atol=1e-12)
