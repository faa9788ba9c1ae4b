"""The per-step world state as columnar ``[t, entity]`` arrays, stored as initial state plus changes.

A field is one array indexed ``[t, entity, ...]``: ``position`` (float32, ``[T, N, 3]``, episode frame),
``visible`` (bool), ``parent`` (int32 entity index of the receptacle holding it, -1 for none) and one
bool array per state flag (``open``, ``toggled``, ``broken``, ``sliced``, ``filled``, ``dirty``, ``hot``,
``cold``, ``exists``, ...). On disk and in memory the timeline keeps only row 0 and, per field, the
list of ``(t, entity, value)`` changes; :meth:`Timeline.field` rebuilds a full array vectorised.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

CORE_FIELDS = ("position", "visible", "parent")


@dataclass
class FieldChanges:
    """The changes of one field, sorted by step: entity ``entity[i]`` takes ``value[i]`` from ``t[i]`` on."""

    t: np.ndarray  # int32 [K]
    entity: np.ndarray  # int32 [K]
    value: np.ndarray  # [K, ...] same dtype as the field

    def __len__(self) -> int:
        return int(self.t.shape[0])


@dataclass
class Timeline:
    """Initial state plus changes for every field; full arrays rebuilt (and cached) on demand."""

    n_steps: int
    initial: dict[str, np.ndarray]  # field -> [N, ...]
    changes: dict[str, FieldChanges]
    _cache: dict[str, np.ndarray] = field(default_factory=dict, repr=False, compare=False)

    @property
    def n_entities(self) -> int:
        return int(self.initial["visible"].shape[0])

    @property
    def fields(self) -> tuple[str, ...]:
        return tuple(self.initial)

    @property
    def flags(self) -> tuple[str, ...]:
        """The state-flag fields (every field but position, visible and parent)."""
        return tuple(f for f in self.initial if f not in CORE_FIELDS)

    def field(self, name: str) -> np.ndarray:
        """The full ``[T, N, ...]`` array of one field, rebuilt from the changes (read-only, cached)."""
        if name not in self._cache:
            arr = rebuild_field(self.n_steps, self.initial[name], self.changes[name])
            arr.setflags(write=False)
            self._cache[name] = arr
        return self._cache[name]

    def __getitem__(self, name: str) -> np.ndarray:
        return self.field(name)

    def state_at(self, t: int) -> dict[str, np.ndarray]:
        """Every field at one step (``[N, ...]`` each)."""
        return {name: self.field(name)[t] for name in self.initial}

    def n_changes(self) -> int:
        return sum(len(c) for c in self.changes.values())

    @classmethod
    def from_dense(cls, dense: dict[str, np.ndarray]) -> Timeline:
        """Compress full ``[T, N, ...]`` arrays recorded step by step into initial state plus changes."""
        n_steps = next(iter(dense.values())).shape[0]
        initial = {name: np.array(arr[0]) for name, arr in dense.items()}
        changes = {name: diff_field(arr) for name, arr in dense.items()}
        return cls(n_steps=n_steps, initial=initial, changes=changes)


def diff_field(arr: np.ndarray) -> FieldChanges:
    """The changes between consecutive rows of a ``[T, N, ...]`` array, sorted by (t, entity)."""
    if arr.shape[0] < 2:
        return FieldChanges(np.zeros(0, np.int32), np.zeros(0, np.int32), arr[:0, 0] if arr.ndim > 1 else arr[:0])
    differs = arr[1:] != arr[:-1]
    if differs.ndim > 2:
        differs = differs.reshape(differs.shape[0], differs.shape[1], -1).any(axis=2)
    t_minus_1, ent = np.nonzero(differs)
    t = (t_minus_1 + 1).astype(np.int32)
    return FieldChanges(t=t, entity=ent.astype(np.int32), value=np.array(arr[t, ent]))


def rebuild_field(n_steps: int, initial: np.ndarray, changes: FieldChanges) -> np.ndarray:
    """Vectorised replay: for each (t, entity) take the latest change at or before t, else the initial."""
    n = initial.shape[0]
    out = np.broadcast_to(initial, (n_steps, *initial.shape)).copy()
    if len(changes) == 0:
        return out
    last = np.full((n_steps, n), -1, dtype=np.int64)
    # Changes are sorted by t, so a later change of the same (t, entity) overwrites an earlier one.
    last[changes.t, changes.entity] = np.arange(len(changes))
    last = np.maximum.accumulate(last, axis=0)
    hit = last >= 0
    out[hit] = changes.value[last[hit]]
    return out


class TimelineRecorder:
    """Records full state per step into preallocated buffers; :meth:`finish` compresses it.

    Simulators call :meth:`record` once per step with their current arrays; rows are copied, so the
    simulator may keep mutating its own arrays.
    """

    def __init__(self, max_steps: int, template: dict[str, np.ndarray]):
        self._buffers = {name: np.empty((max_steps, *arr.shape), dtype=arr.dtype) for name, arr in template.items()}
        self._t = 0

    @property
    def n_recorded(self) -> int:
        return self._t

    def record(self, state: dict[str, np.ndarray]) -> None:
        t = self._t
        if t >= next(iter(self._buffers.values())).shape[0]:
            raise IndexError("TimelineRecorder is full: more steps than max_steps")
        for name, buf in self._buffers.items():
            buf[t] = state[name]
        self._t = t + 1

    def dense(self) -> dict[str, np.ndarray]:
        return {name: buf[: self._t] for name, buf in self._buffers.items()}

    def finish(self) -> Timeline:
        return Timeline.from_dense(self.dense())
