"""PQB-EQA's environment specifications, and environments assembled from its structure files.

``qea_for_environment_generation.csv`` has a header line ``Environment`` and one environment per line:
``<biome> nw<k>_ne<k>_sw<k>_se<k> <mob> <mob> ...`` (the structure code per quadrant, then the mobs
to summon; some lines have no mobs). ``env_specific_mobs.txt`` gives per biome the summon list
(``rabbit{RabbitType:4}``, alternatives split by ``|``) and the relative summon position.

An environment is assembled by placing ``structures/<biome>_<quadrant>_<k>.txt`` in its quadrant:
west structures at x = 0, east structures flush with the east edge, north ones at z = 0 (north is -z).
Only part of PQB's structure files are public; a missing file raises :class:`DataFileError` naming it,
unless ``on_missing="fill"`` is asked for, which lays the biome's flat ground in that quadrant and
lists the missing files in ``world.meta["missing_structures"]``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from eqagen.core import DataFileError, derive_rng
from eqagen.generators.blockworld.biomes import PROFILES, mob_extra, profile
from eqagen.generators.blockworld.blocklist import read_block_list
from eqagen.generators.blockworld.embedded import GROUND
from eqagen.generators.blockworld.features import chest_blocks, dominant_material
from eqagen.generators.blockworld.palette import Palette
from eqagen.generators.blockworld.world import QUADRANT_CODES, BlockWorld, Chest, Mob, Structure

_CODE_RE = re.compile(r"^nw(\d+)_ne(\d+)_sw(\d+)_se(\d+)$")
_NOMINAL = 30  # the side of a quadrant whose structure file is missing


@dataclass(frozen=True)
class EnvSpec:
    index: int  # 0-based row after the header
    biome: str
    structures: dict[str, int]  # quadrant code (nw, ne, sw, se) -> structure number
    mobs: tuple[str, ...]

    @property
    def scene_id(self) -> str:
        return f"pqb-{self.index:03d}-{self.biome}"

    def structure_file(self, quadrant: str) -> str:
        return f"{self.biome}_{quadrant}_{self.structures[quadrant]}.txt"


@dataclass(frozen=True)
class MobSpawnSpec:
    biome: str
    mobs: tuple[str, ...]  # alternatives, namespace-free ids
    extras: dict[str, dict[str, int]] = field(default_factory=dict)  # mob -> integer NBT
    offset: tuple[str, str, str] = ("~", "~", "~")


def read_env_specs(path: str | Path) -> list[EnvSpec]:
    path = Path(path)
    try:
        lines = path.read_text(encoding="utf-8").splitlines()
    except (OSError, UnicodeDecodeError) as err:
        raise DataFileError(path, None, f"cannot read: {err}", "pass qea_for_environment_generation.csv") from None
    if not lines or lines[0].strip() != "Environment":
        raise DataFileError(path, "line 1", "header 'Environment' missing", "the first line must be 'Environment'")
    specs = []
    for n, line in enumerate(lines[1:], start=2):
        parts = line.split()
        if not parts:
            continue
        if parts[0] not in PROFILES:
            raise DataFileError(
                path, f"line {n} (biome)", f"unknown biome {parts[0]!r}", f"use one of {', '.join(sorted(PROFILES))}"
            )
        m = _CODE_RE.match(parts[1]) if len(parts) > 1 else None
        if m is None:
            raise DataFileError(
                path,
                f"line {n} (structures)",
                f"bad structure code {parts[1:2]}",
                "write the quadrant codes as nw<k>_ne<k>_sw<k>_se<k>",
            )
        codes = dict(zip(("nw", "ne", "sw", "se"), (int(g) for g in m.groups())))
        specs.append(EnvSpec(len(specs), parts[0], codes, tuple(parts[2:])))
    return specs


def read_mob_specs(path: str | Path) -> dict[str, MobSpawnSpec]:
    path = Path(path)
    out = {}
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), start=1):
        parts = line.split()
        if not parts:
            continue
        if parts[0] not in PROFILES or len(parts) not in (4, 5):
            raise DataFileError(
                path,
                f"line {n}",
                f"expected '<biome> [mob|mob] x y z', found {line!r}",
                "one biome per line followed by its summon list and position",
            )
        mobs, extras = [], {}
        if len(parts) == 5:
            for alt in parts[1].split("|"):
                name, _, nbt = alt.partition("{")
                mobs.append(name)
                for kv in filter(None, nbt.rstrip("}").split(",")):
                    k, _, v = kv.partition(":")
                    extras.setdefault(name, {})[k] = int(v)
        out[parts[0]] = MobSpawnSpec(parts[0], tuple(mobs), extras, tuple(parts[-3:]))  # type: ignore[arg-type]
    return out


def _load_parts(spec: EnvSpec, structures_dir: Path, on_missing: str) -> tuple[dict[str, BlockWorld], list[str]]:
    parts, missing = {}, []
    for q in ("nw", "ne", "sw", "se"):
        f = structures_dir / spec.structure_file(q)
        if f.exists():
            parts[q] = read_block_list(f, biome=spec.biome)
        elif on_missing == "fill":
            missing.append(f.name)
        else:
            have = sorted(p.name for p in structures_dir.glob(f"{spec.biome}_{q}_*.txt"))
            raise DataFileError(
                f,
                "structure",
                f"missing (environment {spec.index}: {spec.biome} needs it; present: {', '.join(have) or 'none'})",
                "pass on_missing='fill' to lay flat ground there",
            )
    return parts, missing


def _layout(parts: dict[str, BlockWorld]) -> tuple[dict[str, tuple[int, int]], tuple[int, int, int]]:
    """Corner (x, z) of each quadrant and the world shape."""

    def side(q: str, axis: int) -> int:
        return parts[q].shape[axis] if q in parts else _NOMINAL

    west, east = max(side("nw", 0), side("sw", 0)), max(side("ne", 0), side("se", 0))
    north, south = max(side("nw", 2), side("ne", 2)), max(side("sw", 2), side("se", 2))
    sx, sz = west + east, north + south
    sy = max([p.shape[1] for p in parts.values()] + [GROUND + 8])
    corners = {
        "nw": (0, 0),
        "ne": (sx - side("ne", 0), 0),
        "sw": (0, sz - side("sw", 2)),
        "se": (sx - side("se", 0), sz - side("se", 2)),
    }
    return corners, (sx, sy, sz)


def _paste(blocks: np.ndarray, palette: Palette, part: BlockWorld, corner: tuple[int, int]) -> None:
    lookup = np.array([palette.id(s) for s in part.palette.states], dtype=np.uint16)
    x0, z0 = corner
    sx, sy, sz = part.shape
    target = blocks[x0 : x0 + sx, :sy, z0 : z0 + sz]
    ids = lookup[part.blocks]
    target[part.blocks != 0] = ids[part.blocks != 0]


def _fill_ground(blocks: np.ndarray, palette: Palette, biome: str, corner: tuple[int, int]) -> None:
    p = profile(biome)
    x0, z0 = corner
    region = blocks[x0 : x0 + _NOMINAL, :, z0 : z0 + _NOMINAL]
    region[:, 0] = palette.id("minecraft:bedrock")
    region[:, 1 : GROUND - 3] = palette.id(f"minecraft:{p.deep}")
    region[:, GROUND - 3 : GROUND - 1] = palette.id(f"minecraft:{p.subsurface}")
    region[:, GROUND - 1] = palette.id(f"minecraft:{p.surface}")


def _spawn_mobs(world: BlockWorld, spec: EnvSpec, mob_specs: dict[str, MobSpawnSpec], seed: int) -> list[Mob]:
    """Place the spec's mobs on standable voxels (bats two to four blocks above), seeded per scene."""
    from eqagen.generators.blockworld.navigation import standable_mask

    rng = derive_rng(seed, "pqb-mobs", world.scene_id)
    cells = np.argwhere(standable_mask(world))
    extras = mob_specs[spec.biome].extras if spec.biome in mob_specs else {}
    mobs = []
    for kind in spec.mobs:
        name, _, nbt = kind.partition("{")
        x, y, z = cells[int(rng.integers(0, len(cells)))]
        lift = int(rng.integers(2, 5)) if name == "bat" else 0
        extra = dict(extras.get(name, mob_extra(profile(spec.biome), name)))
        for kv in filter(None, nbt.rstrip("}").split(",")):
            k, _, v = kv.partition(":")
            extra[k] = int(v)
        uuid = tuple(int(v) for v in rng.integers(-(2**31), 2**31, size=4))
        pos = (float(x) + 0.5, float(min(y + lift, world.shape[1] - 1)), float(z) + 0.5)
        mobs.append(Mob(name, pos, uuid, float(rng.integers(0, 360)), extra))  # type: ignore[arg-type]
    return mobs


def assemble_environment(
    spec: EnvSpec,
    structures_dir: str | Path,
    mob_specs: dict[str, MobSpawnSpec] | None = None,
    seed: int = 0,
    on_missing: str = "error",
) -> BlockWorld:
    """The environment of one spec line: its four quadrant structures, its biome and its mobs."""
    if on_missing not in ("error", "fill"):
        raise ValueError(f"on_missing must be 'error' or 'fill', not {on_missing!r}")
    sdir = Path(structures_dir)
    parts, missing = _load_parts(spec, sdir, on_missing)
    corners, shape = _layout(parts)
    palette = Palette()
    blocks = np.zeros(shape, dtype=np.uint16)
    structures = []
    for q in ("nw", "ne", "sw", "se"):
        if q not in parts:
            _fill_ground(blocks, palette, spec.biome, corners[q])
            continue
        _paste(blocks, palette, parts[q], corners[q])
    world = BlockWorld(
        spec.scene_id,
        spec.biome,
        blocks,
        palette,
        meta={
            "source": "pqb-spec",
            "spec_index": spec.index,
            "missing_structures": missing,
            "minecraft_biome": profile(spec.biome).minecraft_biome,
            "spec_mobs": list(spec.mobs),
        },
    )
    for q in ("nw", "ne", "sw", "se"):
        if q in parts:
            (x0, z0), (sx, sy, sz) = corners[q], parts[q].shape
            bbox = (x0, 0, z0, x0 + sx, sy, z0 + sz)
            structures.append(
                Structure(
                    spec.structure_file(q)[:-4], "structure", dominant_material(world, bbox), bbox, QUADRANT_CODES[q]
                )
            )
    world.structures = structures
    world.chests = [Chest(p, [], "north") for p in chest_blocks(world)]
    world.mobs = _spawn_mobs(world, spec, mob_specs or {}, seed)
    world.sort_objects()
    return world
