"""AI2-THOR object types: capabilities, receptacle rules and static attributes.

The facts live in two data files next to this module, readable on their own:

- ``data/object_types.csv``: one row per type with the iTHOR room kinds it appears in, its
  capabilities (AI2-THOR object-type properties), plausible colors and materials, a utility phrase
  and a size class, and a ``source`` column saying where the row's facts come from;
- ``data/receptacle_objects.json``: which object types each receptacle type may hold (ALFRED's
  compatibility table), ALFRED's heatable/coolable/cleanable sets and what slicing spawns.

:func:`catalog` loads both once and exposes them as lookups and as numpy arrays indexed by type.
"""

from __future__ import annotations

import csv
import json
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from eqagen.core import DataFileError, UnknownNameError

DATA_DIR = Path(__file__).parent / "data"
TYPES_FILE = DATA_DIR / "object_types.csv"
RULES_FILE = DATA_DIR / "receptacle_objects.json"
EXTENTS_FILE = DATA_DIR / "object_extents.csv"  # rebuilt by benchmarks/derive_object_extents.py
PIVOTS = ("bottom", "centre", "top")
MOUNTS = ("floor", "wall", "fixed", "loose")

CAPABILITIES = (
    "pickupable",
    "receptacle",
    "openable",
    "toggleable",
    "sliceable",
    "breakable",
    "fillable",
    "dirtyable",
    "cookable",
    "heat_source",
    "cold_source",
    "used_up",
    "enclosing",
    "heatable",
    "coolable",
    "cleanable",
)
ROOM_CODES = {"K": "kitchen", "L": "living_room", "B": "bedroom", "T": "bathroom"}


@dataclass(frozen=True)
class ObjectType:
    name: str
    rooms: tuple[str, ...]
    capabilities: tuple[str, ...]
    colors: tuple[str, ...]
    materials: tuple[str, ...]
    utility: str
    size: str
    source: str

    def can(self, capability: str) -> bool:
        return capability in self.capabilities


@dataclass(frozen=True)
class Extent:
    """The box of one object type around its reported position (``data/object_extents.csv``): a square
    footprint ``width`` wide, ``height`` tall, the position at the box's ``pivot``; contents rest ``rest_y``
    above the position; ``mount`` says what holds it up (floor, wall, the furniture it is fixed to, a
    receptacle)."""

    width: float
    height: float
    pivot: str
    rest_y: float | None
    mount: str

    def vertical(self) -> tuple[float, float]:
        """The box's bottom and top relative to the position's height."""
        below = {"bottom": 0.0, "centre": self.height / 2, "top": self.height}[self.pivot]
        return -below, self.height - below


@dataclass(frozen=True)
class Catalog:
    """All object types, with per-type arrays for vectorised lookups in the world."""

    types: tuple[ObjectType, ...]
    index: dict[str, int]
    holds: dict[str, frozenset[str]]  # receptacle type -> object types it may hold
    slices: dict[str, tuple[str, int]]  # sliceable type -> (slice type, number of slices)
    capability: dict[str, np.ndarray]  # capability -> bool [n_types]
    compatible: np.ndarray  # bool [n_types (receptacle), n_types (object)]
    extents: dict[str, Extent]  # object type -> its box

    def get(self, name: str) -> ObjectType:
        if name not in self.index:
            raise UnknownNameError("object type", name, self.index)
        return self.types[self.index[name]]

    def type_id(self, name: str) -> int:
        self.get(name)
        return self.index[name]

    def can_hold(self, receptacle: str, obj: str) -> bool:
        return obj in self.holds.get(receptacle, ())

    def in_room(self, room_kind: str) -> list[str]:
        return [t.name for t in self.types if room_kind in t.rooms]


def _split(cell: str) -> tuple[str, ...]:
    return tuple(p for p in cell.replace(";", " ").split() if p)


def _read_types(path: Path) -> list[ObjectType]:
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    out = []
    for row in csv.DictReader(lines):
        caps = _split(row["capabilities"])
        bad = [c for c in caps if c not in CAPABILITIES]
        if bad:
            raise DataFileError(
                path, f"{row['object_type']}.capabilities", f"unknown capability {bad}", f"use only {CAPABILITIES}"
            )
        rooms = tuple(ROOM_CODES[c] for c in row["rooms"])
        colors, materials = tuple(row["colors"].split(";")), tuple(row["materials"].split(";"))
        out.append(
            ObjectType(row["object_type"], rooms, caps, colors, materials, row["utility"], row["size"], row["source"])
        )
    return out


def _expand(names: list[str], groups: dict[str, list[str]]) -> set[str]:
    out: set[str] = set()
    for n in names:
        out |= set(groups[n[1:]]) if n.startswith("@") else {n}
    return out


def _read_rules(path: Path, known: set[str]) -> tuple[dict[str, frozenset[str]], dict, dict]:
    raw = json.loads(path.read_text())
    holds = {r: frozenset(_expand(objs, raw["groups"])) for r, objs in raw["receptacles"].items()}
    for r, objs in holds.items():
        unknown = sorted((objs | {r}) - known)
        if unknown:
            raise DataFileError(
                path,
                f"receptacles.{r}",
                f"unknown object types {unknown}",
                f"add them to {TYPES_FILE.name} or remove them",
            )
    slices = {k: (v[0], int(v[1])) for k, v in raw["slices"].items()}
    return holds, raw["action_objects"], slices


def _number(row: dict[str, str], key: str, path: Path) -> float:
    try:
        return float(row[key])
    except (TypeError, ValueError):
        raise DataFileError(path, f"{row['object_type']}.{key}", f"not a number: {row[key]!r}", "give metres") from None


def _read_extents(path: Path, known: set[str]) -> dict[str, Extent]:
    lines = [ln for ln in path.read_text().splitlines() if ln and not ln.startswith("#")]
    out = {}
    for row in csv.DictReader(lines):
        name = row["object_type"]
        for key, allowed in (("pivot", PIVOTS), ("mount", MOUNTS)):
            if row[key] not in allowed:
                raise DataFileError(path, f"{name}.{key}", f"{row[key]!r} is not one of {allowed}", "fix the row")
        rest = _number(row, "rest_y", path) if row["rest_y"] else None
        out[name] = Extent(_number(row, "width", path), _number(row, "height", path), row["pivot"], rest, row["mount"])
    missing = sorted(known - set(out))
    if missing:
        fix = "rerun benchmarks/derive_object_extents.py after adding them to its table"
        raise DataFileError(path, "object_type", f"no extent for {missing}", fix)
    return out


def build_catalog(
    types_file: Path = TYPES_FILE, rules_file: Path = RULES_FILE, extents_file: Path = EXTENTS_FILE
) -> Catalog:
    types = _read_types(types_file)
    index = {t.name: i for i, t in enumerate(types)}
    extents = _read_extents(extents_file, set(index))
    holds, action_objects, slices = _read_rules(rules_file, set(index))
    # ALFRED's heat/cool/clean sets become capabilities, so one lookup answers "can this be heated?".
    types = [
        ObjectType(
            t.name,
            t.rooms,
            t.capabilities + tuple(a for a, s in action_objects.items() if t.name in s),
            t.colors,
            t.materials,
            t.utility,
            t.size,
            t.source,
        )
        for t in types
    ]
    n = len(types)
    capability = {c: np.array([c in t.capabilities for t in types], dtype=bool) for c in CAPABILITIES}
    compatible = np.zeros((n, n), dtype=bool)
    for r, objs in holds.items():
        compatible[index[r], [index[o] for o in objs]] = True
    return Catalog(tuple(types), index, holds, slices, capability, compatible, extents)


@lru_cache(maxsize=1)
def catalog() -> Catalog:
    """The project's object catalog (loaded once per process)."""
    return build_catalog()


def markdown_table(cat: Catalog | None = None) -> str:
    """The object table as Markdown (used to write docs/household.md)."""
    cat = cat or catalog()
    head = "| type | rooms | capabilities | colors | material | utility | size | source |\n" + "|---" * 8 + "|"
    rows = [
        f"| {t.name} | {', '.join(t.rooms)} | {', '.join(t.capabilities)} | {', '.join(t.colors)} | "
        f"{', '.join(t.materials)} | {t.utility} | {t.size} | {t.source} |"
        for t in cat.types
    ]
    return "\n".join([head, *rows])
