"""Sponge schematics (``.schem``, version 2 written; versions 2 and 3 read).

A schematic is gzipped NBT: ``Width``/``Height``/``Length`` (x, y, z), a ``Palette`` mapping block-state
text to an index, and ``BlockData``: the indices as varints in ``x + z*Width + y*Width*Length`` order.
Version 2 keeps ``BlockEntities`` (``Pos``, ``Id``, the chest's ``Items``) and ``Entities`` (``Pos``
relative to the schematic's corner, ``Id``); version 3 nests blocks under ``Blocks`` and entity data
under ``Data``. The scene id, biome, spawn and structures go into ``Metadata.eqagen`` (JSON text).
"""

from __future__ import annotations

import json
from pathlib import Path

import nbtlib
import numpy as np
from nbtlib import tag

from eqagen.core import DataFileError
from eqagen.core.errors import malformed_file
from eqagen.generators.blockworld.anvil import DATA_VERSION
from eqagen.generators.blockworld.nbt import load_nbt
from eqagen.generators.blockworld.palette import Palette, canonical_state, parse_state
from eqagen.generators.blockworld.world import BlockWorld, Chest, Mob, Structure


def encode_varints(values: np.ndarray) -> np.ndarray:
    """Unsigned LEB128 varints of non-negative ints, vectorised: ``uint8`` array."""
    v = np.asarray(values, dtype=np.int64)
    nbytes = np.ones_like(v)
    for k in range(1, 5):
        nbytes += v >= (1 << (7 * k))
    starts = np.concatenate([[0], np.cumsum(nbytes)[:-1]])
    out = np.zeros(int(nbytes.sum()), dtype=np.uint8)
    for k in range(int(nbytes.max(initial=1))):
        sel = nbytes > k
        byte = (v[sel] >> (7 * k)) & 0x7F
        out[starts[sel] + k] = byte | np.where(nbytes[sel] > k + 1, 0x80, 0)
    return out


def decode_varints(data: np.ndarray) -> np.ndarray:
    b = np.asarray(data).view(np.uint8).astype(np.int64)
    ends = np.flatnonzero(b < 0x80)
    if b.size and (ends.size == 0 or ends[-1] != b.size - 1):
        raise ValueError("the last varint is cut off")
    starts = np.concatenate([[0], ends[:-1] + 1])
    group = np.repeat(np.arange(ends.size), ends - starts + 1)
    shifted = (b & 0x7F) << (7 * (np.arange(b.size) - starts[group]))
    return np.add.reduceat(shifted, starts) if b.size else np.zeros(0, np.int64)


def _meta_json(world: BlockWorld) -> str:
    return json.dumps(
        {
            "scene_id": world.scene_id,
            "biome": world.biome,
            "origin": list(world.origin),
            "spawn": world.spawn,
            "structures": [s.__dict__ for s in world.structures],
            "meta": world.meta,
        },
        sort_keys=True,
        default=str,
    )


def _entity_tags(world: BlockWorld) -> list[nbtlib.Compound]:
    out = []
    for m in world.mobs:
        c = nbtlib.Compound(
            {
                "Id": tag.String(f"minecraft:{m.kind}"),
                "Pos": nbtlib.List[tag.Double]([tag.Double(v) for v in m.position]),
                "Rotation": nbtlib.List[tag.Float]([tag.Float(m.yaw), tag.Float(0.0)]),
                "UUID": tag.IntArray(list(m.uuid)),
            }
        )
        for key, value in m.extra.items():
            c[key] = tag.Int(value)
        out.append(c)
    return out


def _chest_tags(world: BlockWorld) -> list[nbtlib.Compound]:
    return [
        nbtlib.Compound(
            {
                "Pos": tag.IntArray(list(c.position)),
                "Id": tag.String("minecraft:chest"),
                "Items": nbtlib.List[nbtlib.Compound](
                    [
                        nbtlib.Compound({"Slot": tag.Byte(i), "id": tag.String(it), "Count": tag.Byte(n)})
                        for i, (it, n) in enumerate(c.items)
                    ]
                ),
            }
        )
        for c in world.chests
    ]


def write_schem(world: BlockWorld, path: str | Path) -> None:
    sx, sy, sz = world.shape
    order = world.blocks.transpose(1, 2, 0).reshape(-1)  # y, z, x: x fastest
    used, inverse = np.unique(order, return_inverse=True)
    palette = nbtlib.Compound({world.palette.states[u]: tag.Int(i) for i, u in enumerate(used)})
    root = nbtlib.Compound(
        {
            "Version": tag.Int(2),
            "DataVersion": tag.Int(DATA_VERSION),
            "Width": tag.Short(sx),
            "Height": tag.Short(sy),
            "Length": tag.Short(sz),
            "Offset": tag.IntArray(list(world.origin)),
            "PaletteMax": tag.Int(len(used)),
            "Palette": palette,
            "BlockData": tag.ByteArray(encode_varints(inverse).view(np.int8)),
            "BlockEntities": nbtlib.List[nbtlib.Compound](_chest_tags(world)),
            "Entities": nbtlib.List[nbtlib.Compound](_entity_tags(world)),
            "Metadata": nbtlib.Compound({"eqagen": tag.String(_meta_json(world))}),
        }
    )
    nbtlib.File(root, gzipped=True, root_name="Schematic").save(path)


def _blocks_from(path: Path, body, sx: int, sy: int, sz: int, palette: Palette) -> np.ndarray:
    raw_palette, data = body.get("Palette"), body.get("BlockData", body.get("Data"))
    if raw_palette is None or data is None:
        raise DataFileError(path, "Palette/BlockData", "missing", "a Sponge schematic needs a palette and block data")
    lookup = np.zeros(max((int(i) for i in raw_palette.values()), default=-1) + 1, dtype=np.uint16)
    for state, i in raw_palette.items():
        lookup[int(i)] = palette.id(canonical_state(str(state)))
    try:
        idx = decode_varints(np.asarray(data))
    except ValueError as err:
        raise DataFileError(path, "BlockData", str(err), "the schematic is truncated") from None
    if idx.size != sx * sy * sz or (idx.size and idx.max() >= lookup.size):
        raise DataFileError(
            path,
            "BlockData",
            f"{idx.size} entries for a {sx}x{sy}x{sz} schematic (or an index beyond the palette)",
            "the schematic is corrupt",
        )
    return lookup[idx].reshape(sy, sz, sx).transpose(2, 0, 1).copy()


def read_schem(path: str | Path) -> BlockWorld:
    path = Path(path)
    try:
        root = load_nbt(path)
    except DataFileError:
        raise
    except Exception as err:
        raise DataFileError(path, None, f"malformed NBT: {err}", "a .schem file is gzipped NBT") from None
    with malformed_file(path, "Schematic", "a .schem file is a Sponge schematic (gzipped NBT)"):
        body = root.get("Schematic", root)
        try:
            sx, sy, sz = int(body["Width"]), int(body["Height"]), int(body["Length"])
        except KeyError as err:
            raise DataFileError(
                path, str(err.args[0]), "missing", "a Sponge schematic needs Width, Height, Length"
            ) from None
        blocks_body = body.get("Blocks", body)
    palette = Palette()
    with malformed_file(path, "Palette/BlockData", "the schematic is corrupt"):
        blocks = _blocks_from(path, blocks_body, sx, sy, sz, palette)
    world = BlockWorld(scene_id=path.stem, biome="", blocks=blocks, palette=palette, meta={"source": "schematic"})
    with malformed_file(path, "BlockEntities", "a chest needs Pos inside the schematic and Items"):
        world.chests = [
            _chest(e, blocks, palette)
            for e in blocks_body.get("BlockEntities", [])
            if str(e.get("Id", "")).endswith("chest")
        ]
    with malformed_file(path, "Entities", "every entity needs Id and Pos"):
        world.mobs = [_mob(path, e) for e in body.get("Entities", [])]
    with malformed_file(path, "Metadata.eqagen", "rewrite the schematic with eqagen"):
        meta = body.get("Metadata", {}).get("eqagen")
        if meta is not None:
            _apply_meta(world, json.loads(str(meta)))
        world.sort_objects()
    return world


def _chest(e, blocks: np.ndarray, palette: Palette) -> Chest:
    data = e.get("Data", e)
    pos = tuple(int(v) for v in e["Pos"])
    facing = parse_state(palette.states[int(blocks[pos])])[1].get("facing", "north")
    items = [(str(it["id"]), int(it.get("Count", it.get("count", 1)))) for it in data.get("Items", [])]
    return Chest(pos, items, facing)  # type: ignore[arg-type]


def _mob(path: Path, e) -> Mob:
    data = e.get("Data", e)
    try:
        kind, pos = str(e["Id"]).split(":", 1)[-1], tuple(float(v) for v in e["Pos"])
    except KeyError as err:
        raise DataFileError(path, f"Entities[].{err.args[0]}", "missing", "every entity needs Id and Pos") from None
    rot = data.get("Rotation", [0.0, 0.0])
    uuid = tuple(int(v) for v in data.get("UUID", [0, 0, 0, 0]))
    extra = {k: int(data[k]) for k in ("RabbitType", "Variant") if k in data}
    return Mob(kind, pos, uuid, float(rot[0]), extra)  # type: ignore[arg-type]


def _apply_meta(world: BlockWorld, d: dict) -> None:
    world.scene_id, world.biome = d["scene_id"], d["biome"]
    world.origin = tuple(d["origin"])  # type: ignore[assignment]
    world.spawn = tuple(d["spawn"]) if d.get("spawn") is not None else None  # type: ignore[assignment]
    world.meta = d["meta"]
    world.structures = []
    for s in d["structures"]:
        s = dict(s, bbox=tuple(s["bbox"]), door=tuple(s["door"]) if s.get("door") is not None else None)
        world.structures.append(Structure(**s))
