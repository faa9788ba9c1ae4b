"""Anvil region files (``.mca``) and ``level.dat``: Minecraft's own save format, read and written with nbtlib.

Layout (Minecraft 1.18+ chunks, entities in their own region files since 1.17):

- A region file holds 32x32 chunks. Its first 4 KiB are 1024 locations (3-byte sector offset, 1-byte
  sector count; chunk ``(x & 31) + 32 * (z & 31)``), the next 4 KiB their timestamps; each chunk is a
  4-byte length, a compression byte (1 gzip, 2 zlib, 3 none) and an NBT compound, padded to 4 KiB.
- A chunk has ``sections``: per 16-block slice ``Y``, ``block_states`` = ``palette`` (``Name`` and
  ``Properties``) plus ``data``, a long array of palette indices in ``y*256 + z*16 + x`` order, packed
  with ``max(4, ceil(log2(len(palette))))`` bits, entries not spanning longs; ``data`` is left out when
  the palette has one entry. Chests are ``block_entities`` with ``Items``.
- ``entities/r.X.Z.mca`` holds, per chunk, ``Entities`` with ``id``, ``Pos``, ``Rotation``, ``UUID``.

Pre-1.18 chunks (``Level`` wrapper, ``Sections`` with ``Palette``/``BlockStates``, entities inside the
chunk, as MineRL's Minecraft 1.16 writes them) are read as well. The world's scene id, biome label, the
voxel extent and its structures (which Minecraft does not store) go into ``level.dat`` under
``Data.eqagen``, which Minecraft ignores.
"""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import nbtlib
import numpy as np
from nbtlib import tag

from eqagen.core import DataFileError
from eqagen.core.limits import MAX_INFLATED_BYTES
from eqagen.generators.blockworld.nbt import GZIP, ZLIB, InflateLimitError, inflate, parse_nbt

SECTOR = 4096
DATA_VERSION = 3465  # Minecraft 1.20.1


def _compress_chunk(chunk: nbtlib.Compound) -> bytes:
    buf = io.BytesIO()
    nbtlib.File(chunk).write(buf)
    payload = zlib.compress(buf.getvalue())
    return struct.pack(">IB", len(payload) + 1, 2) + payload


def write_region(path: str | Path, chunks: dict[tuple[int, int], nbtlib.Compound], timestamp: int = 0) -> None:
    """Write chunks keyed by their coordinates inside the region (0..31, 0..31)."""
    header = bytearray(2 * SECTOR)
    body = bytearray()
    next_sector = 2
    for (cx, cz), chunk in sorted(chunks.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        blob = _compress_chunk(chunk)
        n_sectors = -(-len(blob) // SECTOR)
        if n_sectors > 255:
            raise ValueError(f"chunk ({cx}, {cz}) needs {n_sectors} sectors; the region format allows 255")
        i = (cx & 31) + 32 * (cz & 31)
        header[4 * i : 4 * i + 4] = struct.pack(">I", (next_sector << 8) | n_sectors)
        header[SECTOR + 4 * i : SECTOR + 4 * i + 4] = struct.pack(">I", timestamp)
        body += blob + bytes(n_sectors * SECTOR - len(blob))
        next_sector += n_sectors
    Path(path).write_bytes(bytes(header) + bytes(body))


def _decompress_chunk(path: Path, where: str, data: bytes, offset: int, budget: int) -> tuple[nbtlib.Compound, int]:
    """The chunk at ``offset`` and how many bytes it expanded to (at most ``budget``)."""
    if offset + 5 > len(data):
        raise DataFileError(
            path,
            where,
            f"chunk starts at byte {offset}, past the end of the file ({len(data)})",
            "the region file is truncated; restore it from a backup",
        )
    length, method = struct.unpack(">IB", data[offset : offset + 5])
    payload = data[offset + 5 : offset + 4 + length]
    if length < 1 or len(payload) != length - 1:
        raise DataFileError(
            path,
            f"{where} length",
            f"declares {length} bytes but {len(payload) + 1} remain",
            "the region file is truncated or corrupt",
        )
    if method not in (1, 2, 3):
        raise DataFileError(
            path,
            f"{where} compression",
            f"unknown compression type {method}",
            "expected 1 (gzip), 2 (zlib) or 3 (none); external chunks (.mcc) are not supported",
        )
    try:
        raw = payload if method == 3 else inflate(payload, GZIP if method == 1 else ZLIB, budget)
        if len(raw) > budget:
            raise InflateLimitError(f"expands to more than {budget:,} bytes")
    except InflateLimitError:
        raise DataFileError(
            path, f"{where} data", f"the region's chunks expand to more than {MAX_INFLATED_BYTES:,} bytes together",
            "a damaged or hostile file: use the original",
        ) from None  # fmt: skip
    except zlib.error as err:
        raise DataFileError(path, f"{where} data", f"cannot decompress: {err}", "the chunk is corrupt") from None
    try:
        return parse_nbt(raw), len(raw)
    except Exception as err:  # nbtlib raises several types on malformed NBT
        raise DataFileError(path, f"{where} nbt", f"malformed NBT: {err}", "the chunk is corrupt") from None


def read_region(path: str | Path) -> dict[tuple[int, int], nbtlib.Compound]:
    """All chunks of a region file, keyed by their coordinates inside the region."""
    path = Path(path)
    try:
        data = path.read_bytes()
    except OSError as err:
        raise DataFileError(path, None, f"cannot read: {err}", "pass an Anvil region file r.X.Z.mca") from None
    if len(data) < 2 * SECTOR:
        raise DataFileError(
            path,
            "header",
            f"{len(data)} bytes, shorter than the 8192-byte header",
            "the file is not an Anvil region file or is truncated",
        )
    locations = np.frombuffer(data[:SECTOR], dtype=">u4")
    out, budget = {}, MAX_INFLATED_BYTES  # the region's chunks expand to at most this much, together
    for i in np.flatnonzero(locations).tolist():
        cx, cz = i % 32, i // 32
        offset = int(locations[i] >> 8) * SECTOR
        out[(cx, cz)], used = _decompress_chunk(path, f"chunk ({cx}, {cz})", data, offset, budget)
        budget -= used
    return out


def region_coords(path: Path) -> tuple[int, int]:
    parts = path.name.split(".")
    if len(parts) != 4 or parts[0] != "r" or parts[3] not in ("mca", "mcr"):
        raise DataFileError(path, "file name", "not named r.X.Z.mca", "region files are named r.<x>.<z>.mca")
    try:
        return int(parts[1]), int(parts[2])
    except ValueError:
        raise DataFileError(path, "file name", "region coordinates are not integers", "rename to r.X.Z.mca") from None


# --- packing of palette indices into long arrays ------------------------------------------------------


def bits_for(n_palette: int, minimum: int) -> int:
    return max(minimum, int(np.ceil(np.log2(n_palette))) if n_palette > 1 else 0)


def pack_indices(indices: np.ndarray, bits: int) -> np.ndarray:
    """Pack indices (``bits`` each, entries not spanning longs) into an int64 array."""
    per_long = 64 // bits
    n_longs = -(-indices.size // per_long)
    padded = np.zeros(n_longs * per_long, dtype=np.uint64)
    padded[: indices.size] = indices
    shifts = (np.arange(per_long, dtype=np.uint64) * np.uint64(bits))[None, :]
    words = np.bitwise_or.reduce(padded.reshape(n_longs, per_long) << shifts, axis=1)
    return words.view(np.int64)


def unpack_indices(longs: np.ndarray, bits: int, count: int) -> np.ndarray:
    per_long = 64 // bits
    words = np.asarray(longs, dtype=np.int64).view(np.uint64)
    if words.size * per_long < count:
        raise ValueError(f"{words.size} longs hold {words.size * per_long} entries of {bits} bits, need {count}")
    shifts = (np.arange(per_long, dtype=np.uint64) * np.uint64(bits))[None, :]
    mask = np.uint64((1 << bits) - 1)
    return ((words[:, None] >> shifts) & mask).reshape(-1)[:count].astype(np.int64)


def state_tag(state_name: str, props: dict[str, str]) -> nbtlib.Compound:
    c = nbtlib.Compound({"Name": tag.String(state_name)})
    if props:
        c["Properties"] = nbtlib.Compound({k: tag.String(v) for k, v in sorted(props.items())})
    return c
