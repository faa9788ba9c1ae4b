"""PQB-EQA's block lists: first line ``sx sy sz``, then one ``x y z minecraft:block[properties]`` per block.

Air is not listed. Some real files list blocks one past their stated size (``tree.txt`` says height 4
and has a block at y=4, ``duck.txt`` likewise), so a block may lie at most :data:`HEADER_SLACK` past the
stated size, the array is made large enough for every listed block and the stated size is kept in
``meta["header_size"]``; a block farther out is an error naming its line (a damaged coordinate would
otherwise grow the world). Every block id is namespaced (``minecraft:stone``), as PQB writes them: a line
cut short (``minecraf``) is an error, not a new block.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from eqagen.core import DataFileError
from eqagen.generators.blockworld.palette import Palette, canonical_state, quoted_state
from eqagen.generators.blockworld.world import BIOMES, BlockWorld

# Largest world a file may describe (voxels): a damaged size or coordinate must not allocate gigabytes.
MAX_VOXELS = 2**28
HEADER_SLACK = 1  # blocks a listed block may lie past the stated size (PQB's own tree.txt and duck.txt)
_FIX = "each line after the first must be 'x y z minecraft:block[key=value,...]' with integer x, y, z >= 0"


def _parse_header(path: Path, line: str) -> tuple[int, int, int]:
    parts = line.split()
    if len(parts) != 3 or not all(p.lstrip("-").isdigit() for p in parts):
        raise DataFileError(
            path,
            "line 1 (size)",
            f"expected 'sx sy sz', found {line[:60]!r}",
            "the first line must be three integers: the size in x, y and z",
        )
    size = tuple(int(p) for p in parts)
    if min(size) <= 0:
        raise DataFileError(path, "line 1 (size)", f"size {size} is not positive", "sizes must be >= 1")
    return size  # type: ignore[return-value]


def _parse_lines(path: Path, lines: list[str]) -> tuple[np.ndarray, list[str]]:
    coords = np.zeros((len(lines), 3), dtype=np.int64)
    states: list[str] = []
    seen: dict[str, str] = {}  # raw text -> canonical state (a file repeats few distinct states)
    for i, line in enumerate(lines):
        parts = line.split(None, 3)
        if len(parts) != 4:
            raise DataFileError(path, f"line {i + 2}", f"expected 4 fields, found {len(parts)}: {line[:60]!r}", _FIX)
        try:
            xyz = [int(v) for v in parts[:3]]
            if max(abs(v) for v in xyz) >= 2**31:
                raise ValueError(f"coordinate {xyz} out of range")
            coords[i] = xyz
            raw = parts[3]
            if raw not in seen:
                if ":" not in raw.split("[", 1)[0]:
                    raise ValueError(f"block id {raw[:60]!r} has no namespace (a line cut short?)")
                seen[raw] = canonical_state(raw)
            states.append(seen[raw])
        except ValueError as err:
            raise DataFileError(path, f"line {i + 2}", str(err), _FIX) from None
    return coords, states


def read_block_list(path: str | Path, biome: str | None = None) -> BlockWorld:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise DataFileError(path, None, f"cannot read: {err}", "pass a PQB block-list .txt file") from None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise DataFileError(path, "line 1 (size)", "the file is empty", "the first line must be 'sx sy sz'")
    header = _parse_header(path, lines[0])
    coords, states = _parse_lines(path, lines[1:])
    if coords.size and coords.min() < 0:
        bad = int(np.flatnonzero((coords < 0).any(axis=1))[0])
        raise DataFileError(path, f"line {bad + 2}", f"negative coordinate {coords[bad].tolist()}", _FIX)
    if np.prod(np.asarray(header, np.float64)) > MAX_VOXELS:
        raise DataFileError(
            path, "line 1 (size)", f"a world of {list(header)} blocks exceeds {MAX_VOXELS} voxels", _FIX
        )
    outside = (coords >= np.asarray(header) + HEADER_SLACK).any(axis=1) if coords.size else np.zeros(0, bool)
    if outside.any():
        bad = int(np.flatnonzero(outside)[0])
        raise DataFileError(
            path, f"line {bad + 2}", f"block at {coords[bad].tolist()} lies outside the stated size {list(header)}",
            "fix the coordinate or the size on line 1",
        )  # fmt: skip
    shape = np.maximum(np.asarray(header), coords.max(axis=0) + 1 if coords.size else 0)
    if np.prod(shape.astype(np.float64)) > MAX_VOXELS:  # the slack past a huge stated size
        raise DataFileError(
            path, "line 1 (size)", f"a world of {shape.tolist()} blocks exceeds {MAX_VOXELS} voxels", _FIX
        )
    palette = Palette()
    ids = np.array([palette.id(s) for s in states], dtype=np.uint16)
    blocks = np.zeros(tuple(int(v) for v in shape), dtype=np.uint16)
    flat = np.ravel_multi_index(coords.T, blocks.shape) if coords.size else np.zeros(0, np.int64)
    uniq, first = np.unique(flat, return_index=True)
    if uniq.size != flat.size:
        dup = sorted(set(range(flat.size)) - set(first.tolist()))[0]
        raise DataFileError(path, f"line {dup + 2}", f"block at {coords[dup].tolist()} is listed twice", _FIX)
    blocks.reshape(-1)[flat] = ids
    name = path.stem
    guess = name.split("_", 1)[0]
    return BlockWorld(
        scene_id=name,
        biome=biome or (guess if guess in BIOMES else ""),
        blocks=blocks,
        palette=palette,
        meta={"source": "block-list", "path": str(path), "header_size": list(header), "n_listed": len(states)},
    )


def write_block_list(world: BlockWorld, path: str | Path) -> None:
    """Write the non-air blocks in PQB's format (properties quoted as PQB writes them)."""
    coords = np.argwhere(world.blocks != 0)
    quoted = [quoted_state(s) for s in world.palette.states]
    ids = world.blocks[coords[:, 0], coords[:, 1], coords[:, 2]]
    sx, sy, sz = world.shape
    rows = [f"{sx} {sy} {sz}"] + [f"{x} {y} {z} {quoted[i]}" for (x, y, z), i in zip(coords.tolist(), ids.tolist())]
    Path(path).write_text("\n".join(rows) + "\n", encoding="utf-8")
