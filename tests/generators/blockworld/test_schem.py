"""Sponge schematics: roundtrip, varints, version 3 layout, corrupt files."""

import gzip

import nbtlib
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqagen.core import DataFileError
from eqagen.generators.blockworld.embedded import generate_world
from eqagen.generators.blockworld.schem import decode_varints, encode_varints, read_schem, write_schem

from .helpers import assert_same_world, state_grid


@pytest.mark.parametrize("biome", ["town", "desert", "cave"])
def test_schem_roundtrip(tmp_path, biome):
    world = generate_world(biome, 8)
    write_schem(world, tmp_path / "w.schem")
    assert_same_world(world, read_schem(tmp_path / "w.schem"))


@given(st.lists(st.integers(0, 2**28), max_size=300))
def test_varints_roundtrip(values):
    arr = np.asarray(values, dtype=np.int64)
    enc = encode_varints(arr)
    assert (decode_varints(enc) == arr).all()
    assert len(enc) == sum(1 + (v >= 128) + (v >= 2**14) + (v >= 2**21) + (v >= 2**28) for v in values)


def test_reads_version_3_layout(tmp_path):
    blocks = nbtlib.Compound(
        {
            "Palette": nbtlib.Compound({"minecraft:air": nbtlib.Int(0), "minecraft:stone": nbtlib.Int(1)}),
            "Data": nbtlib.ByteArray(np.array([1, 0, 0, 1, 1, 0, 0, 1], dtype=np.int8)),  # x fastest, then z, then y
            "BlockEntities": nbtlib.List[nbtlib.Compound]([]),
        }
    )
    body = nbtlib.Compound(
        {
            "Version": nbtlib.Int(3),
            "Width": nbtlib.Short(2),
            "Height": nbtlib.Short(2),
            "Length": nbtlib.Short(2),
            "Blocks": blocks,
            "Entities": nbtlib.List[nbtlib.Compound](
                [
                    nbtlib.Compound(
                        {
                            "Id": nbtlib.String("minecraft:cow"),
                            "Pos": nbtlib.List[nbtlib.Double]([nbtlib.Double(1.0)] * 3),
                            "Data": nbtlib.Compound({"UUID": nbtlib.IntArray([1, 2, 3, 4])}),
                        }
                    )
                ]
            ),
        }
    )
    nbtlib.File({"Schematic": body}, gzipped=True).save(tmp_path / "v3.schem")
    w = read_schem(tmp_path / "v3.schem")
    g = state_grid(w)
    assert g[0, 0, 0] == "minecraft:stone" and g[1, 0, 0] == "minecraft:air" and g[1, 0, 1] == "minecraft:stone"
    assert g[0, 1, 0] == "minecraft:stone" and g[1, 1, 1] == "minecraft:stone" and g[0, 1, 1] == "minecraft:air"
    assert [(m.kind, m.uuid) for m in w.mobs] == [("cow", (1, 2, 3, 4))]


def test_wrong_size_and_garbage(tmp_path):
    world = generate_world("plains", 1)
    write_schem(world, tmp_path / "w.schem")
    f = nbtlib.load(tmp_path / "w.schem")
    f["Width"] = nbtlib.Short(59)
    f.save(tmp_path / "bad.schem", gzipped=True)
    with pytest.raises(DataFileError) as err:
        read_schem(tmp_path / "bad.schem")
    assert err.value.field == "BlockData" and "bad.schem" in str(err.value)
    (tmp_path / "junk.schem").write_bytes(gzip.compress(b"not nbt at all"))
    with pytest.raises(DataFileError, match=r"junk\.schem"):
        read_schem(tmp_path / "junk.schem")
