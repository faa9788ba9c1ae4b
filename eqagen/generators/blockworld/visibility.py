"""What the player sees: view cone plus line of sight through the voxel grid, vectorised over steps.

A point is visible at a step when it lies within ``max_distance`` of the eye (1.62 blocks above the
feet), inside the view cone (horizontal half-angle 50 degrees, vertical 35: Minecraft's default 70
degree field of view on a 16:9 screen) and no occluding block (anything not see-through: not air, glass,
plants, water) lies on the segment from the eye to it. The segment is sampled every half block; the
last ``end_margin`` blocks are the target's own and are not tested. Only (step, point) pairs inside the
cone are marched, so the cost grows with what is in view, not with everything.

Blocks seen are found by casting a fan of rays per step to the first occluding block.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

EYE_HEIGHT = 1.62


@dataclass(frozen=True)
class ViewParams:
    max_distance: float = 40.0
    half_fov_h: float = 50.0
    half_fov_v: float = 35.0
    sample_step: float = 0.5
    end_margin: float = 0.75


def view_directions(yaw_deg: np.ndarray, pitch_deg: np.ndarray) -> np.ndarray:
    """Unit view vectors ``[..., 3]`` in the voxel (Minecraft) frame: yaw 0 faces +z, 90 faces -x;
    positive pitch looks down."""
    yaw, pitch = np.deg2rad(yaw_deg), np.deg2rad(pitch_deg)
    return np.stack([-np.sin(yaw) * np.cos(pitch), -np.sin(pitch), np.cos(yaw) * np.cos(pitch)], axis=-1)


def in_view_cone(
    eyes: np.ndarray, yaw: np.ndarray, pitch: np.ndarray, points: np.ndarray, params: ViewParams
) -> tuple[np.ndarray, np.ndarray]:
    """(mask ``[T, P]`` of points inside the cone and range, distances ``[T, P]``)."""
    d = points[None, :, :] - eyes[:, None, :]
    dist = np.linalg.norm(d, axis=-1)
    yr = np.deg2rad(yaw)[:, None]
    forward = d[..., 2] * np.cos(yr) - d[..., 0] * np.sin(yr)
    right = -d[..., 0] * np.cos(yr) - d[..., 2] * np.sin(yr)
    h_angle = np.degrees(np.arctan2(right, forward))
    v_angle = np.degrees(np.arctan2(-d[..., 1], np.hypot(forward, right))) - pitch[:, None]
    ok = (dist <= params.max_distance) & (np.abs(h_angle) <= params.half_fov_h) & (np.abs(v_angle) <= params.half_fov_v)
    return ok | (dist < 1.0), dist


def line_of_sight(occluding: np.ndarray, eyes: np.ndarray, points: np.ndarray, params: ViewParams) -> np.ndarray:
    """For pairs ``eyes[i] -> points[i]`` (``[M, 3]`` each, voxel frame): True where nothing occludes."""
    if len(eyes) == 0:
        return np.zeros(0, dtype=bool)
    d = points - eyes
    dist = np.linalg.norm(d, axis=1)
    n = np.maximum(np.ceil((dist - params.end_margin) / params.sample_step).astype(np.int64), 0)
    pair = np.repeat(np.arange(len(eyes)), n)
    k = np.arange(n.sum()) - np.repeat(np.cumsum(n) - n, n)
    frac = (k + 0.5) * params.sample_step / np.maximum(dist[pair], 1e-9)
    samples = np.floor(eyes[pair] + d[pair] * frac[:, None]).astype(np.int32)
    shape = np.asarray(occluding.shape, dtype=np.int32)
    inside = np.all((samples >= 0) & (samples < shape), axis=1)
    flat = (samples[:, 0] * shape[1] + samples[:, 1]) * shape[2] + samples[:, 2]
    hit = inside & occluding.reshape(-1)[np.where(inside, flat, 0)]
    blocked = np.zeros(len(eyes), dtype=bool)
    np.logical_or.at(blocked, pair[hit], True)
    return ~blocked


def visible_points(
    occluding: np.ndarray,
    feet: np.ndarray,
    yaw: np.ndarray,
    pitch: np.ndarray,
    points: np.ndarray,
    params: ViewParams | None = None,
) -> np.ndarray:
    """``[T, P]`` visibility of points from the poses (feet positions in the voxel frame).

    Line of sight does not depend on where the player looks, so it is marched once per distinct
    (position, point) pair that is in view at some step from that position (turning on the spot is
    free)."""
    params = params or ViewParams()
    eyes = feet + np.array([0.0, EYE_HEIGHT, 0.0])
    cone, _ = in_view_cone(eyes, yaw, pitch, points, params)
    t_idx, p_idx = np.nonzero(cone)
    out = np.zeros(cone.shape, dtype=bool)
    if t_idx.size == 0:
        return out
    _, place = np.unique(eyes, axis=0, return_inverse=True)
    place = place.reshape(-1)
    pair = place[t_idx].astype(np.int64) * len(points) + p_idx
    uniq, back = np.unique(pair, return_inverse=True)
    first_t = t_idx[np.unique(back, return_index=True)[1]]
    seen = line_of_sight(occluding, eyes[first_t], points[uniq % len(points)], params)
    out[t_idx, p_idx] = seen[back.reshape(-1)]
    return out


def blocks_seen(
    occluding: np.ndarray,
    feet: np.ndarray,
    yaw: np.ndarray,
    pitch: np.ndarray,
    params: ViewParams | None = None,
    fan: tuple[int, int] = (5, 9),
    max_range: float = 32.0,
) -> np.ndarray:
    """Voxels ``[K, 3]`` (unique) hit first by a fan of rays from each pose."""
    params = params or ViewParams()
    dv = np.linspace(-params.half_fov_v, params.half_fov_v, fan[0])
    dh = np.linspace(-params.half_fov_h, params.half_fov_h, fan[1])
    ray_pitch = (pitch[:, None, None] + dv[None, :, None]) + 0 * dh[None, None, :]
    ray_yaw = yaw[:, None, None] - dh[None, None, :] + 0 * dv[None, :, None]
    dirs = view_directions(ray_yaw, ray_pitch).reshape(-1, 3)
    eyes = np.repeat(feet + np.array([0.0, EYE_HEIGHT, 0.0]), fan[0] * fan[1], axis=0)
    ts = np.arange(params.sample_step, max_range, params.sample_step)
    samples = np.floor(eyes[:, None, :] + dirs[:, None, :] * ts[None, :, None]).astype(np.int32)
    shape = np.asarray(occluding.shape, dtype=np.int32)
    inside = np.all((samples >= 0) & (samples < shape), axis=2)
    flat = (samples[..., 0] * shape[1] + samples[..., 1]) * shape[2] + samples[..., 2]
    hit = inside & occluding.reshape(-1)[np.where(inside, flat, 0)]
    any_hit = hit.any(axis=1)
    first = np.argmax(hit, axis=1)
    keys = np.unique(flat[np.flatnonzero(any_hit), first[any_hit]])
    return np.stack(np.unravel_index(keys, occluding.shape), axis=1) if keys.size else np.zeros((0, 3), np.int64)
