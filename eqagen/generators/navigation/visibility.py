"""Which objects an agent sees from each pose: view cone, range and line of sight, vectorised.

An object is visible from a pose when the direction to its box centre lies within half the horizontal
field of view of the agent's heading (habitat's default camera has a 90 degree hfov), the nearest
point of its box is within range, and the straight line from the agent to that nearest point crosses
no wall (furniture does not hide furniture: the grid knows footprints, not heights). The check runs
over all ``[pose, object]`` pairs at once, sampling each sight line every half cell.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from eqagen.generators.navigation.actions import forward_vector
from eqagen.generators.navigation.grid import NavGrid


@dataclass(frozen=True)
class Camera:
    hfov_degrees: float = 90.0
    max_range: float = 5.0


def visible_objects(
    sight: NavGrid, positions: np.ndarray, yaws: np.ndarray, boxes: np.ndarray, camera: Camera
) -> np.ndarray:
    """bool ``[T, N]``: object ``n`` (native box ``[xmin, ymin, zmin, xmax, ymax, zmax]``) seen from pose
    ``t`` (native position and habitat yaw in degrees)."""
    t, n = len(positions), len(boxes)
    if t == 0 or n == 0:
        return np.zeros((t, n), dtype=bool)
    pos = np.asarray(positions, dtype=np.float64)[:, None, [0, 2]]  # [T, 1, 2] (x, z)
    lo, hi = boxes[None, :, [0, 2]], boxes[None, :, [3, 5]]
    nearest = np.clip(pos, lo, hi)  # [T, N, 2]
    center = (lo + hi) / 2.0
    fwd = forward_vector(np.asarray(yaws))[:, None, [0, 2]]
    to_center = center - pos
    dist_c = np.linalg.norm(to_center, axis=-1)
    cos_angle = (to_center * fwd).sum(-1) / np.maximum(dist_c, 1e-9)
    in_cone = (cos_angle >= np.cos(np.deg2rad(camera.hfov_degrees / 2.0))) | (dist_c < 1e-9)
    in_range = np.linalg.norm(nearest - pos, axis=-1) <= camera.max_range
    candidate = in_cone & in_range
    out = np.zeros((t, n), dtype=bool)
    ti, ni = np.nonzero(candidate)
    if len(ti):
        out[ti, ni] = lines_of_sight(sight, pos[ti, 0], nearest[ti, ni])
    return out


def lines_of_sight(sight: NavGrid, src_xz: np.ndarray, dst_xz: np.ndarray) -> np.ndarray:
    """Whether each sight line from ``src`` to ``dst`` (native x, z) stays off walls. The last 0.1 m is
    not checked, so an object standing against a wall is still seen."""
    m = sight.meters_per_pixel
    a = np.stack([(src_xz[:, 1] - sight.origin[1]) / m, (src_xz[:, 0] - sight.origin[0]) / m], axis=-1)
    b = np.stack([(dst_xz[:, 1] - sight.origin[1]) / m, (dst_xz[:, 0] - sight.origin[0]) / m], axis=-1)
    length = np.linalg.norm(b - a, axis=1)
    stop = np.clip(1.0 - 1.0 / np.maximum(length, 1e-9), 0.0, 1.0)  # one cell short of the object
    s = np.linspace(0.0, 1.0, int(np.ceil(2.0 * length.max())) + 2)
    pts = a[:, None, :] + (s[None, :] * stop[:, None])[:, :, None] * (b - a)[:, None, :]
    return sight.lookup(pts).all(axis=1)
