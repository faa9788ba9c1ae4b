"""The episode frame and the conversion from each simulator's native frame.

Episode frame: the agent stands at the origin at its first observation, y up, metres, facing +z, with
+x to its right (so it is left-handed, like Unity). Yaw is in degrees, clockwise seen from above
(yaw 90 faces +x); pitch in degrees, positive looking down (AI2-THOR's camera horizon).

Each native frame is first mapped to a "canonical" frame with the same axes as the episode frame
(x right, y up, z forward at native yaw 0), then rotated and translated so the agent's start pose
becomes the origin facing +z:

| native    | handedness              | forward at yaw 0 | canonical (x, y, z)  | canonical yaw   |
|-----------|-------------------------|------------------|----------------------|-----------------|
| ai2thor   | left (Unity), y up      | +z, right +x     | (x, y, z)            | yaw             |
| habitat   | right, y up             | -z, right +x     | (x, y, -z)           | -yaw (ccw)      |
| minecraft | right, y up (x east)    | +z (south)       | (-x, y, z)           | yaw             |
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

# Per native frame: sign applied to (x, z) to reach the canonical frame, and the sign of yaw.
_NATIVE_AXES: dict[str, tuple[float, float, float]] = {
    "ai2thor": (1.0, 1.0, 1.0),
    "habitat": (1.0, -1.0, -1.0),
    "minecraft": (-1.0, 1.0, 1.0),
    "episode": (1.0, 1.0, 1.0),
}


@dataclass(frozen=True)
class FrameTransform:
    """Maps native coordinates to the episode frame and back.

    ``origin`` is the agent's native position at t=0; ``yaw0`` its native yaw there (degrees).
    """

    native: str = "episode"
    origin: tuple[float, float, float] = (0.0, 0.0, 0.0)
    yaw0: float = 0.0

    def __post_init__(self) -> None:
        if self.native not in _NATIVE_AXES:
            raise ValueError(f"unknown native frame '{self.native}'; known: {sorted(_NATIVE_AXES)}")

    @property
    def _signs(self) -> tuple[float, float, float]:
        return _NATIVE_AXES[self.native]

    @property
    def _canonical_yaw0(self) -> float:
        return self._signs[2] * self.yaw0

    def to_episode(self, points: np.ndarray) -> np.ndarray:
        """Native points ``(..., 3)`` to episode-frame points (float64)."""
        sx, sz, _ = self._signs
        p = np.asarray(points, dtype=np.float64) - np.asarray(self.origin, dtype=np.float64)
        cx, cy, cz = sx * p[..., 0], p[..., 1], sz * p[..., 2]
        phi = np.deg2rad(self._canonical_yaw0)
        c, s = np.cos(phi), np.sin(phi)
        return np.stack([cx * c - cz * s, cy, cz * c + cx * s], axis=-1)

    def to_native(self, points: np.ndarray) -> np.ndarray:
        """Episode-frame points ``(..., 3)`` back to native coordinates (float64)."""
        sx, sz, _ = self._signs
        p = np.asarray(points, dtype=np.float64)
        phi = np.deg2rad(self._canonical_yaw0)
        c, s = np.cos(phi), np.sin(phi)
        cx = p[..., 0] * c + p[..., 2] * s
        cz = p[..., 2] * c - p[..., 0] * s
        native = np.stack([sx * cx, p[..., 1], sz * cz], axis=-1)
        return native + np.asarray(self.origin, dtype=np.float64)

    def yaw_to_episode(self, yaw: np.ndarray | float) -> np.ndarray | float:
        """Native yaw (degrees) to episode yaw in [0, 360)."""
        return np.mod(self._signs[2] * np.asarray(yaw, dtype=np.float64) - self._canonical_yaw0, 360.0)

    def yaw_to_native(self, yaw: np.ndarray | float) -> np.ndarray | float:
        """Episode yaw (degrees) to native yaw in [0, 360)."""
        return np.mod(self._signs[2] * (np.asarray(yaw, dtype=np.float64) + self._canonical_yaw0), 360.0)

    def to_dict(self) -> dict:
        return {"native": self.native, "origin": list(map(float, self.origin)), "yaw0": float(self.yaw0)}

    @classmethod
    def from_dict(cls, d: dict) -> FrameTransform:
        return cls(native=d["native"], origin=tuple(d["origin"]), yaw0=float(d["yaw0"]))


def heading_vector(yaw_deg: np.ndarray | float) -> np.ndarray:
    """Unit forward vector(s) in the (x, z) plane for yaw(s) in the episode frame: ``(..., 2)``."""
    r = np.deg2rad(np.asarray(yaw_deg, dtype=np.float64))
    return np.stack([np.sin(r), np.cos(r)], axis=-1)


def to_egocentric(points: np.ndarray, agent_xyz: np.ndarray, agent_yaw: np.ndarray | float) -> np.ndarray:
    """Points in the agent's own frame: x right, y up, z forward (metres).

    ``points`` is ``(..., 3)``; ``agent_xyz`` and ``agent_yaw`` broadcast against its leading axes.
    """
    d = np.asarray(points, dtype=np.float64) - np.asarray(agent_xyz, dtype=np.float64)
    r = np.deg2rad(np.asarray(agent_yaw, dtype=np.float64))
    c, s = np.cos(r), np.sin(r)
    x, z = d[..., 0], d[..., 2]
    out = np.empty(np.broadcast_shapes(d.shape, (*np.shape(c), 3)))  # written in place: no stacking copy
    np.subtract(x * c, z * s, out=out[..., 0])
    out[..., 1] = d[..., 1]
    np.add(z * c, x * s, out=out[..., 2])
    return out
