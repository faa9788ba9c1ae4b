"""Open any world file by its kind: a save directory, an Anvil region file, a Sponge schematic or a PQB
block list; and a JSON-able summary of it (``eqagen blockworld inspect``)."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any

from eqagen.core import DataFileError
from eqagen.generators.blockworld.blocklist import read_block_list
from eqagen.generators.blockworld.savedir import read_region_file, read_save
from eqagen.generators.blockworld.schem import read_schem
from eqagen.generators.blockworld.world import BlockWorld

KINDS = ("save", "region", "schematic", "block-list")


def file_kind(path: str | Path) -> str:
    p = Path(path)
    if p.is_dir():
        if (p / "region").is_dir():
            return "save"
        raise DataFileError(p, "region/", "a directory without region/", "pass a Minecraft save directory")
    suffix = p.suffix.lower()
    kinds = {".mca": "region", ".schem": "schematic", ".txt": "block-list"}
    if suffix not in kinds:
        raise DataFileError(
            p,
            "file name",
            f"unknown world file type {suffix!r}",
            "pass a save directory, r.X.Z.mca, .schem or a PQB block list .txt",
        )
    if not p.exists():
        raise DataFileError(p, None, "does not exist", "check the path")
    return kinds[suffix]


def load_world(path: str | Path) -> BlockWorld:
    kind = file_kind(path)
    reader = {"save": read_save, "region": read_region_file, "schematic": read_schem, "block-list": read_block_list}
    return reader[kind](path)


def summarize(path: str | Path) -> dict[str, Any]:
    """Size, count per block id (without properties) and entities by id of any world file."""
    world = load_world(path)
    entities: Counter[str] = Counter(f"minecraft:{m.kind}" for m in world.mobs)
    block_entities: Counter[str] = Counter("minecraft:chest" for _ in world.chests)
    return {
        "path": str(path),
        "kind": file_kind(path),
        "size": list(world.shape),
        "origin": list(world.origin),
        "biome": world.biome,
        "blocks": dict(sorted(world.block_counts().items())),
        "n_blocks": int(sum(world.block_counts().values())),
        "entities": dict(sorted(entities.items())),
        "block_entities": dict(sorted(block_entities.items())),
        "structures": [s.structure_id for s in world.structures],
    }
