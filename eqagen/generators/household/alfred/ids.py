"""Mapping ALFRED's objectIds onto the objectIds of our household world.

AI2-THOR fixes an object's id when the scene loads; ALFRED's ``object_poses`` are the poses after
physics settled, so an id and the pose it came from can differ by a centimetre of rounding, and
AI2-THOR prints zero as ``00.00`` or ``-00.00``. Ids are therefore matched by type and position
(within :data:`~.scene_build.ID_TOLERANCE`, nearest first) against the world's *initial* positions.
A slice ``Apple|..|AppleSliced_6`` maps to the whole apple's slices in the order first named (our
object table may spawn fewer slices than AI2-THOR does; ALFRED never uses more than two per episode).
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

from eqagen.generators.household.alfred.reader import parse_object_id
from eqagen.generators.household.alfred.scene_build import ID_TOLERANCE


class IdResolver:
    def __init__(self, native_ids: list[str], types: list[str], positions: np.ndarray, whole_of: np.ndarray):
        self.native_ids = native_ids
        self.by_type: dict[str, list[int]] = defaultdict(list)
        for i, t in enumerate(types):
            if whole_of[i] < 0:
                self.by_type[t].append(i)
        self.positions = np.asarray(positions, dtype=np.float64).copy()
        self.slices_of: dict[int, list[int]] = defaultdict(list)
        for i, w in enumerate(whole_of):
            if w >= 0:
                self.slices_of[int(w)].append(i)
        self.slice_map: dict[str, int] = {}
        self.cache: dict[str, str] = {}

    def _whole(self, object_type: str, position: tuple[float, float, float]) -> int:
        cands = self.by_type.get(object_type, [])
        if not cands:
            return -1
        d = np.abs(self.positions[cands] - np.asarray(position)).max(axis=1)
        k = int(np.argmin(d))
        return cands[k] if d[k] <= ID_TOLERANCE else -1

    def _slice(self, object_id: str, whole: int) -> int:
        if object_id not in self.slice_map:
            used = {v for k, v in self.slice_map.items()}
            free = [s for s in self.slices_of.get(whole, []) if s not in used]
            if not free:
                return -1
            self.slice_map[object_id] = free[0]
        return self.slice_map[object_id]

    def resolve(self, object_id: str | None) -> str | None:
        """Our objectId for an ALFRED one; unmatched ids pass through unchanged (the world rejects them)."""
        if object_id is None:
            return None
        if object_id not in self.cache:
            self.cache[object_id] = self._resolve(object_id)
        return self.cache[object_id]

    def _resolve(self, object_id: str) -> str:
        pid = parse_object_id(object_id)
        if "Sliced" in pid.suffix:
            whole = self._whole(pid.base_type, pid.position)
            i = self._slice(object_id, whole) if whole >= 0 else -1
        else:
            i = self._whole(pid.object_type, pid.position)
        return self.native_ids[i] if i >= 0 else object_id
