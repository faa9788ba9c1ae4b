"""Seeded procedural rooms of the four iTHOR room kinds.

A room is a rectangle on the 0.25 m grid. Furniture stands against the walls or in the middle and
blocks the floor cells under it; appliances and containers attach to their furniture (cabinets and
drawers under a counter, a microwave on it, a lamp on a desk); small objects rest in receptacles that
may hold them (ALFRED's compatibility table). The reachable positions are the free floor cells of
the largest connected area, and furniture nobody can reach is removed. Everything is drawn from one
generator derived from (seed, room kind, index), so a scene id always names the same room.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy import ndimage

from eqagen.core import derive_rng
from eqagen.generators.household.objects import Catalog, catalog
from eqagen.generators.household.scene import GRID_SIZE, ROOM_KINDS, HouseholdScene, SceneObject, make_object_id
from eqagen.generators.household.world import CAPACITY_BY_SIZE, RADIUS_BY_SIZE, rest_height, slot_offset

AGENT_Y = 0.9009997  # the agent's reported y on a floor at 0 (as in ALFRED's trajectories)
REACH = 1.0  # furniture must have a reachable cell within this horizontal distance


@dataclass(frozen=True)
class Furniture:
    """A piece against a wall or in the room: footprint in cells (width along the wall, depth), count range.

    Its position is its extent's pivot with the box standing on the floor (``data/object_extents.csv``);
    ``mount_y`` instead puts the position at that height (a shelf on a wall)."""

    object_type: str
    width: tuple[int, int]
    depth: tuple[int, int]
    count: tuple[int, int]
    center: bool = False  # stands in the middle of the room rather than against a wall
    mount_y: float | None = None


@dataclass(frozen=True)
class Attached:
    """Something fixed to a host piece of furniture: (type, host type, height, count range)."""

    object_type: str
    host: str
    height: float
    count: tuple[int, int]


F, A = Furniture, Attached
ROOM_FURNITURE: dict[str, list[Furniture]] = {
    "kitchen": [
        F("CounterTop", (6, 10), (2, 3), (2, 3)),
        F("Fridge", (3, 3), (3, 3), (1, 1)),
        F("DiningTable", (4, 6), (3, 4), (0, 1), center=True),
        F("GarbageCan", (1, 2), (1, 2), (1, 1)),
        F("Shelf", (2, 3), (1, 1), (0, 1), mount_y=1.2),
    ],
    "living_room": [
        F("Sofa", (6, 8), (3, 3), (1, 1)),
        F("ArmChair", (3, 3), (3, 3), (0, 2)),
        F("CoffeeTable", (4, 5), (2, 3), (1, 1), center=True),
        F("TVStand", (5, 6), (2, 2), (1, 1)),
        F("SideTable", (2, 2), (2, 2), (0, 2)),
        F("Dresser", (4, 5), (2, 2), (0, 1)),
        F("Shelf", (3, 4), (1, 1), (0, 2), mount_y=1.0),
        F("GarbageCan", (1, 2), (1, 2), (1, 1)),
        F("FloorLamp", (1, 1), (1, 1), (0, 1)),
        F("Ottoman", (2, 3), (2, 2), (0, 1), center=True),
        F("Safe", (2, 2), (2, 2), (0, 1)),
        F("DiningTable", (4, 5), (3, 3), (0, 1), center=True),
    ],
    "bedroom": [
        F("Bed", (6, 8), (7, 8), (1, 1)),
        F("Desk", (4, 5), (2, 3), (1, 1)),
        F("SideTable", (2, 2), (2, 2), (1, 2)),
        F("Dresser", (4, 5), (2, 2), (0, 1)),
        F("Shelf", (3, 4), (1, 1), (0, 2), mount_y=1.1),
        F("GarbageCan", (1, 2), (1, 2), (1, 1)),
        F("LaundryHamper", (2, 2), (2, 2), (0, 1)),
        F("FloorLamp", (1, 1), (1, 1), (0, 1)),
        F("ArmChair", (3, 3), (3, 3), (0, 1)),
        F("Safe", (2, 2), (2, 2), (0, 1)),
    ],
    "bathroom": [
        F("CounterTop", (4, 6), (2, 2), (1, 2)),
        F("Toilet", (2, 2), (3, 3), (1, 1)),
        F("BathtubBasin", (6, 7), (3, 3), (0, 1)),
        F("GarbageCan", (1, 1), (1, 1), (1, 1)),
        F("Shelf", (2, 3), (1, 1), (0, 1), mount_y=1.1),
    ],
}
ROOM_ATTACHED: dict[str, list[Attached]] = {
    "kitchen": [
        A("Cabinet", "CounterTop", 0.45, (1, 3)),
        A("Cabinet", "CounterTop", 1.85, (0, 2)),
        A("Drawer", "CounterTop", 0.8, (0, 2)),
        A("SinkBasin", "CounterTop", 0.88, (1, 1)),
        A("StoveBurner", "CounterTop", 0.95, (2, 4)),
        A("Microwave", "CounterTop", 1.05, (1, 1)),
        A("CoffeeMachine", "CounterTop", 1.0, (0, 1)),
        A("Toaster", "CounterTop", 1.0, (0, 1)),
        A("LightSwitch", "wall", 1.3, (1, 1)),
        A("HousePlant", "CounterTop", 1.0, (0, 1)),
    ],
    "living_room": [
        A("Television", "TVStand", 1.1, (1, 1)),
        A("Drawer", "Dresser", 0.6, (1, 3)),
        A("Drawer", "SideTable", 0.5, (0, 1)),
        A("LightSwitch", "wall", 1.3, (1, 1)),
        A("HousePlant", "SideTable", 0.8, (0, 1)),
    ],
    "bedroom": [
        A("DeskLamp", "Desk", 0.95, (1, 1)),
        A("Drawer", "Desk", 0.6, (0, 2)),
        A("Drawer", "SideTable", 0.5, (1, 1)),
        A("Drawer", "Dresser", 0.6, (1, 3)),
        A("Mirror", "wall", 1.5, (0, 1)),
        A("LightSwitch", "wall", 1.3, (1, 1)),
    ],
    "bathroom": [
        A("SinkBasin", "CounterTop", 0.8, (1, 1)),
        A("Cabinet", "CounterTop", 0.4, (1, 2)),
        A("Drawer", "CounterTop", 0.7, (0, 2)),
        A("ToiletPaperHanger", "Toilet", 0.7, (1, 1)),
        A("TowelHolder", "wall", 1.2, (1, 1)),
        A("HandTowelHolder", "wall", 1.3, (0, 1)),
        A("Mirror", "wall", 1.5, (1, 1)),
        A("LightSwitch", "wall", 1.3, (1, 1)),
    ],
}
ROOM_SIZE = {"kitchen": (14, 22), "living_room": (16, 24), "bedroom": (16, 22), "bathroom": (11, 15)}
SMALL_OBJECTS = {"kitchen": (14, 24), "living_room": (10, 18), "bedroom": (10, 18), "bathroom": (8, 14)}
# Movable receptacles are placed before other small objects so those may land in them.
MOVABLE_RECEPTACLES = ("Bowl", "Box", "Cup", "Mug", "Plate", "Pan", "Pot")
INITIAL_STATE_ODDS = {"open": 0.1, "dirty": 0.3, "filled": 0.15, "broken": 0.04, "toggled": 0.5}


class _Room:
    """Mutable builder state: the floor grid, the objects placed so far and the room's generator."""

    def __init__(self, kind: str, rng: np.random.Generator, cat: Catalog):
        self.kind, self.rng, self.cat = kind, rng, cat
        lo, hi = ROOM_SIZE[kind]
        self.nx, self.nz = int(rng.integers(lo, hi + 1)), int(rng.integers(lo, hi + 1))
        self.x0 = GRID_SIZE * int(rng.integers(-12, 4))
        self.z0 = GRID_SIZE * int(rng.integers(-12, 4))
        self.free = np.ones((self.nx, self.nz), dtype=bool)
        self.objects: list[SceneObject] = []
        self.footprints: dict[str, tuple[int, int, int, int, int]] = {}  # id -> (i0, j0, i1, j1, wall side)

    def cell_xz(self, i: float, j: float) -> tuple[float, float]:
        return self.x0 + GRID_SIZE * i, self.z0 + GRID_SIZE * j

    def add(self, object_type: str, pos: tuple[float, float, float], yaw: float, parent: str | None) -> SceneObject:
        pos = (round(pos[0], 3), round(pos[1], 3), round(pos[2], 3))
        oid = make_object_id(object_type, pos)
        while any(o.object_id == oid for o in self.objects):  # two objects in one spot: nudge the id
            pos = (pos[0] + 0.01, pos[1], pos[2])
            oid = make_object_id(object_type, pos)
        ot = self.cat.get(object_type)
        attrs = {"color": str(self.rng.choice(ot.colors)), "material": str(self.rng.choice(ot.materials))}
        obj = SceneObject(oid, object_type, pos, (0.0, yaw, 0.0), parent, attributes=attrs)
        self.objects.append(obj)
        return obj


def _try_place(room: _Room, f: Furniture) -> SceneObject | None:
    """Put one piece on a random free spot (against a wall unless ``center``); None if it does not fit."""
    rng = room.rng
    for _ in range(25):
        w, d = int(rng.integers(f.width[0], f.width[1] + 1)), int(rng.integers(f.depth[0], f.depth[1] + 1))
        side = int(rng.integers(0, 4))
        wx, dz = (w, d) if side in (0, 2) else (d, w)
        if wx > room.nx - 2 or dz > room.nz - 2:
            continue
        if f.center:
            i0, j0 = int(rng.integers(3, max(4, room.nx - wx - 2))), int(rng.integers(3, max(4, room.nz - dz - 2)))
        else:
            i0 = {
                0: int(rng.integers(0, room.nx - wx + 1)),
                1: room.nx - wx,
                2: int(rng.integers(0, room.nx - wx + 1)),
                3: 0,
            }[side]
            j0 = {
                0: room.nz - dz,
                1: int(rng.integers(0, room.nz - dz + 1)),
                2: 0,
                3: int(rng.integers(0, room.nz - dz + 1)),
            }[side]
        i1, j1 = i0 + wx, j0 + dz
        if i1 > room.nx or j1 > room.nz or not room.free[max(i0 - 1, 0) : i1 + 1, max(j0 - 1, 0) : j1 + 1].all():
            continue
        room.free[i0:i1, j0:j1] = False
        x, z = room.cell_xz((i0 + i1 - 1) / 2.0, (j0 + j1 - 1) / 2.0)
        obj = room.add(f.object_type, (x, furniture_y(room.cat, f), z), (0.0, 270.0, 180.0, 90.0)[side], None)
        room.footprints[obj.object_id] = (i0, j0, i1, j1, side)
        return obj
    return None


def furniture_y(cat: Catalog, f: Furniture) -> float:
    """The height of a piece's position: ``mount_y``, or its pivot's height with its box on the floor (at 0)."""
    if f.mount_y is not None:
        return f.mount_y
    return -cat.extents[f.object_type].vertical()[0]


def _attach(room: _Room, a: Attached, hosts: list[SceneObject]) -> None:
    """Fix ``a`` to a random host (or a wall), spread along the host's front edge."""
    rng = room.rng
    for _ in range(int(rng.integers(a.count[0], a.count[1] + 1))):
        if a.host == "wall":
            side = int(rng.integers(0, 4))
            i, j = float(rng.uniform(0, room.nx - 1)), float(rng.uniform(0, room.nz - 1))
            i, j = {0: (i, room.nz - 0.5), 1: (room.nx - 0.5, j), 2: (i, -0.5), 3: (-0.5, j)}[side]
            x, z = room.cell_xz(i, j)
        else:
            if not hosts:
                return
            host = hosts[int(rng.integers(0, len(hosts)))]
            i0, j0, i1, j1, _side = room.footprints[host.object_id]
            i, j = float(rng.uniform(i0, i1 - 1)), float(rng.uniform(j0, j1 - 1))
            x, z = room.cell_xz(i, j)
        obj = room.add(a.object_type, (x, a.height, z), 0.0, None)
        if a.object_type == "SinkBasin":
            room.add("Faucet", (x + 0.0, a.height + 0.2, z + 0.01), 0.0, None)
        if a.object_type == "StoveBurner":
            room.add("StoveKnob", (x + 0.05, a.height - 0.1, z + 0.02), 0.0, None)
        del obj


def _reachable(room: _Room) -> np.ndarray:
    """Free cells of the largest connected floor area, as (i, j) indices."""
    labels, n = ndimage.label(room.free)
    if n == 0:
        return np.zeros((0, 2), dtype=np.int64)
    sizes = ndimage.sum_labels(np.ones_like(labels), labels, index=np.arange(1, n + 1))
    return np.argwhere(labels == 1 + int(np.argmax(sizes)))


def _drop_unreachable(room: _Room, xz: np.ndarray) -> None:
    """Remove objects no reachable cell comes near (and what rests in them)."""
    keep: list[SceneObject] = []
    for o in room.objects:
        if o.parent is None and np.min(np.hypot(xz[:, 0] - o.position[0], xz[:, 1] - o.position[2])) > REACH + 0.3:
            continue
        keep.append(o)
    room.objects = keep


def _receptacle_load(room: _Room) -> dict[str, int]:
    load: dict[str, int] = {}
    for o in room.objects:
        if o.parent is not None:
            load[o.parent] = load.get(o.parent, 0) + 1
    return load


def _place_small(room: _Room, object_type: str, load: dict[str, int]) -> None:
    cat = room.cat
    cands = [
        o
        for o in room.objects
        if cat.can_hold(o.object_type, object_type)
        and load.get(o.object_id, 0) < CAPACITY_BY_SIZE[cat.get(o.object_type).size]
    ]
    if not cands:
        return
    recep = cands[int(room.rng.integers(0, len(cands)))]
    k = load.get(recep.object_id, 0)
    size = cat.get(recep.object_type).size
    off = slot_offset(k, CAPACITY_BY_SIZE[size], RADIUS_BY_SIZE[size], len(room.objects))
    pos = tuple(float(v) for v in np.asarray(recep.position) + off + (0.0, rest_height(cat, recep.object_type), 0.0))
    room.add(object_type, pos, float(room.rng.choice([0.0, 90.0, 180.0, 270.0])), recep.object_id)  # type: ignore[arg-type]
    load[recep.object_id] = k + 1


def _small_types(room: _Room) -> list[str]:
    cat = room.cat
    slices = {v[0] for v in cat.slices.values()}
    holdable = {o for objs in cat.holds.values() for o in objs}  # e.g. Boots: no receptacle rule holds them
    return [t for t in cat.in_room(room.kind) if cat.get(t).can("pickupable") and t not in slices and t in holdable]


def _place_small_objects(room: _Room) -> None:
    pool = _small_types(room)
    lo, hi = SMALL_OBJECTS[room.kind]
    n = int(room.rng.integers(lo, hi + 1))
    # Each room gets a random subset of the kinds, some with duplicates (ALFRED spawns up to 3 copies).
    kinds = list(room.rng.choice(pool, size=min(len(pool), max(4, n * 2 // 3)), replace=False))
    chosen = [str(room.rng.choice(kinds)) for _ in range(n - len(kinds))] + [str(k) for k in kinds]
    chosen.sort(key=lambda t: (t not in MOVABLE_RECEPTACLES, t))
    load = _receptacle_load(room)
    for t in chosen:
        _place_small(room, t, load)


def _initial_states(room: _Room) -> None:
    """Some drawers ajar, dirty dishes, filled cups, a broken vase, lamps on; the fridge keeps things cold."""
    rng, cat = room.rng, room.cat
    by_id = {o.object_id: o for o in room.objects}
    for o in room.objects:
        ot = cat.get(o.object_type)
        for flag, odds in INITIAL_STATE_ODDS.items():
            cap = {
                "open": "openable",
                "dirty": "dirtyable",
                "filled": "fillable",
                "broken": "breakable",
                "toggled": "toggleable",
            }[flag]
            if ot.can(cap) and rng.random() < odds:
                setattr(o, f"is_{flag}", True)
        if o.object_type in ("Fridge", "Microwave"):
            o.is_open = False
        if o.parent is not None and by_id[o.parent].object_type == "Fridge":
            o.is_cold = True


def make_home(room_kind: str, seed: int, index: int = 0, cat: Catalog | None = None) -> HouseholdScene:
    """One procedural room; the same (room_kind, seed, index) always gives the same scene."""
    if room_kind not in ROOM_KINDS:
        from eqagen.core import UnknownNameError

        raise UnknownNameError("room kind", room_kind, ROOM_KINDS)
    rng = derive_rng(seed, "household-home", room_kind, index)
    room = _Room(room_kind, rng, cat or catalog())
    placed: dict[str, list[SceneObject]] = {}
    for f in ROOM_FURNITURE[room_kind]:
        for _ in range(int(rng.integers(f.count[0], f.count[1] + 1))):
            obj = _try_place(room, f)
            if obj is not None:
                placed.setdefault(f.object_type, []).append(obj)
    for a in ROOM_ATTACHED[room_kind]:
        _attach(room, a, placed.get(a.host, []))
    cells = _reachable(room)
    xz = np.array([room.cell_xz(i, j) for i, j in cells])
    _drop_unreachable(room, xz)
    _place_small_objects(room)
    _initial_states(room)
    k = int(rng.integers(0, len(xz)))
    start = (float(xz[k, 0]), AGENT_Y, float(xz[k, 1]), float(rng.choice([0.0, 90.0, 180.0, 270.0])), 30.0)
    scene = HouseholdScene(f"{room_kind}-{seed}-{index}", room_kind, xz, 0.0, start, room.objects, "embedded")
    scene.validate()
    return scene
