"""A :class:`BlockWorld` as a Minecraft save directory (``level.dat``, ``region/``, ``entities/``) and back.

The voxel array is cut into 16x16x16 sections on native coordinates (native = ``origin`` + voxel), each
with its own palette; chests become block entities with their items, mobs entities in the entities
region files. Reading rebuilds one global palette, and crops to the extent recorded in ``level.dat``
(``Data.eqagen``) when present, otherwise to all chunks found.
"""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import nbtlib
import numpy as np
from nbtlib import tag

from eqagen.core import DataFileError
from eqagen.core.errors import malformed_file
from eqagen.generators.blockworld import anvil, legacy
from eqagen.generators.blockworld.blocklist import MAX_VOXELS
from eqagen.generators.blockworld.nbt import load_nbt
from eqagen.generators.blockworld.palette import Palette, format_state, parse_state
from eqagen.generators.blockworld.sections import chunk_ranges, padded_blocks
from eqagen.generators.blockworld.world import BlockWorld, Chest, Mob, Structure


def _section_tag(world: BlockWorld, sub: np.ndarray, sec_y: int, biome: str) -> nbtlib.Compound:
    """``sub`` is the ``[16, 16, 16]`` (x, y, z) block of palette ids of one section."""
    order = sub.transpose(1, 2, 0).reshape(-1)  # y*256 + z*16 + x
    uniq, inverse = np.unique(order, return_inverse=True)
    palette = nbtlib.List[nbtlib.Compound]([anvil.state_tag(*parse_state(world.palette.states[u])) for u in uniq])
    states = nbtlib.Compound({"palette": palette})
    if uniq.size > 1:
        states["data"] = tag.LongArray(anvil.pack_indices(inverse.astype(np.uint64), anvil.bits_for(uniq.size, 4)))
    biomes = nbtlib.Compound({"palette": nbtlib.List[tag.String]([tag.String(biome)])})
    return nbtlib.Compound({"Y": tag.Byte(sec_y), "block_states": states, "biomes": biomes})


def _chest_tag(c: Chest, native: tuple[int, int, int]) -> nbtlib.Compound:
    items = nbtlib.List[nbtlib.Compound](
        [
            nbtlib.Compound({"Slot": tag.Byte(i), "id": tag.String(item), "Count": tag.Byte(n)})
            for i, (item, n) in enumerate(c.items)
        ]
    )
    x, y, z = native
    return nbtlib.Compound(
        {
            "id": tag.String("minecraft:chest"),
            "x": tag.Int(x),
            "y": tag.Int(y),
            "z": tag.Int(z),
            "keepPacked": tag.Byte(0),
            "Items": items,
        }
    )


def _mob_tag(m: Mob, native: np.ndarray) -> nbtlib.Compound:
    c = nbtlib.Compound(
        {
            "id": tag.String(f"minecraft:{m.kind}"),
            "Pos": nbtlib.List[tag.Double]([tag.Double(v) for v in native]),
            "Motion": nbtlib.List[tag.Double]([tag.Double(0.0)] * 3),
            "Rotation": nbtlib.List[tag.Float]([tag.Float(m.yaw), tag.Float(0.0)]),
            "UUID": tag.IntArray(list(m.uuid)),
            "OnGround": tag.Byte(0 if m.kind == "bat" else 1),
            "PersistenceRequired": tag.Byte(1),
        }
    )
    for key, value in m.extra.items():
        c[key] = tag.Int(value)
    return c


def _chest_tags_by_chunk(world: BlockWorld) -> dict[tuple[int, int], list]:
    by_chunk = defaultdict(list)
    for c in world.chests:
        native = tuple(int(world.origin[i] + c.position[i]) for i in range(3))
        by_chunk[(native[0] // 16, native[2] // 16)].append(_chest_tag(c, native))
    return by_chunk


def _mob_tags_by_chunk(world: BlockWorld) -> dict[tuple[int, int], list]:
    by_chunk = defaultdict(list)
    for m in world.mobs:
        native = np.asarray(world.origin, np.float64) + np.asarray(m.position, np.float64)
        by_chunk[(int(native[0] // 16), int(native[2] // 16))].append(_mob_tag(m, native))
    return by_chunk


def world_chunks(world: BlockWorld, data_version: int = anvil.DATA_VERSION) -> dict[tuple[int, int], nbtlib.Compound]:
    """Block chunks keyed by absolute chunk coordinates."""
    padded, _ = padded_blocks(world)
    rx, ry, rz = chunk_ranges(world)
    biome = world.meta.get("minecraft_biome", "minecraft:plains")
    chests_by_chunk = _chest_tags_by_chunk(world)
    out = {}
    for i, cx in enumerate(rx):
        for k, cz in enumerate(rz):
            sections = [
                _section_tag(world, padded[16 * i : 16 * i + 16, 16 * j : 16 * j + 16, 16 * k : 16 * k + 16], cy, biome)
                for j, cy in enumerate(ry)
            ]
            out[(cx, cz)] = nbtlib.Compound(
                {
                    "DataVersion": tag.Int(data_version),
                    "xPos": tag.Int(cx),
                    "zPos": tag.Int(cz),
                    "yPos": tag.Int(ry.start),
                    "Status": tag.String("minecraft:full"),
                    "LastUpdate": tag.Long(0),
                    "sections": nbtlib.List[nbtlib.Compound](sections),
                    "block_entities": nbtlib.List[nbtlib.Compound](chests_by_chunk[(cx, cz)]),
                }
            )
    return out


def entity_chunks(world: BlockWorld, data_version: int = anvil.DATA_VERSION) -> dict[tuple[int, int], nbtlib.Compound]:
    by_chunk = _mob_tags_by_chunk(world)
    return {
        key: nbtlib.Compound(
            {
                "DataVersion": tag.Int(data_version),
                "Position": tag.IntArray(list(key)),
                "Entities": nbtlib.List[nbtlib.Compound](ents),
            }
        )
        for key, ents in by_chunk.items()
    }


def _by_region(chunks: dict[tuple[int, int], nbtlib.Compound]) -> dict[tuple[int, int], dict]:
    regions: dict[tuple[int, int], dict] = defaultdict(dict)
    for (cx, cz), c in chunks.items():
        regions[(cx >> 5, cz >> 5)][(cx & 31, cz & 31)] = c
    return regions


def _structure_tag(s: Structure) -> nbtlib.Compound:
    return nbtlib.Compound({"json": tag.String(json.dumps(s.__dict__, sort_keys=True))})


def level_dat(world: BlockWorld, data_version: int = anvil.DATA_VERSION, version_name: str = "1.20.1") -> nbtlib.File:
    spawn = world.spawn or (world.shape[0] / 2, 0.0, world.shape[2] / 2)
    native_spawn = [int(np.floor(world.origin[i] + spawn[i])) for i in range(3)]
    ours = nbtlib.Compound(
        {
            "scene_id": tag.String(world.scene_id),
            "biome": tag.String(world.biome),
            "origin": tag.IntArray(list(world.origin)),
            "shape": tag.IntArray(list(world.shape)),
            "spawn": nbtlib.List[tag.Double]([tag.Double(v) for v in spawn]),
            "structures": nbtlib.List[nbtlib.Compound]([_structure_tag(s) for s in world.structures]),
            "meta": tag.String(json.dumps(world.meta, sort_keys=True, default=str)),
        }
    )
    data = nbtlib.Compound(
        {
            "DataVersion": tag.Int(data_version),
            "version": tag.Int(19133),
            "LevelName": tag.String(world.scene_id),
            "SpawnX": tag.Int(native_spawn[0]),
            "SpawnY": tag.Int(native_spawn[1]),
            "SpawnZ": tag.Int(native_spawn[2]),
            "GameType": tag.Int(0),
            "Difficulty": tag.Byte(1),
            "allowCommands": tag.Byte(1),
            "initialized": tag.Byte(1),
            "Time": tag.Long(0),
            "DayTime": tag.Long(6000),
            "LastPlayed": tag.Long(0),
            "Version": nbtlib.Compound(
                {"Id": tag.Int(data_version), "Name": tag.String(version_name), "Snapshot": tag.Byte(0)}
            ),
            "eqagen": ours,
        }
    )
    return nbtlib.File({"Data": data}, gzipped=True)


LAYOUTS = ("1.18", "1.16")


def write_save(world: BlockWorld, directory: str | Path, layout: str = "1.18") -> Path:
    """Write ``level.dat`` and ``region/r.X.Z.mca`` (and, in the 1.18+ layout, ``entities/r.X.Z.mca``);
    ``layout="1.16"`` writes Minecraft 1.16's chunks (what MineRL runs). Returns the directory."""
    if layout not in LAYOUTS:
        raise ValueError(f"layout must be one of {LAYOUTS}, not {layout!r}")
    d = Path(directory)
    (d / "region").mkdir(parents=True, exist_ok=True)
    if layout == "1.16":
        chunks = legacy.legacy_chunks(world, _chest_tags_by_chunk(world), _mob_tags_by_chunk(world))
        for (rx, rz), region in _by_region(chunks).items():
            anvil.write_region(d / "region" / f"r.{rx}.{rz}.mca", region)
        level_dat(world, legacy.DATA_VERSION_1_16, "1.16.5").save(d / "level.dat")
        return d
    (d / "entities").mkdir(parents=True, exist_ok=True)
    for (rx, rz), region in _by_region(world_chunks(world)).items():
        anvil.write_region(d / "region" / f"r.{rx}.{rz}.mca", region)
    for (rx, rz), region in _by_region(entity_chunks(world)).items():
        anvil.write_region(d / "entities" / f"r.{rx}.{rz}.mca", region)
    level_dat(world).save(d / "level.dat")
    return d


# --- reading ---------------------------------------------------------------------------------------------

_MOB_EXTRA_KEYS = ("RabbitType", "Variant")


def _palette_states(path: Path, where: str, palette) -> list[str]:
    out = []
    for i, entry in enumerate(palette):
        name = entry.get("Name")
        if name is None:
            raise DataFileError(path, f"{where}.palette[{i}].Name", "missing", "every palette entry needs a Name")
        props = {str(k): str(v) for k, v in entry.get("Properties", {}).items()}
        out.append(format_state(str(name), props))
    return out


def _section_ids(path: Path, where: str, sec, palette: Palette) -> tuple[int, np.ndarray] | None:
    """(section Y, 4096 global palette ids in y*256+z*16+x order), or None for an empty section."""
    if "block_states" in sec:
        states, pal_key, data_key = sec["block_states"], "palette", "data"
    elif "Palette" in sec:
        states, pal_key, data_key = sec, "Palette", "BlockStates"
    else:
        return None
    local = _palette_states(path, where, states[pal_key])
    lookup = np.array([palette.id(s) for s in local], dtype=np.uint16)
    if len(local) == 1:
        return int(sec["Y"]), np.full(4096, lookup[0], dtype=np.uint16)
    if data_key not in states:
        raise DataFileError(
            path, f"{where}.{data_key}", f"missing though the palette has {len(local)} entries", "the chunk is corrupt"
        )
    data = states[data_key]
    if not isinstance(data, nbtlib.LongArray):  # a float or int list would be cast to indices silently
        raise DataFileError(
            path, f"{where}.{data_key}", f"a tag of type {type(data).__name__}, not a LongArray", "the chunk is corrupt"
        )
    bits = anvil.bits_for(len(local), 4)
    try:
        idx = anvil.unpack_indices(np.asarray(data), bits, 4096)
    except ValueError as err:
        raise DataFileError(path, f"{where}.{data_key}", str(err), "the chunk is corrupt or pre-1.16") from None
    if idx.max() >= len(local):
        raise DataFileError(
            path,
            f"{where}.{data_key}",
            f"index {int(idx.max())} beyond palette of {len(local)}",
            "the chunk is corrupt",
        )
    return int(sec["Y"]), lookup[idx]


def _chunk_payload(chunk) -> tuple[object, list, list, list]:
    """(chunk body, sections, block entities, entities) of a 1.18+ or pre-1.18 chunk."""
    if "Level" in chunk:
        lv = chunk["Level"]
        return lv, list(lv.get("Sections", [])), list(lv.get("TileEntities", [])), list(lv.get("Entities", []))
    return chunk, list(chunk.get("sections", [])), list(chunk.get("block_entities", [])), []


def _read_sections(path: Path, chunks: dict, palette: Palette) -> tuple[dict, list, list]:
    """Sections keyed (cx, cy, cz), and the block-entity and entity tags of these chunks."""
    sections, block_entities, entities = {}, [], []
    for (lx, lz), chunk in chunks.items():
        with malformed_file(path, f"chunk ({lx}, {lz})", "the chunk is corrupt"):
            body, secs, bents, ents = _chunk_payload(chunk)
            try:
                cx, cz = int(body["xPos"]), int(body["zPos"])
            except KeyError:
                raise DataFileError(path, f"chunk ({lx}, {lz}).xPos", "missing", "the chunk is corrupt") from None
            for j, sec in enumerate(secs):
                got = _section_ids(path, f"chunk ({lx}, {lz}).sections[{j}]", sec, palette)
                if got is not None:
                    sections[(cx, got[0], cz)] = got[1]
        block_entities += [(path, b) for b in bents]
        entities += [(path, e) for e in ents]
    return sections, block_entities, entities


def _assemble(sections: dict, origin: tuple[int, int, int], shape: tuple[int, int, int]) -> np.ndarray:
    blocks = np.zeros(shape, dtype=np.uint16)
    for (cx, cy, cz), ids in sections.items():
        cube = ids.reshape(16, 16, 16).transpose(2, 0, 1)  # (y, z, x) -> (x, y, z)
        lo = np.array([cx * 16, cy * 16, cz * 16]) - np.asarray(origin)
        a, b = np.maximum(lo, 0), np.minimum(lo + 16, shape)
        if np.any(b <= a):
            continue
        blocks[a[0] : b[0], a[1] : b[1], a[2] : b[2]] = cube[
            a[0] - lo[0] : b[0] - lo[0], a[1] - lo[1] : b[1] - lo[1], a[2] - lo[2] : b[2] - lo[2]
        ]
    return blocks


def _extent_of(sections: dict) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    keys = np.array(sorted(sections))
    lo, hi = keys.min(axis=0) * 16, (keys.max(axis=0) + 1) * 16
    return tuple(int(v) for v in lo), tuple(int(v) for v in hi - lo)  # type: ignore[return-value]


def _uuid(path: Path, e) -> tuple[int, int, int, int]:
    if "UUID" in e:
        return tuple(int(v) for v in e["UUID"])  # type: ignore[return-value]
    most, least = int(e.get("UUIDMost", 0)) & (2**64 - 1), int(e.get("UUIDLeast", 0)) & (2**64 - 1)
    words = [(most >> 32), most & 0xFFFFFFFF, (least >> 32), least & 0xFFFFFFFF]
    return tuple(w - 2**32 if w >= 2**31 else w for w in words)  # type: ignore[return-value]


def _mob_from_tag(path: Path, e, origin) -> Mob:
    try:
        pos = [float(v) for v in e["Pos"]]
        kind = str(e["id"]).split(":", 1)[-1]
    except KeyError as err:
        raise DataFileError(path, f"Entities[].{err.args[0]}", "missing", "every entity needs id and Pos") from None
    rot = e.get("Rotation", [0.0, 0.0])
    local = tuple(pos[i] - origin[i] for i in range(3))
    extra = {k: int(e[k]) for k in _MOB_EXTRA_KEYS if k in e}
    return Mob(kind, local, _uuid(path, e), float(rot[0]), extra)  # type: ignore[arg-type]


def _chest_from_tag(e, origin, world_blocks: np.ndarray, palette: Palette) -> Chest | None:
    if str(e.get("id", "")).split(":")[-1].lower() not in ("chest", "trapped_chest"):
        return None
    pos = tuple(int(e[k]) - origin[i] for i, k in enumerate("xyz"))
    items = [(str(it["id"]), int(it.get("Count", it.get("count", 1)))) for it in e.get("Items", [])]
    facing = "north"
    if all(0 <= pos[i] < world_blocks.shape[i] for i in range(3)):
        facing = parse_state(palette.states[int(world_blocks[pos])])[1].get("facing", "north")
    return Chest(pos, items, facing)  # type: ignore[arg-type]


def _load_level(path: Path) -> dict:
    if not path.exists():
        return {}
    try:
        root = load_nbt(path)
    except DataFileError:
        raise
    except Exception as err:
        raise DataFileError(path, None, f"malformed NBT: {err}", "level.dat must be gzipped NBT") from None
    if not isinstance(root.get("Data"), dict):
        raise DataFileError(path, "Data", "missing", "level.dat's root must hold a Data compound")
    return root["Data"]


def _region_chunks(paths: list[Path]) -> list[tuple[Path, dict]]:
    return [(p, anvil.read_region(p)) for p in sorted(paths)]


def chunks_to_world(
    block_regions: list[tuple[Path, dict]],
    entity_regions: list[tuple[Path, dict]],
    level: dict,
    name: str,
    level_path: Path | None = None,
) -> BlockWorld:
    palette = Palette()
    sections, bents, ents = {}, [], []
    for path, chunks in block_regions:
        s, b, e = _read_sections(path, chunks, palette)
        sections.update(s)
        bents += b
        ents += e
    for path, chunks in entity_regions:
        with malformed_file(path, "Entities", "the entity chunk is corrupt"):
            for chunk in chunks.values():
                ents += [(path, e) for e in chunk.get("Entities", [])]
    level_file = level_path or "level.dat"
    ours = level.get("eqagen")
    if ours is not None:
        with malformed_file(level_file, "Data.eqagen", "rewrite the save with eqagen"):
            origin, shape = tuple(int(v) for v in ours["origin"]), tuple(int(v) for v in ours["shape"])
        if len(origin) != 3:  # e.g. a string tag where an IntArray belongs iterates to nothing
            raise DataFileError(level_file, "Data.eqagen.origin", f"{len(origin)} coordinates, not 3",
                                "the save is corrupt: rewrite it with eqagen")  # fmt: skip
    elif sections:
        origin, shape = _extent_of(sections)
    else:
        origin, shape = (0, 0, 0), (0, 0, 0)
    _check_extent(shape, level_file if ours is not None else block_regions[0][0] if block_regions else name)
    blocks = _assemble(sections, origin, shape)
    mobs = []
    for p, e in ents:
        with malformed_file(p, "Entities[]", "every entity needs id and Pos"):
            mobs.append(_mob_from_tag(p, e, origin))
    chests = []
    for p, e in bents:
        with malformed_file(p, "block_entities[]", "a chest needs x, y, z and Items"):
            chests.append(_chest_from_tag(e, origin, blocks, palette))
    chests = [c for c in chests if c is not None]
    world = BlockWorld(
        scene_id=name,
        biome="",
        blocks=blocks,
        palette=palette,
        mobs=mobs,
        chests=chests,
        origin=origin,
        meta={"source": "world-file"},
    )  # type: ignore[arg-type]
    if ours is not None:
        with malformed_file(level_file, "Data.eqagen", "rewrite the save with eqagen"):
            world.scene_id, world.biome = str(ours["scene_id"]), str(ours["biome"])
            world.spawn = tuple(float(v) for v in ours["spawn"])  # type: ignore[assignment]
            world.structures = [_structure_from_json(str(s["json"])) for s in ours["structures"]]
            world.meta = json.loads(str(ours["meta"]))
    with malformed_file(level_file if ours is not None else name, "objects", "mobs and chests need positions"):
        world.sort_objects()
    return world


def _check_extent(shape: tuple[int, ...], source: object) -> None:
    """A damaged extent (level.dat's shape, a chunk's position) must not allocate gigabytes."""
    if len(shape) != 3 or min(shape) < 0 or float(np.prod(np.asarray(shape, np.float64))) > MAX_VOXELS:
        raise DataFileError(
            source, "extent", f"a world of {list(shape)} blocks (more than {MAX_VOXELS} voxels or negative)",
            "the save is corrupt: check level.dat's Data.eqagen.shape and the chunks' xPos/zPos",
        )  # fmt: skip


def _structure_from_json(text: str) -> Structure:
    d = json.loads(text)
    d["bbox"] = tuple(d["bbox"])
    d["door"] = tuple(d["door"]) if d.get("door") is not None else None
    return Structure(**d)


def read_save(directory: str | Path) -> BlockWorld:
    """A save directory (``level.dat`` + ``region/``, optionally ``entities/``) as a BlockWorld."""
    d = Path(directory)
    regions = sorted((d / "region").glob("r.*.*.mca"))
    if not regions:
        raise DataFileError(d, "region/", "no region files r.X.Z.mca", "pass a Minecraft save directory")
    for p in regions:
        anvil.region_coords(p)
    level = _load_level(d / "level.dat")
    entity_regions = _region_chunks(sorted((d / "entities").glob("r.*.*.mca")))
    return chunks_to_world(_region_chunks(regions), entity_regions, level, d.name, level_path=d / "level.dat")


def read_region_file(path: str | Path) -> BlockWorld:
    """One region file alone (blocks and, for pre-1.18 chunks, entities); its extent is its chunks'."""
    p = Path(path)
    anvil.region_coords(p)
    return chunks_to_world(_region_chunks([p]), [], {}, p.stem)
