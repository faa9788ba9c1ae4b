"""Boxes around entities, and the units they form: what the above/under relation reads.

A world family may declare ``extent`` in its params: a function of an entity type returning
``(width, bottom, top, mount)`` -- the side of its square footprint (x-z), its box's bottom and top relative to
its position's height, and what holds it up (``floor``, ``wall``, ``fixed``: part of or fixed to the furniture
under or around it, ``loose``: rests in a receptacle or is carried) -- or None for a type it does not know. A
family without one has point boxes.

A *unit* is a piece of furniture (or anything standing on the floor or hung on a wall) with the parts fixed to
it and everything resting in or on it, at each step: a desk, its drawers, the lamp and the books on it. Above
and under are read between units only: the furniture a drawer belongs to is not "above" the drawer.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

HOST_REACH = 0.25  # m: a fixed part's bottom within this of a floor piece's top still sits on it (a microwave)
# m: how far beyond a floor piece's nominal (per-type) footprint a part may stand and still belong to it: a
# counter is 1.5 to 2.5 m long in the embedded homes (and longer in AI2-THOR's kitchens) and its type's
# footprint 1.5 m square, so a sink at its end lies outside that square
HOST_SLACK = 0.5
MAX_DEPTH = 8  # receptacle chains are short (a spoon in a mug in a cabinet); a cycle stops here

Extent = Callable[[str], "tuple[float, float, float, str] | None"]


def entity_boxes(
    type_names: np.ndarray, type_code: np.ndarray, extent: Extent | None
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """``(half_width, bottom, top, mount)``, each ``[N]``, for entities of types ``type_names[type_code]``
    (points, ``loose``, where unknown): one lookup per type, not per entity."""
    unknown = (0.0, 0.0, 0.0, "loose")
    boxes = [(extent(t) if extent else None) or unknown for t in type_names.tolist()]
    width, bottom, top = (np.array([box[i] for box in boxes], dtype=np.float64) for i in range(3))
    mount = np.array([box[3] for box in boxes], dtype=object)
    return (width / 2)[type_code], bottom[type_code], top[type_code], mount[type_code]


def fixed_hosts(
    position: np.ndarray, half: np.ndarray, bottom: np.ndarray, top: np.ndarray, mount: np.ndarray
) -> np.ndarray:
    """``[N]`` the floor piece each ``fixed`` part belongs to (itself for the others, or where none holds it):
    the nearest (horizontally) whose footprint, grown by ``HOST_SLACK``, holds the part's position and whose
    box the part's box meets or sits on (its bottom at most ``HOST_REACH`` above the piece's top).
    ``position`` is ``[N, 3]``."""
    host = np.arange(len(half))
    floor = np.flatnonzero(mount == "floor")
    parts = np.flatnonzero(mount == "fixed")
    if not floor.size or not parts.size:
        return host
    d = position[parts, None, :] - position[None, floor, :]  # [P, F, 3]
    reach = half[floor] + HOST_SLACK
    inside = (np.abs(d[..., 0]) <= reach) & (np.abs(d[..., 2]) <= reach)
    part_bottom = (position[parts, 1] + bottom[parts])[:, None]
    part_top = (position[parts, 1] + top[parts])[:, None]
    piece_bottom, piece_top = position[floor, 1] + bottom[floor], position[floor, 1] + top[floor]
    meets = (part_bottom <= piece_top + HOST_REACH) & (part_top >= piece_bottom)
    ok = inside & meets
    dist = np.where(ok, np.hypot(d[..., 0], d[..., 2]), np.inf)
    found = ok.any(axis=1)
    host[parts[found]] = floor[dist[found].argmin(axis=1)]
    return host


def enclosed_parts(position: np.ndarray, bottom: np.ndarray, top: np.ndarray, host: np.ndarray) -> np.ndarray:
    """``[N]`` the fixed parts whose box lies within their host's height (a drawer in a desk, a cabinet under a
    counter, a stove knob on its front): seen from above or below, they are behind the furniture's own top or
    underside, so what is over the counter is over the counter, not over the cabinet in it."""
    own = host != np.arange(len(host))
    low = position[:, 1] + bottom >= position[host, 1] + bottom[host]
    high = position[:, 1] + top <= position[host, 1] + top[host]
    return own & low & high


def units(parent: np.ndarray, host: np.ndarray) -> np.ndarray:
    """``[T, N]`` each entity's unit at each step: up its receptacle chain to the top, then to that one's host.
    Followed once per run of steps with the same receptacles (they change only when something is picked up or
    put down)."""
    if not len(parent):
        return host[parent]
    changed = np.r_[True, (parent[1:] != parent[:-1]).any(axis=1)]  # [T]: a step starting a run
    distinct = parent[changed]  # [K, N]
    k, n = distinct.shape
    root = np.broadcast_to(np.arange(n), distinct.shape).copy()
    row_base = (np.arange(k) * n)[:, None]  # distinct[r, root] read by flat index: cheaper than [rows, root]
    flat = distinct.reshape(-1)
    for _ in range(MAX_DEPTH):
        up = flat[row_base + root]
        held = up >= 0
        if not held.any():
            break
        root = np.where(held, up, root)
    return host[root][np.cumsum(changed) - 1]
