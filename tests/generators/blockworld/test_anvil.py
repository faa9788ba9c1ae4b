"""Anvil saves: a generated world written with entities and read back is identical; corrupt files fail
with DataFileError naming the file and the field."""

import gzip
import struct
import zlib

import nbtlib
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.core import DataFileError
from eqagen.generators.blockworld import anvil
from eqagen.generators.blockworld.embedded import generate_world
from eqagen.generators.blockworld.savedir import read_region_file, read_save, world_chunks, write_save
from eqagen.generators.blockworld.world import BIOMES

from .helpers import assert_same_world, state_grid


@pytest.mark.parametrize("biome", BIOMES)
def test_save_roundtrip_is_identical(tmp_path, biome):
    world = generate_world(biome, 3)
    back = read_save(write_save(world, tmp_path / "w"))
    assert_same_world(world, back)
    assert back.meta == world.meta


def test_roundtrip_with_offset_origin_and_many_mobs(tmp_path):
    world = generate_world("town", 9)
    world.origin = (-37, -64, 1000)  # chunks on both sides of 0, sections below y=0, four regions
    back = read_save(write_save(world, tmp_path / "w"))
    assert_same_world(world, back)
    assert {p.name for p in (tmp_path / "w" / "region").iterdir()} == {
        "r.-1.1.mca",
        "r.0.1.mca",
        "r.-1.2.mca",
        "r.0.2.mca",
    }


def test_entities_are_in_the_entities_region_files(tmp_path):
    world = generate_world("plains", 4)
    assert world.mobs
    write_save(world, tmp_path / "w")
    ids = []
    for path in (tmp_path / "w" / "entities").iterdir():
        for chunk in anvil.read_region(path).values():
            assert list(chunk["Position"]) in [
                [int(e["Pos"][0]) // 16, int(e["Pos"][2]) // 16] for e in chunk["Entities"]
            ]
            ids += [str(e["id"]) for e in chunk["Entities"]]
    assert sorted(ids) == sorted(f"minecraft:{m.kind}" for m in world.mobs)


def test_region_header_and_section_layout_follow_the_format(tmp_path):
    world = generate_world("desert", 2)
    write_save(world, tmp_path / "w")
    path = tmp_path / "w" / "region" / "r.0.0.mca"
    data = path.read_bytes()
    assert len(data) % 4096 == 0
    loc = struct.unpack(">I", data[0:4])[0]
    offset, sectors = (loc >> 8) * 4096, loc & 0xFF
    length, method = struct.unpack(">IB", data[offset : offset + 5])
    assert method == 2 and length <= sectors * 4096
    chunk = nbtlib.File.parse(__import__("io").BytesIO(zlib.decompress(data[offset + 5 : offset + 4 + length])))
    assert int(chunk["xPos"]) == 0 and int(chunk["zPos"]) == 0 and "Level" not in chunk
    for sec in chunk["sections"]:
        n = len(sec["block_states"]["palette"])
        if n == 1:
            assert "data" not in sec["block_states"]
            continue
        bits = max(4, int(np.ceil(np.log2(n))))
        assert len(sec["block_states"]["data"]) == -(-4096 // (64 // bits))
    # the block at (3, y, 5) from the raw long array equals the world's
    sec = next(s for s in chunk["sections"] if int(s["Y"]) == 0)
    palette = [str(p["Name"]) for p in sec["block_states"]["palette"]]
    bits = max(4, int(np.ceil(np.log2(len(palette)))))
    per_long = 64 // bits
    for y in range(0, 16, 3):
        i = y * 256 + 5 * 16 + 3
        word = int(sec["block_states"]["data"][i // per_long]) & (2**64 - 1)
        idx = (word >> ((i % per_long) * bits)) & ((1 << bits) - 1)
        assert palette[idx] == world.state_at(3, y, 5).split("[")[0]


@settings(max_examples=60, deadline=None)
@given(
    st.integers(1, 12).flatmap(
        lambda b: st.tuples(st.just(b), st.lists(st.integers(0, 2**b - 1), min_size=1, max_size=5000))
    )
)
def test_pack_unpack_roundtrip(bits_and_values):
    bits, values = bits_and_values
    arr = np.asarray(values, dtype=np.uint64)
    packed = anvil.pack_indices(arr, bits)
    assert packed.dtype == np.int64 and len(packed) == -(-len(values) // (64 // bits))
    assert (anvil.unpack_indices(packed, bits, len(values)) == arr).all()


def test_region_file_alone_reads_its_chunks(tmp_path):
    world = generate_world("snow", 1)
    write_save(world, tmp_path / "w")
    region = read_region_file(tmp_path / "w" / "region" / "r.0.0.mca")
    assert region.shape == (64, 32, 64)
    assert (state_grid(region)[:60, :, :60] == state_grid(world)).all()


def _save(tmp_path):
    write_save(generate_world("plains", 0), tmp_path / "w")
    return tmp_path / "w" / "region" / "r.0.0.mca"


def test_truncated_header(tmp_path):
    path = _save(tmp_path)
    path.write_bytes(path.read_bytes()[:100])
    with pytest.raises(DataFileError) as err:
        read_save(tmp_path / "w")
    assert err.value.field == "header" and "r.0.0.mca" in str(err.value)


def test_truncated_chunk(tmp_path):
    path = _save(tmp_path)
    path.write_bytes(path.read_bytes()[: 8192 + 40])
    with pytest.raises(DataFileError) as err:
        read_save(tmp_path / "w")
    assert "chunk (0, 0)" in err.value.field


def test_unknown_compression_and_corrupt_zlib(tmp_path):
    path = _save(tmp_path)
    data = bytearray(path.read_bytes())
    data[8192 + 4] = 9
    path.write_bytes(bytes(data))
    with pytest.raises(DataFileError, match="compression"):
        read_save(tmp_path / "w")
    data[8192 + 4] = 2
    data[8192 + 10 : 8192 + 30] = b"\x00" * 20
    path.write_bytes(bytes(data))
    with pytest.raises(DataFileError) as err:
        read_save(tmp_path / "w")
    assert err.value.field.startswith("chunk (0, 0)")


def test_palette_index_out_of_range(tmp_path):
    world = generate_world("plains", 0)
    chunks = world_chunks(world)
    sec = chunks[(0, 0)]["sections"][0]["block_states"]
    sec["data"] = nbtlib.LongArray(np.full(len(sec["data"]), -1, dtype=np.int64))
    (tmp_path / "w" / "region").mkdir(parents=True)
    anvil.write_region(tmp_path / "w" / "region" / "r.0.0.mca", {(0, 0): chunks[(0, 0)]})
    with pytest.raises(DataFileError) as err:
        read_save(tmp_path / "w")
    assert err.value.field == "chunk (0, 0).sections[0].data"


@pytest.mark.parametrize(
    "data",
    [nbtlib.List[nbtlib.Double]([nbtlib.Double(float("nan"))] * 256), nbtlib.IntArray([0] * 256)],
    ids=["doubles", "ints"],
)
def test_section_data_of_another_tag_type_is_refused_naming_the_field(tmp_path, data):
    """Found by the region fuzz test: a list of doubles (NaN) was cast to palette indices, with numpy's
    "invalid value encountered in cast" as the only sign."""
    world = generate_world("plains", 0)
    chunks = world_chunks(world)
    chunks[(0, 0)]["sections"][0]["block_states"]["data"] = data
    (tmp_path / "w" / "region").mkdir(parents=True)
    anvil.write_region(tmp_path / "w" / "region" / "r.0.0.mca", {(0, 0): chunks[(0, 0)]})
    with pytest.raises(DataFileError, match="not a LongArray") as err:
        read_save(tmp_path / "w")
    assert err.value.field == "chunk (0, 0).sections[0].data"


def test_corrupt_level_dat_and_missing_regions(tmp_path):
    _save(tmp_path)
    (tmp_path / "w" / "level.dat").write_bytes(gzip.compress(b"\x0a\x00"))
    with pytest.raises(DataFileError, match=r"level\.dat"):
        read_save(tmp_path / "w")
    (tmp_path / "empty" / "region").mkdir(parents=True)
    with pytest.raises(DataFileError, match="no region files"):
        read_save(tmp_path / "empty")


def test_pre_1_18_chunks_are_read(tmp_path):
    """A chunk in the 1.16 layout (Level wrapper, Sections/Palette/BlockStates, entities inside)."""
    palette = nbtlib.List[nbtlib.Compound](
        [
            nbtlib.Compound({"Name": nbtlib.String("minecraft:air")}),
            nbtlib.Compound({"Name": nbtlib.String("minecraft:stone")}),
        ]
    )
    idx = np.zeros(4096, np.uint64)
    idx[:256] = 1  # the bottom layer y=0
    section = nbtlib.Compound(
        {"Y": nbtlib.Byte(0), "Palette": palette, "BlockStates": nbtlib.LongArray(anvil.pack_indices(idx, 4))}
    )
    pig = nbtlib.Compound(
        {
            "id": nbtlib.String("minecraft:pig"),
            "Pos": nbtlib.List[nbtlib.Double]([nbtlib.Double(v) for v in (3.5, 1.0, 4.5)]),
            "UUIDMost": nbtlib.Long(5),
            "UUIDLeast": nbtlib.Long(-7),
        }
    )
    level = nbtlib.Compound(
        {
            "xPos": nbtlib.Int(0),
            "zPos": nbtlib.Int(0),
            "Sections": nbtlib.List[nbtlib.Compound]([section]),
            "Entities": nbtlib.List[nbtlib.Compound]([pig]),
        }
    )
    path = tmp_path / "r.0.0.mca"
    anvil.write_region(path, {(0, 0): nbtlib.Compound({"DataVersion": nbtlib.Int(2586), "Level": level})})
    w = read_region_file(path)
    assert w.shape == (16, 16, 16)
    assert (state_grid(w)[:, 0, :] == "minecraft:stone").all() and (w.blocks[:, 1:, :] == 0).all()
    assert [m.kind for m in w.mobs] == ["pig"] and w.mobs[0].position == (3.5, 1.0, 4.5)


@pytest.mark.parametrize("biome", ["town", "cave", "nether", "snow"])
def test_save_roundtrip_in_the_1_16_layout(tmp_path, biome):
    world = generate_world(biome, 6)
    write_save(world, tmp_path / "w", layout="1.16")
    assert_same_world(world, read_save(tmp_path / "w"))
    assert not (tmp_path / "w" / "entities").exists()
    chunk = anvil.read_region(tmp_path / "w" / "region" / "r.0.0.mca")[(1, 1)]
    assert int(chunk["DataVersion"]) == 2586 and "sections" not in chunk
    level = chunk["Level"]
    assert len(level["Biomes"]) == 1024 and str(level["Status"]) == "full"
    assert all("BlockStates" in s and len(s["Palette"]) >= 1 for s in level["Sections"])
    assert str(nbtlib.load(tmp_path / "w" / "level.dat")["Data"]["Version"]["Name"]) == "1.16.5"


def test_1_16_layout_has_no_blocks_below_zero(tmp_path):
    world = generate_world("plains", 1)
    world.origin = (0, -16, 0)
    with pytest.raises(ValueError, match="below y=0"):
        write_save(world, tmp_path / "w", layout="1.16")


def test_chunks_that_expand_past_the_region_budget_are_refused(tmp_path, monkeypatch):
    """Every chunk's decompression is bounded, and all the region's chunks share one budget: each chunk
    alone fits in it here, all of them together do not."""
    path = _save(tmp_path)
    data = path.read_bytes()
    locations = np.frombuffer(data[: anvil.SECTOR], dtype=">u4")
    sizes = []
    for loc in locations[locations > 0]:
        offset = int(loc >> 8) * anvil.SECTOR
        length = int.from_bytes(data[offset : offset + 4], "big")
        sizes.append(len(zlib.decompress(data[offset + 5 : offset + 4 + length])))
    assert len(sizes) > 1
    monkeypatch.setattr(anvil, "MAX_INFLATED_BYTES", sum(sizes) - 1)
    with pytest.raises(DataFileError, match=f"expand to more than {sum(sizes) - 1:,} bytes together") as err:
        anvil.read_region(path)
    assert err.value.field == f"chunk {_last_chunk(locations)} data"


def _last_chunk(locations: np.ndarray) -> tuple[int, int]:
    i = int(np.flatnonzero(locations)[-1])
    return (i % 32, i // 32)
