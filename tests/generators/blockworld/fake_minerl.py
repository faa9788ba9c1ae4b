"""A FAKE MineRL environment, for contract tests only: MineRL needs Java and Minecraft and cannot be
installed here, so this stand-in follows MineRL 1.0's documented spaces and nothing more.

Documented spaces it follows (MineRL 1.0 human-control env specs):

- actions: a dict with the binary keys ``ESC attack back drop forward hotbar.1..hotbar.9 inventory jump
  left pickItem right sneak sprint swapHands use`` and ``camera``, a float array ``[delta pitch, delta
  yaw]`` in degrees; ``env.action_space.noop()`` returns the all-zero action;
- observations: ``pov`` (H x W x 3 uint8) and, with ``ObservationFromCurrentLocation``,
  ``location_stats`` (``xpos ypos zpos`` feet position, ``pitch yaw`` degrees);
- the gym 0.19 API: ``reset() -> obs``, ``step(action) -> (obs, reward, done, info)``, ``close()``.

Physics is a crude stand-in: walking moves 0.25 blocks per tick in the direction the keys say (0.33
sprinting), a block in the way stops the move unless ``jump`` is held and one block up is free, and the
player drops onto the floor below. The world is read from the save directory MineRL would be given;
the player starts at level.dat's spawn (the centre of that block), facing south (yaw 0).
"""

from __future__ import annotations

import numpy as np

from eqagen.generators.blockworld.navigation import standable_mask
from eqagen.generators.blockworld.savedir import _load_level, read_save

BINARY_KEYS = (
    "ESC", "attack", "back", "drop", "forward", *(f"hotbar.{i}" for i in range(1, 10)), "inventory", "jump", "left",
    "pickItem", "right", "sneak", "sprint", "swapHands", "use",
)  # fmt: skip


class _ActionSpace:
    def noop(self) -> dict:
        out = dict.fromkeys(BINARY_KEYS, 0)
        out["camera"] = np.zeros(2, dtype=np.float32)
        return out


class FakeMineRLEnv:
    """Follows MineRL's documented observation and action spaces; NOT MineRL."""

    def __init__(self, save_dir, params: dict, start_yaw: float = 0.0, resolution=(64, 36)):
        self.world = read_save(save_dir)
        level = _load_level(save_dir / "level.dat")
        self.spawn = np.array([int(level["SpawnX"]) + 0.5, float(int(level["SpawnY"])), int(level["SpawnZ"]) + 0.5])
        self.stand = standable_mask(self.world)
        self.origin = np.asarray(self.world.origin, float)
        self.start_yaw, self.resolution = start_yaw, resolution
        self.action_space = _ActionSpace()
        self.steps, self.closed = 0, False

    def _obs(self) -> dict:
        x, y, z = self.pos
        return {
            "pov": np.zeros((self.resolution[1], self.resolution[0], 3), dtype=np.uint8),
            "location_stats": {"xpos": x, "ypos": y, "zpos": z, "pitch": self.pitch, "yaw": self.yaw},
        }

    def reset(self) -> dict:
        self.pos, self.yaw, self.pitch = self.spawn.copy(), self.start_yaw, 0.0
        return self._obs()

    def _standable(self, p: np.ndarray) -> bool:
        v = np.floor(p - self.origin).astype(int)
        return all(0 <= v[i] < self.stand.shape[i] for i in range(3)) and bool(self.stand[tuple(v)])

    def _move(self, action: dict) -> None:
        yaw = np.radians(self.yaw)
        fwd, right = np.array([-np.sin(yaw), 0, np.cos(yaw)]), np.array([-np.cos(yaw), 0, -np.sin(yaw)])
        d = (action["forward"] - action["back"]) * fwd + (action["right"] - action["left"]) * right
        if not d.any():
            return
        nxt = self.pos + d * (0.33 if action["sprint"] else 0.25)
        for dy in (0, 1, -1, -2, -3):  # level, climb (with jump), then drops
            cand = nxt + np.array([0.0, dy, 0.0])
            if dy == 1 and not action["jump"]:
                continue
            if self._standable(cand):
                self.pos = np.round(cand, 6)
                return

    def step(self, action: dict):
        missing = set(BINARY_KEYS) - set(action)
        if missing or np.asarray(action.get("camera")).shape != (2,):
            raise ValueError(f"action does not follow MineRL's space: missing {sorted(missing)} or bad camera")
        cam = np.asarray(action["camera"], dtype=np.float64)
        self.pitch = float(np.clip(self.pitch + cam[0], -90, 90))
        self.yaw = float((self.yaw + cam[1]) % 360.0)
        self._move(action)
        self.steps += 1
        return self._obs(), 0.0, False, {}

    def close(self) -> None:
        self.closed = True
