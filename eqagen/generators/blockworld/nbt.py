"""NBT parsing that is bounded by the input's size.

nbtlib parses a list element by element, and an element of type End takes no bytes: a damaged list
header (type End, length 2**31 - 1) makes it build billions of tags from a few bytes, which takes
hours. Every other tag consumes at least one byte, so a structural walk that checks each declared
length against the bytes that remain, and refuses non-empty End lists (Minecraft writes an empty list
as type End, length 0), bounds parsing by the file's size. The walk is plain offset arithmetic over
the bytes and costs about a third of nbtlib's own parse (measured on generated region chunks).

Decompression is bounded too (:func:`inflate`): a few megabytes of gzip can expand to gigabytes (a 2 MB
``.schem`` of zeros held 4.3 GB at its peak), so a file's streams together may expand to at most
:data:`~eqagen.core.limits.MAX_INFLATED_BYTES`, checked while decompressing.
"""

from __future__ import annotations

import io
import struct
import zlib
from pathlib import Path

import nbtlib

from eqagen.core import DataFileError
from eqagen.core.limits import MAX_INFLATED_BYTES

# Tag id -> size in bytes of the scalar tags, and of one item of the array tags.
_SCALARS = {1: 1, 2: 2, 3: 4, 4: 8, 5: 4, 6: 8}
_ARRAYS = {7: 1, 11: 4, 12: 8}
_STRING, _LIST, _COMPOUND = 8, 9, 10
MAX_DEPTH = 256  # Minecraft allows 512, but nbtlib (two frames per level) hits Python's limit near 490


class NbtStructureError(ValueError):
    """The bytes are not NBT whose lengths fit the input."""


def check_nbt(raw: bytes) -> int:
    """The length of the named root tag at the start of ``raw``; NbtStructureError unless its every
    declared length fits ``raw``."""
    if len(raw) < 3:
        raise NbtStructureError(f"{len(raw)} bytes is too short for a root tag")
    root_id = raw[0]
    name_length = struct.unpack_from(">H", raw, 1)[0]
    return _Walk(raw).payload(root_id, 3 + name_length, 0)


class _Walk:
    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self.size = len(raw)

    def need(self, offset: int, count: int, what: str) -> None:
        if count < 0 or offset + count > self.size:
            raise NbtStructureError(f"{what} at byte {offset} needs {count} bytes but {self.size - offset} remain")

    def length(self, offset: int, what: str) -> int:
        self.need(offset, 4, what)
        return struct.unpack_from(">i", self.raw, offset)[0]

    def payload(self, tag_id: int, offset: int, depth: int) -> int:
        """The offset just past the payload of a tag of ``tag_id`` that starts at ``offset``."""
        if depth > MAX_DEPTH:
            raise NbtStructureError(f"tags nested deeper than {MAX_DEPTH} at byte {offset}")
        if tag_id in _SCALARS:
            self.need(offset, _SCALARS[tag_id], "a number")
            return offset + _SCALARS[tag_id]
        if tag_id in _ARRAYS:
            count = self.length(offset, "an array length")
            self.need(offset + 4, count * _ARRAYS[tag_id], f"an array of {count} items")
            return offset + 4 + count * _ARRAYS[tag_id]
        if tag_id == _STRING:
            self.need(offset, 2, "a string length")
            count = struct.unpack_from(">H", self.raw, offset)[0]
            self.need(offset + 2, count, "a string")
            return offset + 2 + count
        if tag_id == _LIST:
            return self.list_payload(offset, depth)
        if tag_id == _COMPOUND:
            return self.compound_payload(offset, depth)
        raise NbtStructureError(f"unknown tag type {tag_id} at byte {offset}")

    def list_payload(self, offset: int, depth: int) -> int:
        self.need(offset, 1, "a list's item type")
        item_id, count = self.raw[offset], self.length(offset + 1, "a list length")
        offset += 5
        if count <= 0:
            return offset
        if item_id == 0:
            raise NbtStructureError(f"a list of {count} End tags at byte {offset - 5} (End lists must be empty)")
        if item_id in _SCALARS:  # fixed-size items: skip them in one step
            self.need(offset, count * _SCALARS[item_id], f"a list of {count} numbers")
            return offset + count * _SCALARS[item_id]
        self.need(offset, count, f"a list of {count} tags")  # every remaining item type takes a byte or more
        for _ in range(count):
            offset = self.payload(item_id, offset, depth + 1)
        return offset

    def compound_payload(self, offset: int, depth: int) -> int:
        while True:
            self.need(offset, 1, "a compound entry")
            item_id = self.raw[offset]
            if item_id == 0:
                return offset + 1
            self.need(offset + 1, 2, "a tag name length")
            name_length = struct.unpack_from(">H", self.raw, offset + 1)[0]
            offset = self.payload(item_id, offset + 3 + name_length, depth + 1)


def parse_nbt(raw: bytes) -> nbtlib.File:
    """nbtlib's parse of uncompressed NBT bytes, after the bounded structural check."""
    check_nbt(raw)
    return nbtlib.File.parse(io.BytesIO(raw))


GZIP, ZLIB = 16 + zlib.MAX_WBITS, zlib.MAX_WBITS  # wbits of a gzip member and of a zlib stream


class InflateLimitError(ValueError):
    """Compressed data that expands past the limit it was given."""


def inflate(data: bytes, wbits: int, limit: int) -> bytes:
    """``data`` decompressed (``GZIP``: every member, as gzip.decompress; ``ZLIB``: one stream), never
    holding more than ``limit`` bytes of output: InflateLimitError beyond it, zlib.error when damaged."""
    parts: list[bytes] = []
    size, rest = 0, data
    while True:
        stream = zlib.decompressobj(wbits)
        pending = rest
        while True:
            piece = stream.decompress(pending, limit - size + 1)
            parts.append(piece)
            size += len(piece)
            if size > limit:
                raise InflateLimitError(f"expands to more than {limit:,} bytes")
            pending = stream.unconsumed_tail
            if stream.eof or not (pending or piece):
                break
        if not stream.eof:
            raise zlib.error("the compressed data is cut off")
        rest = stream.unused_data
        if wbits != GZIP or not rest.strip(b"\0"):  # gzip files may hold several members, or zero padding
            return b"".join(parts)


def load_nbt(path: Path, limit: int = MAX_INFLATED_BYTES) -> nbtlib.File:
    """A gzipped or uncompressed NBT file (as nbtlib.load reads them), checked before it is parsed; a
    DataFileError when it expands past ``limit``."""
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = inflate(raw, GZIP, limit)
        except InflateLimitError as err:
            raise DataFileError(
                path, "gzip", f"the file {err}", "a damaged or hostile file: use the original"
            ) from None
    return parse_nbt(raw)
