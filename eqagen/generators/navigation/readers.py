"""Readers for HM3D-style scene files: ``.semantic.txt``, top-down navigability maps, object boxes.

- ``<scene>.semantic.txt`` (HM3D-Semantics): a header line containing "HM3D Semantic Annotations",
  then one line per object ``id,HEX,"category",regionId`` (the hex colour is the object's annotation
  colour in the semantic texture, not its appearance, so it is not used as the object's colour).
- Navigability maps as habitat-sim's ``PathFinder.get_topdown_view`` gives them, saved with numpy:
  ``*_topdown_binary.npy`` (bool ``[H, W]``) and optionally ``*_topdown_islands.npy`` (int, -1 or the
  island index). Rows run along +z and columns along +x from ``origin`` (the navmesh bounds' minimum
  corner), ``meters_per_pixel`` apart.
- Object boxes, which ``.semantic.txt`` lacks (they live in the mesh): a CSV
  ``id,xmin,ymin,zmin,xmax,ymax,zmax`` in native coordinates, one row per semantic id.

Every malformed input raises :class:`~eqagen.core.DataFileError` naming the file, the line or field and
the fix.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from eqagen.core import DataFileError
from eqagen.core.limits import check_npy_size, checked_coordinates
from eqagen.generators.navigation.grid import NavGrid, label_islands
from eqagen.generators.navigation.scene import NavScene, SceneObject, SceneRegion

SEMANTIC_HEADER = "HM3D Semantic Annotations"
BOX_COLUMNS = ("id", "xmin", "ymin", "zmin", "xmax", "ymax", "zmax")
MAX_ID = 2**31  # object and region ids are stored as int32


@dataclass(frozen=True)
class SemanticRecord:
    object_id: int
    hex_color: str
    category: str
    region_id: int


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise DataFileError(path, None, "file not found", "check the path in the config")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise DataFileError(path, None, f"not UTF-8 text ({err})", "pass the scene's .semantic.txt") from err


def read_semantic_txt(path: str | Path) -> list[SemanticRecord]:
    path = Path(path)
    lines = _read_text(path).splitlines()
    if not lines or SEMANTIC_HEADER not in lines[0]:
        raise DataFileError(
            path,
            "line 1",
            f"header must contain '{SEMANTIC_HEADER}'",
            "pass an HM3D-Semantics <scene>.semantic.txt file",
        )
    records = []
    for n, row in enumerate(csv.reader(lines[1:]), start=2):
        if not row:
            continue
        records.append(_semantic_row(path, n, row))
    return records


def _semantic_row(path: Path, n: int, row: list[str]) -> SemanticRecord:
    fix = 'each line must be id,HEX,"category",regionId, e.g. 12,9DC6A3,"chair",3'
    if len(row) != 4:
        raise DataFileError(path, f"line {n}", f"expected 4 fields, found {len(row)}", fix)
    oid, hex_color, category, region = (v.strip() for v in row)
    if not (oid.isdecimal() and region.lstrip("-").isdecimal()) or max(int(oid), abs(int(region))) >= MAX_ID:
        raise DataFileError(
            path, f"line {n}", f"id '{oid}' and regionId '{region}' must be integers below {MAX_ID}", fix
        )
    if len(hex_color) != 6 or any(c not in "0123456789abcdefABCDEF" for c in hex_color):
        raise DataFileError(path, f"line {n}", f"colour '{hex_color}' is not 6 hex digits", fix)
    if not category:
        raise DataFileError(path, f"line {n}", "empty category", fix)
    return SemanticRecord(int(oid), hex_color.upper(), category, int(region))


def _load_npy(path: Path) -> np.ndarray:
    if not path.is_file():
        raise DataFileError(path, None, "file not found", "check the path in the config")
    check_npy_size(path, "shape")
    try:
        arr = np.load(path, allow_pickle=False)
    except Exception as err:  # numpy's header parser raises many types (ValueError, EOFError, TokenError, ...)
        raise DataFileError(path, None, f"not a numpy .npy array ({err!r})", "save the map with numpy.save") from err
    if not isinstance(arr, np.ndarray) or arr.dtype.kind not in "biuf":
        got = f"{type(arr).__name__} of {getattr(arr, 'dtype', '?')}"
        raise DataFileError(path, "values", f"expected a numeric map, got {got}", "save a [H, W] map of numbers")
    if arr.ndim != 2 or min(arr.shape) == 0:
        raise DataFileError(path, "shape", f"expected a 2-D map, got shape {arr.shape}", "save a [H, W] top-down map")
    return arr


def read_topdown_map(
    binary: str | Path,
    islands: str | Path | None = None,
    meters_per_pixel: float = 0.1,
    origin: tuple[float, float] = (0.0, 0.0),
    floor_y: float = 0.0,
) -> NavGrid:
    """A :class:`NavGrid` from habitat-sim top-down maps; islands are checked against navigability."""
    binary = Path(binary)
    nav = _load_npy(binary)
    if nav.dtype != bool and not np.isin(nav, (0, 1)).all():
        raise DataFileError(binary, "values", "a binary map holds only 0/1 or True/False", "pass *_topdown_binary.npy")
    nav = nav.astype(bool)
    if islands is None:
        return NavGrid(nav, meters_per_pixel, origin, floor_y, islands=label_islands(nav))
    islands = Path(islands)
    isl = _load_npy(islands)
    if isl.shape != nav.shape:
        raise DataFileError(
            islands,
            "shape",
            f"{isl.shape} differs from the binary map's {nav.shape}",
            "pass the islands map of the same scene and resolution",
        )
    if not np.issubdtype(isl.dtype, np.integer) or ((isl >= 0) != nav).any():
        raise DataFileError(
            islands,
            "values",
            "island ids must be integers, -1 exactly where not navigable",
            "pass *_topdown_islands.npy saved with the binary map",
        )
    return NavGrid(nav, meters_per_pixel, origin, floor_y, islands=isl.astype(np.int32))


def read_boxes_csv(path: str | Path) -> dict[int, tuple[float, ...]]:
    path = Path(path)
    rows = list(csv.reader(_read_text(path).splitlines()))
    if not rows or tuple(c.strip() for c in rows[0]) != BOX_COLUMNS:
        raise DataFileError(path, "line 1", f"header must be {','.join(BOX_COLUMNS)}", "write the header row")
    boxes: dict[int, tuple[float, ...]] = {}
    for n, row in enumerate(rows[1:], start=2):
        try:
            oid, *vals = row
            box = tuple(float(v) for v in vals)
            if len(box) != 6 or any(box[i] > box[i + 3] for i in range(3)):
                raise ValueError("need six numbers with min <= max")
            checked_coordinates(box, path, f"line {n}", "id,xmin,ymin,zmin,xmax,ymax,zmax in metres")
            if not 0 <= int(oid) < MAX_ID:
                raise ValueError(f"id must lie in 0..{MAX_ID - 1}")
            boxes[int(oid)] = box
        except ValueError as err:
            raise DataFileError(
                path, f"line {n}", f"bad box row {row}: {err}", "id,xmin,ymin,zmin,xmax,ymax,zmax"
            ) from err
    return boxes


def load_hm3d_scene(
    scene_id: str,
    topdown_binary: str | Path,
    topdown_islands: str | Path | None = None,
    semantic: str | Path | None = None,
    boxes: str | Path | None = None,
    meters_per_pixel: float = 0.1,
    origin: tuple[float, float] = (0.0, 0.0),
    floor_y: float = 0.0,
) -> NavScene:
    """A scene from HM3D files (see :func:`semantic_scene`)."""
    grid = read_topdown_map(topdown_binary, topdown_islands, meters_per_pixel, tuple(origin), floor_y)  # type: ignore[arg-type]
    return semantic_scene(scene_id, grid, semantic, boxes, source="hm3d-files")


def semantic_scene(
    scene_id: str, grid: NavGrid, semantic: str | Path | None, boxes: str | Path | None, source: str
) -> NavScene:
    """Objects need both the semantic file and boxes; a region's box is the union of its objects'
    boxes and its category is unknown (HM3D's files do not name regions). A top-down map has no
    walls, so nothing blocks sight."""
    records = read_semantic_txt(semantic) if semantic else []
    box_of = read_boxes_csv(boxes) if boxes else {}
    placed = [r for r in records if r.object_id in box_of]
    region_ids = sorted({r.region_id for r in placed if r.region_id >= 0})
    index_of = {rid: i for i, rid in enumerate(region_ids)}
    objects = [
        SceneObject(r.object_id, r.category, index_of.get(r.region_id, -1), box_of[r.object_id])  # type: ignore[arg-type]
        for r in placed
    ]
    regions = [
        SceneRegion(f"region_{rid}", "unknown", _union([box_of[r.object_id] for r in placed if r.region_id == rid]))
        for rid in region_ids
    ]
    region_map = _rasterise_regions(grid, regions)
    return NavScene(scene_id, grid, objects, regions, region_map, np.ones(grid.shape, dtype=bool), source=source)


def _union(boxes: list[tuple[float, ...]]) -> tuple[float, float, float, float, float, float]:
    b = np.asarray(boxes, dtype=np.float64)
    return tuple(float(v) for v in np.concatenate([b[:, :3].min(axis=0), b[:, 3:].max(axis=0)]))  # type: ignore[return-value]


def _rasterise_regions(grid: NavGrid, regions: list[SceneRegion]) -> np.ndarray:
    out = np.full(grid.shape, -1, dtype=np.int32)
    h, w = grid.shape
    for i, reg in reversed(list(enumerate(regions))):  # the first listed wins where boxes overlap
        lo = np.floor(grid.to_cell(np.array(reg.box[:3]))).astype(int)
        hi = np.ceil(grid.to_cell(np.array(reg.box[3:]))).astype(int)
        out[max(lo[0], 0) : min(hi[0], h), max(lo[1], 0) : min(hi[1], w)] = i
    return out
