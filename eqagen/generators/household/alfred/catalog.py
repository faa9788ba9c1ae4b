"""The scene catalog: what all trajectories of a data root say about each floor plan.

One trajectory names only the static objects its own expert touched; the layouts list only openable
and receptacle objects. Streaming over every ``traj_data.json`` of a root (of any size: one file in
memory at a time, per floor plan only sets of ids and cells) collects, per floor plan, every static
objectId seen (faucets, lamps, receptacles the layout leaves out), the movable object types seen in
the recorded poses, the cells experts stood on, and the coverage: which of the layout's object types
have a known static position or a recorded pose. Scenes of the test split (no plans) then borrow the
faucets, lamps and cells their floor plan shows in other trajectories.
"""

from __future__ import annotations

import json
import os
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from eqagen.core import DataFileError
from eqagen.generators.household.alfred.reader import (
    iter_trajectory_paths,
    parse_object_id,
    read_layout,
    read_trajectory,
)
from eqagen.generators.household.alfred.scene_build import action_object_ids, expert_cells
from eqagen.generators.household.objects import catalog

CATALOG_VERSION = 1


@dataclass
class FloorPlanEntry:
    floor_plan: str
    n_trajectories: int = 0
    static: dict[str, int] = field(default_factory=dict)  # objectId -> trajectories naming it
    movable_types: Counter = field(default_factory=Counter)  # type -> trajectories with a pose of it
    cells: set[tuple[float, float]] = field(default_factory=set)
    task_types: Counter = field(default_factory=Counter)

    def add(self, traj: Any) -> None:
        self.n_trajectories += 1
        for oid in set(action_object_ids(traj)):
            if not _is_pickupable(parse_object_id(oid, traj.path).object_type):
                self.static[oid] = self.static.get(oid, 0) + 1
        self.movable_types.update({p.object_type for p in traj.object_poses})
        self.cells |= {(float(x), float(z)) for x, z in expert_cells(traj)}
        if traj.task_type:
            self.task_types[traj.task_type] += 1

    def to_dict(self, layout_types: list[str] | None, layout_ids: list[str]) -> dict[str, Any]:
        static_types = {parse_object_id(o).object_type for o in list(self.static) + layout_ids}
        known = static_types | set(self.movable_types)
        wanted = sorted(set(layout_types or []))
        return {
            "floor_plan": self.floor_plan,
            "n_trajectories": self.n_trajectories,
            "static_objects": dict(sorted(self.static.items())),
            "layout_receptacles": sorted(layout_ids),
            "movable_types": dict(sorted(self.movable_types.items())),
            "cells": sorted(self.cells),
            "task_types": dict(sorted(self.task_types.items())),
            "coverage": {
                "layout_types": len(wanted),
                "types_known": len([t for t in wanted if t in known]),
                "fraction": round(len([t for t in wanted if t in known]) / max(len(wanted), 1), 4),
                "missing_types": [t for t in wanted if t not in known],
            },
        }


def _is_pickupable(object_type: str) -> bool:
    cat = catalog()
    return object_type in cat.index and cat.get(object_type).can("pickupable")


def build_catalog(root: str | os.PathLike[str], layouts_dir: str | os.PathLike[str] | None) -> dict[str, dict]:
    """Stream over every trajectory under ``root``; one catalog entry per floor plan seen."""
    entries: dict[str, FloorPlanEntry] = {}
    for path in iter_trajectory_paths(root):
        traj = read_trajectory(path)
        entries.setdefault(traj.floor_plan, FloorPlanEntry(traj.floor_plan)).add(traj)
    out = {}
    for fp in sorted(entries, key=lambda f: int(f[len("FloorPlan") :])):
        layout = read_layout(fp, layouts_dir) if layouts_dir is not None else None
        out[fp] = entries[fp].to_dict(layout.object_types if layout else None, list(layout.openable) if layout else [])
    return out


def write_catalog(entries: dict[str, dict], out_dir: str | os.PathLike[str], root: str) -> Path:
    """``OUT/FloorPlanN.json`` per floor plan and ``OUT/index.json`` (summary and coverage)."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for fp, entry in entries.items():
        (out / f"{fp}.json").write_text(json.dumps(entry, indent=1, sort_keys=True) + "\n")
    summary = {
        "version": CATALOG_VERSION,
        "root": root,
        "n_floor_plans": len(entries),
        "n_trajectories": sum(e["n_trajectories"] for e in entries.values()),
        "coverage": {fp: e["coverage"]["fraction"] for fp, e in entries.items()},
    }
    (out / "index.json").write_text(json.dumps(summary, indent=1, sort_keys=True) + "\n")
    return out / "index.json"


@dataclass
class SceneCatalog:
    """Catalog entries by floor plan, as :func:`build_alfred_scene` consumes them."""

    entries: dict[str, dict] = field(default_factory=dict)

    def static_objects(self, floor_plan: str) -> dict[str, str]:
        return {oid: "catalog" for oid in self.entries.get(floor_plan, {}).get("static_objects", {})}

    def cells(self, floor_plan: str) -> np.ndarray:
        return np.asarray(self.entries.get(floor_plan, {}).get("cells", []), dtype=np.float64).reshape(-1, 2)

    @classmethod
    def read(cls, directory: str | os.PathLike[str]) -> SceneCatalog:
        d = Path(directory)
        if not (d / "index.json").is_file():
            raise DataFileError(
                d / "index.json", None, "scene catalog not found", "run `eqagen alfred index ROOT --out DIR`"
            )
        entries: dict[str, dict] = defaultdict(dict)
        for path in sorted(d.glob("FloorPlan*.json")):
            try:
                entries[path.stem] = json.loads(path.read_text())
            except json.JSONDecodeError as exc:
                raise DataFileError(path, None, f"not valid JSON ({exc})") from exc
        return cls(dict(entries))
