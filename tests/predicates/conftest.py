"""Small episodes built in code with core's classes: a kitchen with two countertops, two cabinets, a
fridge, a table and things on them, an agent that walks, turns, opens, picks up, puts and toggles.

Visibility is a plain field-of-view cone with closed-container occlusion. These are test fixtures for
the predicates (any episode shape will do); the distribution tests use real household episodes.
"""

from __future__ import annotations

import numpy as np
import pytest

from eqagen.core import Entities, Episode, Steps, Timeline, make_episode_id, number_events

FLAGS = ("open", "toggled", "broken", "sliced", "filled", "dirty", "exists")
# type, capabilities, colors, material, utility
KINDS = {
    "CounterTop": (("receptacle",), ("white", "gray"), "stone", "preparing food"),
    "Fridge": (("receptacle", "openable", "enclosing"), ("white", "silver"), "metal", "keeping food cold"),
    "Cabinet": (("receptacle", "openable", "enclosing"), ("brown", "white"), "wood", "storing things"),
    "DiningTable": (("receptacle",), ("brown",), "wood", "eating"),
    "Apple": (("pickupable", "sliceable"), ("red", "green"), "food", "eating"),
    "Cup": (("pickupable", "receptacle", "fillable", "breakable"), ("green", "white", "blue"), "glass", "drinking"),
    "Mug": (("pickupable", "receptacle", "fillable", "breakable"), ("blue", "white"), "ceramic", "drinking"),
    "Knife": (("pickupable",), ("silver",), "metal", "cutting food"),
    "Bowl": (("pickupable", "receptacle"), ("green", "white"), "ceramic", "holding food"),
    "Lamp": (("toggleable",), ("black", "white"), "metal", "lighting"),
}
RECEPTACLES = [
    ("CounterTop", (1.5, 0.9, 2.0)),
    ("CounterTop", (-1.5, 0.9, 2.5)),
    ("Fridge", (2.5, 0.8, 0.5)),
    ("Cabinet", (-2.0, 1.6, 1.0)),
    ("Cabinet", (0.0, 0.4, 3.0)),
    ("DiningTable", (0.0, 0.7, -2.0)),
]
SMALL = ["Apple", "Apple", "Cup", "Cup", "Cup", "Mug", "Knife", "Bowl"]


def _jitter(rng: np.random.Generator) -> np.ndarray:
    """Where a small thing lands on its receptacle, relative to the receptacle's centre."""
    return np.array([rng.uniform(-0.5, 0.5), 0.1, rng.uniform(-0.4, 0.4)])


def _entities(rng: np.random.Generator) -> tuple[Entities, np.ndarray, np.ndarray]:
    types, pos, parent = [], [], []
    for t, p in RECEPTACLES:
        types.append(t)
        pos.append(p)
        parent.append(-1)
    types.append("Lamp")
    pos.append((rng.uniform(-2, 2), 1.8, rng.uniform(-2, 2)))
    parent.append(-1)
    for t in SMALL[: 5 + int(rng.integers(0, 4))]:
        r = int(rng.integers(0, len(RECEPTACLES)))
        base = np.array(RECEPTACLES[r][1])
        types.append(t)
        pos.append(tuple(base + _jitter(rng)))
        parent.append(r)
    counts: dict[str, int] = {}
    ids, attrs, caps = [], [], []
    for t in types:
        counts[t] = counts.get(t, 0) + 1
        ids.append(f"{t}#{counts[t]}")
        cap, colors, material, utility = KINDS[t]
        attrs.append({"color": str(rng.choice(colors)), "material": material, "utility": utility, "size": "small"})
        caps.append(tuple(sorted(cap)))
    ents = Entities(list(ids), list(types), [f"{i}|native" for i in ids], attrs, caps)
    return ents, np.array(pos, dtype=np.float64), np.array(parent, dtype=np.int32)


def _visible(pos: np.ndarray, agent: np.ndarray, yaw: float, hidden: np.ndarray) -> np.ndarray:
    d = pos - agent
    r = np.deg2rad(yaw)
    fwd = d[:, 0] * np.sin(r) + d[:, 2] * np.cos(r)
    right = d[:, 0] * np.cos(r) - d[:, 2] * np.sin(r)
    return (fwd > 0.2) & (np.abs(right) < fwd * 1.2) & (np.hypot(fwd, right) < 5.0) & ~hidden


class _Sim:
    """Just enough of a world to produce varied timelines and events."""

    def __init__(self, rng: np.random.Generator):
        self.rng = rng
        self.ents, self.pos, self.parent = _entities(rng)
        n = len(self.ents)
        self.flags = {f: np.zeros(n, dtype=bool) for f in FLAGS}
        self.flags["exists"][:] = True
        caps = self.ents.capabilities
        self.can = {c: np.array([c in k for k in caps]) for c in ("openable", "toggleable", "fillable", "breakable")}
        self.flags["filled"] |= self.can["fillable"] & (rng.random(n) < 0.4)
        self.agent = np.zeros(3)
        self.yaw, self.held = 0.0, -1
        self.raw_events: list[tuple[int, str, int, int]] = []
        self.rows: list[dict[str, np.ndarray]] = []
        self.steps: list[tuple[str, int, int, tuple]] = []

    def hidden(self) -> np.ndarray:
        closed = (
            self.can["openable"] & ~self.flags["open"] & np.array(["enclosing" in c for c in self.ents.capabilities])
        )
        return np.array([p >= 0 and closed[p] for p in self.parent])

    def record(self, action: str, target: int = -1, recep: int = -1) -> None:
        if self.held >= 0:
            self.pos[self.held] = self.agent + np.array([0.0, 0.9, 0.3])
        vis = _visible(self.pos, self.agent, self.yaw, self.hidden())
        if self.held >= 0:
            vis[self.held] = True
        row = {"position": self.pos.astype(np.float32), "visible": vis, "parent": self.parent.copy()}
        row.update({f: v.copy() for f, v in self.flags.items()})
        self.rows.append(row)
        self.steps.append((action, target, recep, (*self.agent, self.yaw, 0.0)))

    def event(self, kind: str, entity: int, target: int = -1) -> None:
        self.raw_events.append((len(self.rows), kind, entity, target))

    def act(self) -> None:
        rng, n = self.rng, len(self.ents)
        u = rng.random()
        if u < 0.35:
            step = rng.choice([-0.5, 0.5]) * np.array([np.sin(np.deg2rad(self.yaw)), 0, np.cos(np.deg2rad(self.yaw))])
            self.agent = np.clip(self.agent + step, -2.5, 2.5)
            return self.record("MoveAhead")
        if u < 0.6:
            self.yaw = float((self.yaw + rng.choice([-90.0, 90.0, 45.0])) % 360)
            return self.record("RotateRight")
        i = int(rng.integers(0, n))
        if u < 0.72 and self.can["openable"][i]:
            kind = "close" if self.flags["open"][i] else "open"
            self.event(kind, i)
            self.flags["open"][i] = not self.flags["open"][i]
            return self.record(kind.capitalize() + "Object", i)
        if u < 0.78 and self.can["toggleable"][i]:
            kind = "toggle_off" if self.flags["toggled"][i] else "toggle_on"
            self.event(kind, i)
            self.flags["toggled"][i] = not self.flags["toggled"][i]
            return self.record("ToggleObject", i)
        if u < 0.9 and self.held < 0 and self.parent[i] >= 0 and "pickupable" in self.ents.capabilities[i]:
            self.event("pickup", i)
            self.held, self.parent[i] = i, -1
            return self.record("PickupObject", i)
        if self.held >= 0:
            r = int(rng.integers(0, len(RECEPTACLES)))
            h = self.held
            self.event("put", h, r)
            self.pos[h] = np.array(RECEPTACLES[r][1]) + _jitter(rng)
            self.parent[h], self.held = r, -1
            if self.can["breakable"][h] and rng.random() < 0.3:
                self.flags["broken"][h] = True
                self.event("break", h)
            return self.record("PutObject", h, r)
        return self.record("Pass")


def make_episode(seed: int, n_steps: int = 40) -> Episode:
    """A small household-like episode, deterministic in ``seed``."""
    sim = _Sim(np.random.default_rng(seed))
    sim.record("Initialize")
    while len(sim.rows) < n_steps:
        sim.act()
    dense = {k: np.stack([r[k] for r in sim.rows]) for k in sim.rows[0]}
    acts, targets, receps, poses = zip(*sim.steps)
    T = len(acts)
    steps = Steps(
        action=list(acts),
        target=np.array(targets, dtype=np.int32),
        receptacle=np.array(receps, dtype=np.int32),
        args=[{} for _ in range(T)],
        success=np.ones(T, dtype=bool),
        error=[""] * T,
        pose=np.array(poses, dtype=np.float32),
        held=np.full(T, -1, dtype=np.int32),
    )
    return Episode(
        episode_id=make_episode_id("fixture", f"kitchen-{seed}", seed),
        family="household",
        backend="fixture",
        scene_id=f"kitchen-{seed % 7}",
        seed=seed,
        task={"type": "wander"},
        steps=steps,
        entities=sim.ents,
        timeline=Timeline.from_dense(dense),
        events=number_events(sim.raw_events, sim.ents.type),
    )


@pytest.fixture(scope="session")
def episodes() -> list[Episode]:
    return [make_episode(s) for s in range(12)]


@pytest.fixture(scope="session")
def episode() -> Episode:
    return make_episode(3)


def tiny_episode(
    types: list[str],
    position: np.ndarray,
    visible: np.ndarray,
    parent: np.ndarray | None = None,
    flags: dict[str, np.ndarray] | None = None,
    events: list[tuple[int, str, int, int]] = (),
    pose: np.ndarray | None = None,
    attributes: list[dict[str, str]] | None = None,
    capabilities: list[tuple[str, ...]] | None = None,
) -> Episode:
    """An episode from explicit ``[T, N]`` arrays, for tests that check one rule at a time."""
    T, N = visible.shape
    counts: dict[str, int] = {}
    ids = []
    for t in types:
        counts[t] = counts.get(t, 0) + 1
        ids.append(f"{t}#{counts[t]}")
    dense = {
        "position": np.asarray(position, dtype=np.float32),
        "visible": np.asarray(visible, dtype=bool),
        "parent": np.full((T, N), -1, np.int32) if parent is None else np.asarray(parent, np.int32),
        "exists": np.ones((T, N), dtype=bool),
    }
    for name in ("open", "toggled", "broken", "sliced", "filled"):
        dense[name] = np.zeros((T, N), dtype=bool)
    dense.update({k: np.asarray(v, dtype=bool) for k, v in (flags or {}).items()})
    steps = Steps(
        action=["Initialize"] + ["Pass"] * (T - 1),
        target=np.full(T, -1, np.int32),
        receptacle=np.full(T, -1, np.int32),
        args=[{} for _ in range(T)],
        success=np.ones(T, dtype=bool),
        error=[""] * T,
        pose=np.zeros((T, 5), np.float32) if pose is None else np.asarray(pose, np.float32),
        held=np.full(T, -1, np.int32),
    )
    ents = Entities(
        ids,
        list(types),
        ids,
        attributes or [{} for _ in types],
        capabilities or [() for _ in types],
    )
    return Episode(
        episode_id=make_episode_id("fixture", "tiny", T, N),
        family="household",
        backend="fixture",
        scene_id="tiny",
        seed=0,
        task={},
        steps=steps,
        entities=ents,
        timeline=Timeline.from_dense(dense),
        events=number_events(list(events), list(types)),
    )
