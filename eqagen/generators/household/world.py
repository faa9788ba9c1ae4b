"""An embedded world with AI2-THOR's semantics and units, simulated on numpy arrays.

:class:`HouseholdWorld` takes a :class:`~.scene.HouseholdScene` and accepts AI2-THOR's actions with
their argument forms (``objectId`` targets, ``receptacleObjectId`` for ALFRED-style PutObject):
navigation on the 0.25 m grid, 90-degree turns, 15-degree camera steps within [-30, 60], and the
interactions PickupObject, PutObject, OpenObject, CloseObject, ToggleObjectOn/Off, SliceObject and
BreakObject, each with AI2-THOR's preconditions. A failed action changes nothing and carries an error
message. ALFRED's state rules apply: a running faucet cleans (and fills) what is in its sink basin,
a microwave turned on heats its contents, closing the fridge cools its contents.

All state is in native AI2-THOR coordinates in ``[entity]`` arrays; every step is recorded with
:class:`~eqagen.core.TimelineRecorder` and :meth:`HouseholdWorld.to_episode` converts to the episode
frame. The hot path (one step) is a handful of vectorised numpy calls over the entities.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from eqagen.core import (
    Entities,
    Episode,
    FrameTransform,
    Steps,
    TimelineRecorder,
    UnknownNameError,
    number_events,
)
from eqagen.generators.household.objects import Catalog, catalog
from eqagen.generators.household.scene import GRID_SIZE, HouseholdScene

VISIBILITY_DISTANCE = 1.5  # AI2-THOR's default visibilityDistance (ALFRED's VISIBILITY_DISTANCE)
# PutObject needs the receptacle closer than mere visibility (allenai/ai2thor#722: puts on visible
# receptacles fail until the agent moves closer). Measured on ALFRED's 438 valid_seen expert puts, all
# accepted by AI2-THOR: in this world's geometry the farthest receptacle was 1.25 m away.
PUT_REACH = 1.3
FIELD_OF_VIEW = 90.0  # AI2-THOR's default camera fieldOfView (degrees)
CAMERA_HEIGHT = 0.675  # camera above the agent's reported y (about 1.58 m above the floor)
HORIZON_STEP, HORIZON_MIN, HORIZON_MAX = 15.0, -30.0, 60.0
ROTATE_STEP = 90.0
FLAGS = ("open", "toggled", "broken", "sliced", "filled", "dirty", "hot", "cold", "exists")
RADIUS_BY_SIZE = {"small": 0.08, "medium": 0.3, "large": 0.6}
CAPACITY_BY_SIZE = {"small": 2, "medium": 4, "large": 10}
KNIVES = ("Knife", "ButterKnife")
NAV_ACTIONS = ("MoveAhead", "MoveRight", "MoveBack", "MoveLeft")  # direction offset = index * 90 degrees
OBJECT_ACTIONS = (
    "PickupObject",
    "PutObject",
    "OpenObject",
    "CloseObject",
    "ToggleObjectOn",
    "ToggleObjectOff",
    "SliceObject",
    "BreakObject",
)
ACTIONS = ("Initialize", *NAV_ACTIONS, "RotateLeft", "RotateRight", "LookUp", "LookDown", "Pass", *OBJECT_ACTIONS)
# Appliances whose "on" state acts on a receptacle: type -> (receptacle type acted on, effect).
APPLIANCE_EFFECTS = {
    "Microwave": ("Microwave", "heat"),
    "StoveKnob": ("StoveBurner", "heat"),
    "Toaster": ("Toaster", "heat"),
    "Faucet": ("SinkBasin", "clean"),
    "CoffeeMachine": ("CoffeeMachine", "fill"),
}
# sin and cos of every whole degree: yaw and horizon only take multiples of 15 degrees.
_SIN_COS = [(float(np.sin(np.deg2rad(a))), float(np.cos(np.deg2rad(a)))) for a in range(360)]
_DIRS = np.array([[0, 1], [1, 0], [0, -1], [-1, 0]])  # (dx, dz) cells for yaw 0, 90, 180, 270


@lru_cache(maxsize=256)
def _camera_basis(yaw: float, horizon: float) -> np.ndarray:
    """``[3, 3]``: native offsets (dx, dy, dz) to camera coordinates (right, down, depth)."""
    sy, cy = _SIN_COS[int(yaw) % 360]
    sh, ch = _SIN_COS[int(horizon) % 360]
    return np.array([[cy, -sy * sh, sy * ch], [0.0, -ch, -sh], [-sy, -cy * sh, cy * ch]])


def rest_height(cat: Catalog, object_type: str) -> float:
    """How far above a receptacle's position what it holds rests (its extent's ``rest_y``; 0 where unknown)."""
    return cat.extents[object_type].rest_y or 0.0


def slot_offset(k: int, capacity: int, radius: float, salt: int) -> np.ndarray:
    """Where the k-th object rests on a receptacle: a sunflower spiral over its surface, deterministic."""
    ang = 2.39996 * (k + 1) + 0.7 * (salt % 7)
    rad = radius * 0.6 * np.sqrt((k + 0.5) / max(capacity, 1))
    return np.array([rad * np.cos(ang), 0.03, rad * np.sin(ang)])


@dataclass(frozen=True)
class ActionResult:
    success: bool
    error: str = ""


def dense_index(ij: np.ndarray, pad: int = 2) -> tuple[np.ndarray, np.ndarray]:
    """A dense ``[W, H]`` array holding each cell's row in ``ij`` (-1 elsewhere), and its origin."""
    lo = ij.min(axis=0) - pad
    shape = ij.max(axis=0) - lo + pad + 1
    grid = np.full(tuple(int(v) for v in shape), -1, dtype=np.int64)
    grid[ij[:, 0] - lo[0], ij[:, 1] - lo[1]] = np.arange(len(ij))
    return grid, lo


def neighbours(ij: np.ndarray) -> np.ndarray:
    """``[K, 4]``: the row of each cell's neighbour in the four yaw directions, -1 where none."""
    grid, lo = dense_index(ij)
    cells = ij - lo
    return np.stack([grid[cells[:, 0] + di, cells[:, 1] + dj] for di, dj in _DIRS], axis=1)


class _Grid:
    """The reachable cells and, per cell, its neighbour in each of the four yaw directions (-1: none)."""

    def __init__(self, reachable: np.ndarray):
        self.xz = np.asarray(reachable, dtype=np.float64)
        self.ij = np.rint(self.xz / GRID_SIZE).astype(np.int64)
        self.lookup = {(int(i), int(j)): k for k, (i, j) in enumerate(self.ij.tolist())}
        self.neighbour = neighbours(self.ij)

    def cell_of(self, x: float, z: float) -> int:
        return self.lookup.get((round(x / GRID_SIZE), round(z / GRID_SIZE)), -1)


class HouseholdWorld:
    """The simulator: state arrays, actions with AI2-THOR preconditions, per-step recording."""

    def __init__(self, scene: HouseholdScene, max_steps: int = 250, cat: Catalog | None = None):
        self.scene, self.cat = scene, cat or catalog()
        self.max_steps = max_steps
        self._build_entities(scene)
        self._build_statics()
        if "grid" not in scene.cache:  # the grid is static: build it once per scene
            scene.cache["grid"] = _Grid(scene.reachable)
        self.grid = scene.cache["grid"]
        self._init_agent(scene)
        self._recorder = TimelineRecorder(max_steps + 1, self._state())
        self._init_steps(max_steps + 1)
        self._raw_events: list[tuple[int, str, int, int]] = []
        self.t = -1
        self._refresh_visibility()
        self._record("Initialize", -1, -1, {}, ActionResult(True))

    # ------------------------------------------------------------------ construction
    def _build_entities(self, scene: HouseholdScene) -> None:
        objs = scene.objects
        ids = [o.object_id for o in objs]
        index = {oid: i for i, oid in enumerate(ids)}
        types = [o.object_type for o in objs]
        for o in objs:
            self.cat.get(o.object_type)  # unknown types fail here with the known list
        whole_of = [-1] * len(objs)
        for i, o in enumerate(objs):
            if o.object_type in self.cat.slices:
                slice_type, n = self.cat.slices[o.object_type]
                for k in range(n):
                    ids.append(f"{o.object_id}|{slice_type}_{k}")
                    types.append(slice_type)
                    whole_of.append(i)
        n = len(ids)
        self.native_id, self.types, self.id_index = ids, types, {oid: i for i, oid in enumerate(ids)}
        self.whole_of = np.array(whole_of, dtype=np.int64)
        self.type_id = np.array([self.cat.index[t] for t in types], dtype=np.int64)
        self.pos = np.zeros((n, 3), dtype=np.float64)
        self.rot = np.zeros((n, 3), dtype=np.float64)
        self.parent = np.full(n, -1, dtype=np.int32)
        self.flags = {f: np.zeros(n, dtype=bool) for f in FLAGS}
        for i, o in enumerate(objs):
            self.pos[i], self.rot[i] = o.position, o.rotation
            self.parent[i] = index[o.parent] if o.parent is not None else -1
            for f, v in (
                ("open", o.is_open),
                ("toggled", o.is_toggled),
                ("broken", o.is_broken),
                ("sliced", o.is_sliced),
                ("filled", o.is_filled),
                ("dirty", o.is_dirty),
                ("hot", o.is_hot),
                ("cold", o.is_cold),
            ):
                self.flags[f][i] = v
        self.flags["exists"][: len(objs)] = True
        self._init_slices(len(objs))
        self.attributes = self._attributes(objs)

    def _init_slices(self, n_objects: int) -> None:
        """Slices start where their whole is; a whole already sliced at start is replaced by its slices."""
        is_slice = self.whole_of >= 0
        whole = self.whole_of[is_slice]
        self.pos[is_slice] = self.pos[whole]
        self.parent[is_slice] = self.parent[whole]
        already = self.flags["sliced"][whole]
        self.flags["exists"][np.flatnonzero(is_slice)[already]] = True
        self.flags["exists"][np.unique(whole[already])] = False

    def _attributes(self, objs: list) -> list[dict[str, str]]:
        out = []
        for i, t in enumerate(self.types):
            ot = self.cat.get(t)
            base = {"color": ot.colors[0], "material": ot.materials[0], "utility": ot.utility, "size": ot.size}
            src = self.whole_of[i] if self.whole_of[i] >= 0 else i
            if src < len(objs):
                base.update(objs[src].attributes)
            base["size"] = ot.size
            out.append(base)
        return out

    def _build_statics(self) -> None:
        cap = self.cat.capability
        self.can = {c: arr[self.type_id] for c, arr in cap.items()}
        self.compatible = self.cat.compatible[self.type_id[:, None], self.type_id[None, :]]
        sizes = [a["size"] for a in self.attributes]
        self.radius = np.array([RADIUS_BY_SIZE[s] for s in sizes])
        self.capacity = np.array([CAPACITY_BY_SIZE[s] for s in sizes])
        self.rest_y = np.array([rest_height(self.cat, t) for t in self.types])  # where contents rest
        self.is_knife = np.isin(np.array(self.types), KNIVES)
        self.effect_target = np.full(len(self.types), -1, dtype=np.int64)
        self.effect_kind = [""] * len(self.types)
        for i, t in enumerate(self.types):
            if t in APPLIANCE_EFFECTS:
                recep_type, kind = APPLIANCE_EFFECTS[t]
                self.effect_target[i] = self._nearest_of_type(i, recep_type)
                self.effect_kind[i] = kind
        # ALFRED's own bookkeeping of what was cleaned, heated and cooled (its goal conditions use these).
        n = len(self.types)
        self._view_slack = self.radius * np.sqrt(2.0)  # a sphere of this radius touches the frustum
        self._closed_pad = np.zeros(n + 1, dtype=bool)
        self._parent_pad = np.full(n + 1, n, dtype=np.int64)
        self._hidden_stale = True
        self._carried = np.zeros(0, dtype=np.int64)
        self.cleaned = np.zeros(len(self.types), dtype=bool)
        self.heated = np.zeros(len(self.types), dtype=bool)
        self.cooled = np.zeros(len(self.types), dtype=bool)

    def _nearest_of_type(self, i: int, object_type: str) -> int:
        if self.types[i] == object_type:
            return i
        cands = np.flatnonzero(np.array(self.types) == object_type)
        if len(cands) == 0:
            return -1
        return int(cands[np.argmin(np.linalg.norm(self.pos[cands] - self.pos[i], axis=1))])

    def _init_agent(self, scene: HouseholdScene) -> None:
        x, y, z, yaw, horizon = scene.agent_start
        self.cell = self.grid.cell_of(x, z)
        if self.cell < 0:
            raise ValueError(f"scene {scene.scene_id}: agent start ({x}, {z}) is not a reachable cell")
        self.agent_y = float(y)
        self.yaw = float(yaw) % 360.0
        self.horizon = float(horizon)
        self.held = -1

    def _init_steps(self, cap: int) -> None:
        self.s_action: list[str] = []
        self.s_args: list[dict[str, Any]] = []
        self.s_error: list[str] = []
        self.s_target = np.full(cap, -1, dtype=np.int32)
        self.s_recep = np.full(cap, -1, dtype=np.int32)
        self.s_success = np.zeros(cap, dtype=bool)
        self.s_pose = np.zeros((cap, 5), dtype=np.float64)
        self.s_held = np.full(cap, -1, dtype=np.int32)

    # ------------------------------------------------------------------ observation
    @property
    def n_entities(self) -> int:
        return len(self.types)

    @property
    def agent_xz(self) -> np.ndarray:
        return self.grid.xz[self.cell]

    def camera(self) -> np.ndarray:
        x, z = self.grid.xz[self.cell]
        return np.array([x, self.agent_y + CAMERA_HEIGHT, z])

    def _refresh_visibility(self) -> None:
        """Distance, the camera's view frustum and closed-receptacle occlusion, vectorised over entities.

        In camera coordinates (right, down, depth) a point is in a square 90-degree view when
        ``max(|right|, |down|) <= depth``; an object counts while its bounding sphere touches the frustum.
        """
        x, z = self.grid.xz[self.cell]
        d = self.pos - (x, self.agent_y + CAMERA_HEIGHT, z)
        # AI2-THOR measures visibilityDistance from the agent's central vertical axis, not from the camera
        # (docs: concepts, "Proximity"), so height does not count: low objects right in front are in reach.
        self.eff_dist = np.hypot(d[:, 0], d[:, 2]) - self.radius
        if self._hidden_stale:  # objects only move (other than in the hand) through object actions
            # AI2-THOR tests visibility points spread over the whole object, and a floor-standing object (a
            # floor lamp, a toilet) has its origin at its base: test its bounding sphere around its middle.
            self._lift = np.where(self.pos[:, 1] <= self.scene.floor_y + 0.1, 1.25 * self.radius, 0.0)
            self.hidden = self._hidden_mask()
            self._present = self.flags["exists"] & ~self.hidden
            self._hidden_stale = False
        d[:, 1] += self._lift
        cam = d @ _camera_basis(self.yaw, self.horizon)  # columns: right, down, depth
        self.in_view = np.abs(cam[:, :2]).max(axis=1) - cam[:, 2] <= self._view_slack
        vis = self._present & self.in_view & (self.eff_dist <= VISIBILITY_DISTANCE)
        if self.held >= 0:
            vis[self.held] = True
        self.visible = vis

    def _hidden_mask(self) -> np.ndarray:
        """True where some ancestor receptacle (up to three levels) encloses it and is closed."""
        n = self.n_entities
        closed = self._closed_pad
        closed[:n] = self.can["enclosing"] & ~self.flags["open"]
        par = self._parent_pad
        par[:n] = np.where(self.parent < 0, n, self.parent)
        p = par[:n]
        hidden = closed[p]
        for _ in range(2):
            p = par[p]
            hidden |= closed[p]
        return hidden

    def _state(self) -> dict[str, np.ndarray]:
        state = {"position": self.pos.astype(np.float32), "visible": getattr(self, "visible", self.flags["exists"])}
        state["parent"] = self.parent
        state.update(self.flags)
        return state

    # ------------------------------------------------------------------ stepping
    def step(
        self, action: str, objectId: str | None = None, receptacleObjectId: str | None = None, **kwargs: Any
    ) -> ActionResult:
        """Take one action in AI2-THOR's form (``objectId`` strings); returns success and error message.

        ALFRED's PutObject names the held object as ``objectId`` and the receptacle as
        ``receptacleObjectId``; AI2-THOR's newer form names only the receptacle as ``objectId``.
        """
        target = self._index_of(objectId)
        recep = self._index_of(receptacleObjectId)
        if action == "PutObject" and receptacleObjectId is None:  # the newer form: objectId is the receptacle
            target, recep = self.held, (target if objectId is not None else -2)
        return self.act(action, target, recep, kwargs)

    def _index_of(self, object_id: str | None) -> int:
        if object_id is None:
            return -1
        return self.id_index.get(object_id, -2)  # -2: named but unknown

    def act(self, action: str, target: int = -1, receptacle: int = -1, args: dict | None = None) -> ActionResult:
        """Take one action on entity indices; the agent's fast path."""
        if self.t + 1 >= self.max_steps + 1:
            raise IndexError(f"episode is full: {self.max_steps} steps taken")
        handler = _HANDLERS.get(action)
        if handler is None:
            raise UnknownNameError("AI2-THOR action", action, ACTIONS)
        self._forced = bool((args or {}).get("forceAction", False))  # read by PutObject's placement check
        result = handler(self, target, receptacle)
        if result.success:
            self._hidden_stale |= action in OBJECT_ACTIONS
            self._refresh_visibility()
        self._record(action, target, receptacle, args or {}, result)
        return result

    def _record(self, action: str, target: int, recep: int, args: dict, result: ActionResult) -> None:
        self.t += 1
        t = self.t
        self.s_action.append(action)
        self.s_args.append(args)
        self.s_error.append(result.error)
        self.s_target[t] = max(target, -1)
        self.s_recep[t] = max(recep, -1)
        self.s_success[t] = result.success
        x, z = self.grid.xz[self.cell]
        self.s_pose[t] = (x, self.agent_y, z, self.yaw, self.horizon)
        self.s_held[t] = self.held
        self._recorder.record(self._state())

    def _event(self, kind: str, entity: int, target: int = -1) -> None:
        self._raw_events.append((self.t + 1, kind, int(entity), int(target)))

    # ------------------------------------------------------------------ navigation
    def _move(self, direction: int) -> ActionResult:
        d = (round(self.yaw / ROTATE_STEP) + direction) % 4
        nxt = int(self.grid.neighbour[self.cell, d])
        if nxt < 0:
            x, z = self.grid.xz[self.cell] + _DIRS[d] * GRID_SIZE
            return ActionResult(
                False, f"{NAV_ACTIONS[direction]} failed: agent blocked, ({x:.2f}, {z:.2f}) is not a reachable position"
            )
        self.cell = nxt
        self._carry_held()
        return ActionResult(True)

    def _rotate(self, sign: float) -> ActionResult:
        self.yaw = (self.yaw + sign * ROTATE_STEP) % 360.0
        self._carry_held()
        return ActionResult(True)

    def _look(self, sign: float) -> ActionResult:
        new = self.horizon + sign * HORIZON_STEP
        if new < HORIZON_MIN - 1e-6:
            return ActionResult(False, f"can't look up beyond {-HORIZON_MIN:.0f} degrees above the forward horizon")
        if new > HORIZON_MAX + 1e-6:
            return ActionResult(False, f"can't look down beyond {HORIZON_MAX:.0f} degrees below the forward horizon")
        self.horizon = new
        return ActionResult(True)

    def _carry_held(self) -> None:
        """The held object (and what it holds) moves with the agent's hand."""
        if self.held < 0:
            return
        sy, cy = _SIN_COS[int(self.yaw) % 360]
        x, z = self.grid.xz[self.cell]
        hand = (x + 0.4 * sy, self.agent_y + CAMERA_HEIGHT - 0.3, z + 0.4 * cy)
        self.pos[self._carried] += hand - self.pos[self.held]

    def _descendants_mask(self, i: int) -> np.ndarray:
        p1 = self.parent == i
        return p1 | np.isin(self.parent, np.flatnonzero(p1)) if p1.any() else p1

    # ------------------------------------------------------------------ interaction checks
    def _check_target(self, i: int, capability: str | None) -> str:
        """AI2-THOR's checks shared by every object action: valid id, capability, visibility, distance."""
        if i == -2 or (i >= 0 and not self.flags["exists"][i]):
            return "Object ID appears to be invalid."
        if i < 0:
            return "objectId required for this action"
        oid = self.native_id[i]
        if capability and not self.can[capability][i]:
            return f"{oid} is not {capability.replace('_', ' ')}"
        if getattr(self, "_forced", False):  # AI2-THOR: forceAction acts regardless of visibility and distance
            return ""
        if self.hidden[i] or not self.in_view[i]:
            return f"{oid} is not visible"
        if self.eff_dist[i] > VISIBILITY_DISTANCE:
            return f"{oid} is not within the agent's visibilityDistance ({VISIBILITY_DISTANCE} m)"
        return ""

    # ------------------------------------------------------------------ interactions
    def _pickup(self, i: int, _r: int) -> ActionResult:
        err = self._check_target(i, "pickupable")
        if not err and self.held >= 0:
            err = "Agent hand has something in it already! Can't pick up anything else"
        if err:
            return ActionResult(False, err)
        self._event("pickup", i, int(self.parent[i]))
        self.parent[i] = -1
        self.held = i
        self._carried = np.append(np.flatnonzero(self._descendants_mask(i)), i)  # contents travel along
        self._carry_held()
        return ActionResult(True)

    def _put(self, i: int, r: int) -> ActionResult:
        if self.held < 0:
            return ActionResult(False, "Nothing is in the agent's hand to put")
        if r == -2 or r < 0:
            return ActionResult(False, "Object ID appears to be invalid." if r == -2 else "receptacleObjectId required")
        if i >= 0 and i != self.held:
            return ActionResult(False, f"{self.native_id[i]} is not the object in the agent's hand")
        err = self._check_target(r, "receptacle") or self._check_placement(self.held, r)
        if err:
            return ActionResult(False, err)
        h = self.held
        self.held = -1
        self._place(h, r)
        self._event("put", h, r)
        self._apply_standing_effects(r)
        return ActionResult(True)

    def _check_placement(self, h: int, r: int) -> str:
        if self.can["openable"][r] and self.can["enclosing"][r] and not self.flags["open"][r]:
            return "Target openable Receptacle is CLOSED, can't place if target is closed!"
        # AI2-THOR: PutObject with forceAction=True lifts the object-type placement restrictions (a knife
        # may go into the fridge); it does not make room (allenai/ai2thor#367).
        compatible = self.compatible[r, h] or getattr(self, "_forced", False)
        if not compatible or r == h or self.parent[r] == h:
            return f"{self.types[h]} cannot be placed in {self.native_id[r]}"
        if self._occupancy(r, adding=h) > self.capacity[r] or self.eff_dist[r] > PUT_REACH:
            return "No valid positions to place object found"
        return ""

    def _occupancy(self, r: int, adding: int = -1) -> int:
        """Objects resting in ``r`` (with ``adding`` put in) that take room: existing ones only (not a sliced
        whole or unspawned slices), and the slices of one whole count once, as they lie where the whole lay
        in AI2-THOR (so a slice put back beside its sister slices needs no new room)."""
        inside = np.flatnonzero((self.parent == r) & self.flags["exists"])
        if adding >= 0:
            inside = np.append(inside, adding)
        return len(np.unique(np.where(self.whole_of[inside] >= 0, self.whole_of[inside], inside)))

    def _place(self, h: int, r: int) -> None:
        """Rest ``h`` (and what it holds) in ``r`` at the next free slot of r's surface."""
        k = int((self.parent == r).sum())
        target = self.pos[r] + slot_offset(k, int(self.capacity[r]), float(self.radius[r]), h)
        target[1] += self.rest_y[r]
        moving = self._descendants_mask(h)
        moving[h] = True
        self.pos[moving] += target - self.pos[h]
        self.parent[h] = r

    def _open(self, i: int, _r: int) -> ActionResult:
        err = self._check_target(i, "openable") or (
            f"{self.native_id[i]} is already open" if self.flags["open"][i] else ""
        )
        if err:
            return ActionResult(False, err)
        self.flags["open"][i] = True
        self._event("open", i)
        return ActionResult(True)

    def _close(self, i: int, _r: int) -> ActionResult:
        err = self._check_target(i, "openable") or (
            "" if self.flags["open"][i] else f"{self.native_id[i]} is already closed"
        )
        if err:
            return ActionResult(False, err)
        self.flags["open"][i] = False
        self._event("close", i)
        if self.can["cold_source"][i] and self.can["receptacle"][i]:
            self._apply_effect(i, i, "cool")  # ALFRED: closing the fridge cools its contents
        return ActionResult(True)

    def _toggle(self, i: int, on: bool) -> ActionResult:
        err = self._check_target(i, "toggleable")
        if not err and self.flags["toggled"][i] == on:
            err = f"can't toggle object {'on' if on else 'off'} if it's already {'on' if on else 'off'}!"
        if err:
            return ActionResult(False, err)
        self.flags["toggled"][i] = on
        self._event("toggle_on" if on else "toggle_off", i)
        if on and self.effect_target[i] >= 0:
            self._apply_effect(i, int(self.effect_target[i]), self.effect_kind[i])
        return ActionResult(True)

    def _slice(self, i: int, _r: int) -> ActionResult:
        err = self._check_target(i, "sliceable")
        if not err and (self.held < 0 or not self.is_knife[self.held]):
            err = "Agent must be holding a Knife to slice"
        if not err and self.flags["sliced"][i]:
            err = f"{self.native_id[i]} is already sliced"
        if err:
            return ActionResult(False, err)
        slices = np.flatnonzero(self.whole_of == i)
        self.flags["sliced"][i] = True
        self.flags["exists"][i] = False
        self.flags["exists"][slices] = True
        spread = (np.arange(len(slices)) - (len(slices) - 1) / 2.0) * 0.04
        self.pos[slices] = self.pos[i] + np.stack([spread, np.zeros_like(spread), np.zeros_like(spread)], axis=1)
        self.parent[slices] = self.parent[i]
        for f in ("hot", "cold", "dirty"):
            self.flags[f][slices] = self.flags[f][i]
        self._event("slice", i)
        return ActionResult(True)

    def _break(self, i: int, _r: int) -> ActionResult:
        err = self._check_target(i, "breakable") or (
            f"{self.native_id[i]} is already broken" if self.flags["broken"][i] else ""
        )
        if err:
            return ActionResult(False, err)
        self.flags["broken"][i] = True
        self._event("break", i)
        return ActionResult(True)

    # ------------------------------------------------------------------ state rules
    def _contents(self, r: int) -> np.ndarray:
        return np.flatnonzero(self._descendants_mask(r) & self.flags["exists"])

    def _apply_effect(self, source: int, recep: int, kind: str) -> None:
        """Heat, cool, clean or fill what rests in ``recep``; events name the appliance as target."""
        inside = self._contents(recep)
        if kind == "heat":
            inside = inside[self.can["cookable"][inside] | self.can["heatable"][inside]]
            self.flags["hot"][inside], self.flags["cold"][inside] = True, False
            self.heated[inside] = True
        elif kind == "cool":
            inside = inside[self.can["coolable"][inside] | self.can["cookable"][inside]]
            self.flags["cold"][inside], self.flags["hot"][inside] = True, False
            self.cooled[inside] = True
        elif kind == "clean":
            fill = inside[self.can["fillable"][inside]]
            self.flags["filled"][fill] = True
            inside = inside[self.can["cleanable"][inside] | self.can["dirtyable"][inside]]
            self.flags["dirty"][inside] = False
            self.cleaned[inside] = True
            self._events_for(fill, "fill", source)
        elif kind == "fill":
            inside = inside[self.can["fillable"][inside]]
            self.flags["filled"][inside] = True
        self._events_for(inside, kind, source)

    def _events_for(self, entities: np.ndarray, kind: str, source: int) -> None:
        for e in entities:
            self._event(kind, int(e), source)

    def _apply_standing_effects(self, r: int) -> None:
        """Putting something into a receptacle that a running appliance acts on applies its effect."""
        on = np.flatnonzero((self.effect_target == r) & self.flags["toggled"])
        for s in on:
            self._apply_effect(int(s), r, self.effect_kind[int(s)])

    # ------------------------------------------------------------------ output
    @property
    def n_steps(self) -> int:
        return self.t + 1

    def frame(self) -> FrameTransform:
        x, y, z, yaw, _ = self.s_pose[0]
        return FrameTransform("ai2thor", origin=(float(x), float(y), float(z)), yaw0=float(yaw))

    def dense_timeline(self) -> dict[str, np.ndarray]:
        """The recorded ``[t, entity]`` arrays, positions in the episode frame (for checks and tests)."""
        dense = {k: np.array(v) for k, v in self._recorder.dense().items()}
        dense["position"] = self.frame().to_episode(dense["position"]).astype(np.float32)
        return dense

    def instance_ids(self) -> list[str]:
        counts: dict[str, int] = {}
        out = []
        for t in self.types:
            counts[t] = counts.get(t, 0) + 1
            out.append(f"{t}#{counts[t]}")
        return out

    def to_episode(self, episode_id: str, backend: str, seed: int, task: dict, meta: dict) -> Episode:
        frame = self.frame()
        timeline = self._recorder.finish()
        pos = timeline.changes["position"]
        timeline.initial["position"] = frame.to_episode(timeline.initial["position"]).astype(np.float32)
        pos.value = frame.to_episode(pos.value).astype(np.float32).reshape(-1, 3)
        T = self.n_steps
        pose = self.s_pose[:T].copy()
        pose[:, :3] = frame.to_episode(pose[:, :3])
        pose[:, 3] = frame.yaw_to_episode(pose[:, 3])
        steps = Steps(
            list(self.s_action),
            self.s_target[:T].copy(),
            self.s_recep[:T].copy(),
            list(self.s_args),
            self.s_success[:T].copy(),
            list(self.s_error),
            pose.astype(np.float32),
            self.s_held[:T].copy(),
        )
        caps = [tuple(sorted(c for c, arr in self.can.items() if arr[i])) for i in range(self.n_entities)]
        entities = Entities(
            self.instance_ids(), list(self.types), list(self.native_id), [dict(a) for a in self.attributes], caps
        )
        meta = {**meta, "native_rotation": self.rot.round(3).tolist(), "room_kind": self.scene.room_kind}
        return Episode(
            episode_id=episode_id,
            family="household",
            backend=backend,
            scene_id=self.scene.scene_id,
            seed=int(seed),
            task=task,
            steps=steps,
            entities=entities,
            timeline=timeline,
            events=number_events(self._raw_events, self.types),
            frame=frame,
            meta=meta,
        )


_HANDLERS = {
    "Initialize": lambda w, i, r: ActionResult(True),
    "Pass": lambda w, i, r: ActionResult(True),
    "MoveAhead": lambda w, i, r: w._move(0),
    "MoveRight": lambda w, i, r: w._move(1),
    "MoveBack": lambda w, i, r: w._move(2),
    "MoveLeft": lambda w, i, r: w._move(3),
    "RotateRight": lambda w, i, r: w._rotate(1.0),
    "RotateLeft": lambda w, i, r: w._rotate(-1.0),
    "LookDown": lambda w, i, r: w._look(1.0),
    "LookUp": lambda w, i, r: w._look(-1.0),
    "PickupObject": HouseholdWorld._pickup,
    "PutObject": HouseholdWorld._put,
    "OpenObject": HouseholdWorld._open,
    "CloseObject": HouseholdWorld._close,
    "ToggleObjectOn": lambda w, i, r: w._toggle(i, True),
    "ToggleObjectOff": lambda w, i, r: w._toggle(i, False),
    "SliceObject": HouseholdWorld._slice,
    "BreakObject": HouseholdWorld._break,
}
