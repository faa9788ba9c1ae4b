"""Embedded houses: seeded multi-room floor plans with HM3D-like semantics, no download needed.

A house is a rectangle of 9-20 m per side on a 0.1 m grid, cut into 4-10 rooms by repeated splits;
walls are 0.2 m thick. Room adjacency is a small graph (networkx): a random spanning tree of it gets a
doorway each, so every room is reachable, and a few extra doorways make loops so that shortest paths
have choices. Rooms get HM3D region categories (the largest the living room, narrow ones hallways,
small ones bathrooms or closets, ...) and furniture from per-category tables, placed against walls or
free-standing, away from doorways. Navigable cells are the free floor eroded by the agent's radius
(0.1 m), as a navmesh is. Everything is drawn from ``derive_rng(seed, "house", index)``.
"""

from __future__ import annotations

from dataclasses import dataclass

import networkx as nx
import numpy as np
from scipy import ndimage

from eqagen.core import derive_rng
from eqagen.generators.navigation.grid import NavGrid
from eqagen.generators.navigation.palette import COLORS
from eqagen.generators.navigation.scene import NavScene, SceneObject, SceneRegion

MPP = 0.1  # metres per grid cell
WALL = 2  # wall thickness in cells (each room draws its own 1-cell boundary)
AGENT_RADIUS_CELLS = 1

# category -> (width, depth, height) in metres, before jitter
SIZES: dict[str, tuple[float, float, float]] = {
    "bed": (1.6, 2.0, 0.6),
    "nightstand": (0.5, 0.4, 0.6),
    "wardrobe": (1.2, 0.6, 2.0),
    "dresser": (1.0, 0.5, 0.9),
    "sofa": (2.0, 0.9, 0.8),
    "armchair": (0.8, 0.8, 0.9),
    "coffee table": (1.0, 0.6, 0.45),
    "tv stand": (1.4, 0.45, 0.5),
    "bookshelf": (0.9, 0.35, 1.8),
    "plant": (0.4, 0.4, 1.0),
    "refrigerator": (0.8, 0.7, 1.8),
    "stove": (0.7, 0.6, 0.9),
    "kitchen counter": (1.8, 0.6, 0.9),
    "kitchen cabinet": (1.0, 0.6, 0.9),
    "sink": (0.6, 0.5, 0.9),
    "dining table": (1.6, 0.9, 0.75),
    "chair": (0.5, 0.5, 0.9),
    "toilet": (0.45, 0.7, 0.8),
    "bathtub": (1.6, 0.75, 0.6),
    "shower": (0.9, 0.9, 2.0),
    "towel rack": (0.6, 0.3, 1.0),
    "desk": (1.2, 0.6, 0.75),
    "office chair": (0.6, 0.6, 1.0),
    "washing machine": (0.6, 0.6, 0.85),
    "dryer": (0.6, 0.6, 0.85),
    "laundry basket": (0.5, 0.4, 0.5),
    "shoe rack": (0.8, 0.3, 0.5),
    "cabinet": (0.8, 0.45, 1.0),
    "lamp": (0.4, 0.4, 1.5),
    "piano": (1.5, 0.6, 1.2),
}
# region category -> (always, sometimes) object categories
FURNITURE: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "living room": (
        ("sofa", "coffee table", "tv stand"),
        ("armchair", "plant", "bookshelf", "lamp", "piano", "cabinet"),
    ),
    "bedroom": (("bed", "nightstand"), ("wardrobe", "dresser", "lamp", "chair", "plant", "nightstand")),
    "kitchen": (("refrigerator", "stove", "kitchen counter"), ("sink", "kitchen cabinet", "chair", "plant")),
    "dining room": (("dining table", "chair", "chair"), ("chair", "chair", "cabinet", "plant", "lamp")),
    "bathroom": (("toilet", "sink"), ("bathtub", "shower", "towel rack", "cabinet")),
    "office": (("desk", "office chair"), ("bookshelf", "lamp", "plant", "cabinet")),
    "hallway": ((), ("plant", "shoe rack", "cabinet", "lamp")),
    "laundry room": (("washing machine",), ("dryer", "laundry basket", "cabinet")),
    "closet": ((), ("cabinet", "shoe rack")),
}


@dataclass
class Room:
    r0: int
    c0: int
    r1: int
    c1: int  # cell box [r0, r1) x [c0, c1), boundary cells are walls
    category: str = ""

    @property
    def size(self) -> tuple[int, int]:
        return self.r1 - self.r0, self.c1 - self.c0


def make_house(seed: int, index: int, shape: tuple[int, int] | None = None) -> NavScene:
    """House ``index`` of the seeded family (deterministic: same seed and index, same house).
    ``shape`` fixes the grid size in cells (else 90-200 per side, drawn)."""
    rng = derive_rng(seed, "house", index)
    h, w = (int(v) for v in rng.integers(90, 201, size=2))
    if shape is not None:
        h, w = shape
    rooms = split_rooms(rng, h, w, n_rooms=int(rng.integers(4, 11)))
    name_rooms(rng, rooms)
    solid = np.ones((h, w), dtype=bool)
    for r in rooms:
        solid[r.r0 + 1 : r.r1 - 1, r.c0 + 1 : r.c1 - 1] = False
    doors = cut_doorways(rng, rooms, solid)
    walls = solid.copy()
    region_map = np.full((h, w), -1, dtype=np.int32)
    for i, r in enumerate(rooms):
        region_map[r.r0 + 1 : r.r1 - 1, r.c0 + 1 : r.c1 - 1] = i
    keep_clear = ndimage.binary_dilation(doors, iterations=8)
    objects = furnish(rng, rooms, solid, keep_clear)
    navigable = ndimage.binary_erosion(~solid, structure=np.ones((3, 3)), iterations=AGENT_RADIUS_CELLS)
    regions = [SceneRegion(f"region_{i}", r.category, room_box(r)) for i, r in enumerate(rooms)]
    grid = NavGrid(navigable, MPP, (0.0, 0.0), 0.0)
    return NavScene(f"house-{index:05d}", grid, objects, regions, region_map, ~walls)


def split_rooms(rng: np.random.Generator, h: int, w: int, n_rooms: int) -> list[Room]:
    """Repeatedly split the largest splittable room across its longer side."""
    rooms = [Room(0, 0, h, w)]
    min_side = 26  # 2.6 m
    for _ in range(n_rooms - 1):
        order = sorted(range(len(rooms)), key=lambda i: -(rooms[i].size[0] * rooms[i].size[1]))
        for i in order:
            r = rooms[i]
            rows, cols = r.size
            along_rows = rows > cols if rows != cols else bool(rng.integers(2))
            side = rows if along_rows else cols
            if side < 2 * min_side:
                continue
            cut = int(rng.integers(min_side, side - min_side + 1))
            if along_rows:
                a, b = Room(r.r0, r.c0, r.r0 + cut, r.c1), Room(r.r0 + cut, r.c0, r.r1, r.c1)
            else:
                a, b = Room(r.r0, r.c0, r.r1, r.c0 + cut), Room(r.r0, r.c0 + cut, r.r1, r.c1)
            rooms[i : i + 1] = [a, b]
            break
    return rooms


def name_rooms(rng: np.random.Generator, rooms: list[Room]) -> None:
    """HM3D region categories by size and shape: the largest room is the living room, narrow ones
    hallways (at most a third of the rooms, never one of the first four), the others kitchen, bedroom,
    bathroom, then a shuffled mix; so every house has a living room, kitchen, bedroom and bathroom."""
    order = sorted(range(len(rooms)), key=lambda i: -(rooms[i].size[0] * rooms[i].size[1]))
    extra = ["bedroom", "dining room", "office", "bedroom", "laundry room", "closet", "bathroom"]
    wanted = iter(["kitchen", "bedroom", "bathroom"] + [str(c) for c in rng.permutation(extra)])
    hallways_left = min(len(rooms) - 4, len(rooms) // 3)
    rooms[order[0]].category = "living room"
    for i in order[1:]:
        rows, cols = rooms[i].size
        narrow = min(rows, cols) <= 32 and max(rows, cols) >= 2.5 * min(rows, cols)
        if narrow and hallways_left > 0:
            rooms[i].category, hallways_left = "hallway", hallways_left - 1
        else:
            rooms[i].category = next(wanted)


def shared_wall(a: Room, b: Room) -> tuple[str, int, int, int] | None:
    """('v', col_a_last, lo, hi) or ('h', row_a_last, lo, hi) for rooms that touch along a side."""
    for first, second in ((a, b), (b, a)):
        if first.c1 == second.c0:
            lo, hi = max(first.r0, second.r0) + 3, min(first.r1, second.r1) - 3
            if hi - lo >= 12:
                return ("v", first.c1 - 1, lo, hi)
        if first.r1 == second.r0:
            lo, hi = max(first.c0, second.c0) + 3, min(first.c1, second.c1) - 3
            if hi - lo >= 12:
                return ("h", first.r1 - 1, lo, hi)
    return None


def cut_doorways(rng: np.random.Generator, rooms: list[Room], solid: np.ndarray) -> np.ndarray:
    """Doorways (0.9-1.2 m) on a random spanning tree of the room graph plus a few loops."""
    graph = nx.Graph()
    graph.add_nodes_from(range(len(rooms)))
    for i in range(len(rooms)):
        for j in range(i + 1, len(rooms)):
            wall = shared_wall(rooms[i], rooms[j])
            if wall is not None:
                graph.add_edge(i, j, weight=float(rng.random()), wall=wall)
    tree = nx.minimum_spanning_tree(graph, weight="weight")
    chosen = [(i, j) for i, j in graph.edges if tree.has_edge(i, j) or rng.random() < 0.25]
    doors = np.zeros_like(solid)
    for i, j in sorted(chosen):
        axis, line, lo, hi = graph.edges[i, j]["wall"]
        width = int(min(rng.integers(9, 13), hi - lo))
        start = int(rng.integers(lo, hi - width + 1))
        if axis == "v":
            doors[start : start + width, line : line + WALL] = True
        else:
            doors[line : line + WALL, start : start + width] = True
    solid &= ~doors
    return doors


def room_box(r: Room) -> tuple[float, float, float, float, float, float]:
    return ((r.c0 + 1) * MPP, 0.0, (r.r0 + 1) * MPP, (r.c1 - 1) * MPP, 2.6, (r.r1 - 1) * MPP)


def furnish(
    rng: np.random.Generator, rooms: list[Room], solid: np.ndarray, keep_clear: np.ndarray
) -> list[SceneObject]:
    """Place each room's furniture (marking it solid); pieces that do not fit are skipped."""
    objects: list[SceneObject] = []
    furniture = np.zeros_like(solid)
    for region, room in enumerate(rooms):
        always, sometimes = FURNITURE[room.category]
        n_extra = int(rng.integers(1, len(sometimes) + 1)) if sometimes else 0
        wanted = list(always) + [sometimes[i] for i in rng.choice(len(sometimes), n_extra, replace=False)]
        for category in wanted:
            box = place(rng, room, SIZES[category], solid | keep_clear, furniture)
            if box is None:
                continue
            r0, c0, r1, c1, height = box
            solid[r0:r1, c0:c1] = furniture[r0:r1, c0:c1] = True
            native = (c0 * MPP, 0.0, r0 * MPP, c1 * MPP, height, r1 * MPP)
            objects.append(SceneObject(len(objects) + 1, category, region, native, str(rng.choice(COLORS))))
    return objects


def place(
    rng: np.random.Generator, room: Room, size: tuple[float, float, float], taken: np.ndarray, furniture: np.ndarray
) -> tuple[int, int, int, int, float] | None:
    """A free spot for a box, mostly against a wall, at least 0.6 m from other furniture (so passages
    stay open); None after 30 tries."""
    jitter = rng.uniform(0.85, 1.15, size=3)
    width = max(2, round(size[0] * jitter[0] / MPP))
    depth = max(2, round(size[1] * jitter[1] / MPP))
    for _ in range(30):
        dr, dc = (width, depth) if rng.integers(2) else (depth, width)
        lo_r, hi_r, lo_c, hi_c = room.r0 + 1, room.r1 - 1 - dr, room.c0 + 1, room.c1 - 1 - dc
        if hi_r <= lo_r or hi_c <= lo_c:
            continue
        r0, c0 = int(rng.integers(lo_r, hi_r + 1)), int(rng.integers(lo_c, hi_c + 1))
        wall = int(rng.integers(5))  # 0-3: against one of the four walls; 4: free-standing
        r0 = {0: lo_r, 1: hi_r}.get(wall, r0)
        c0 = {2: lo_c, 3: hi_c}.get(wall, c0)
        near = furniture[max(r0 - 6, 0) : r0 + dr + 6, max(c0 - 6, 0) : c0 + dc + 6]
        if taken[r0 : r0 + dr, c0 : c0 + dc].any() or near.any():
            continue
        return r0, c0, r0 + dr, c0 + dc, float(size[2] * jitter[2])
    return None
