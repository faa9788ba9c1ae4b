"""Bad Minecraft input: PQB block lists, Anvil region files and level.dat, Sponge .schem files and the
PQB spec files, mutated byte by byte and tag by tag; only DataFileError naming the file escapes."""

from __future__ import annotations

import gzip
import io
import shutil
from pathlib import Path

import nbtlib
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqagen.core import DataFileError
from eqagen.generators.blockworld import anvil
from eqagen.generators.blockworld.blocklist import read_block_list, write_block_list
from eqagen.generators.blockworld.embedded import generate_world
from eqagen.generators.blockworld.files import load_world
from eqagen.generators.blockworld.pqb import read_env_specs, read_mob_specs
from eqagen.generators.blockworld.savedir import write_save
from eqagen.generators.blockworld.schem import write_schem
from eqagen.generators.blockworld.world import BlockWorld

from .conftest import FUZZ, FUZZ_LONG
from .mutate import mutate_nbt_in_place, mutated_bytes, mutated_text, read_or_clean_error

ENV_SPECS = (
    "Environment\nplains nw2_ne1_sw3_se1 sheep sheep cow\ncave nw3_ne2_sw1_se1 bat bat\ndesert nw1_ne1_sw1_se1\n"
)
MOB_SPECS = "nether strider ~ ~ ~-15\ncave bat ~7 16 ~9\ndesert rabbit{RabbitType:4} ~ ~ ~\n"


def small_world() -> BlockWorld:
    """A generated world cut to a small box (fast to write and read), with its mobs and chests inside."""
    world = generate_world("plains", 3)
    return world


@pytest.fixture(scope="module")
def originals(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    d = tmp_path_factory.mktemp("bw-orig")
    world = small_world()
    write_save(world, d / "save")
    write_schem(world, d / "w.schem")
    write_block_list(world, d / "plains_nw_1.txt")
    (d / "specs.csv").write_text(ENV_SPECS)
    (d / "mobs.txt").write_text(MOB_SPECS)
    return {
        "save": d / "save",
        "region": sorted((d / "save" / "region").glob("r.*.mca"))[0],
        "level": d / "save" / "level.dat",
        "schem": d / "w.schem",
        "blocks": d / "plains_nw_1.txt",
        "specs": d / "specs.csv",
        "mobs": d / "mobs.txt",
    }


def test_the_originals_read(originals: dict[str, Path]) -> None:
    for key in ("save", "region", "schem", "blocks"):
        assert load_world(originals[key]).blocks.any(), key
    assert len(read_env_specs(originals["specs"])) == 3 and len(read_mob_specs(originals["mobs"])) == 3


def copy_save(originals: dict[str, Path], dest: Path) -> Path:
    if dest.exists():
        shutil.rmtree(dest)
    shutil.copytree(originals["save"], dest)
    return dest


# --- byte damage ------------------------------------------------------------------------------------------


@FUZZ
@given(which=st.sampled_from(["region", "level", "schem", "blocks"]), data=st.data())
def test_damaged_bytes(originals: dict[str, Path], scratch: Path, which: str, data) -> None:
    save = copy_save(originals, scratch / "bw-bytes" / "save")
    here = scratch / "bw-bytes"
    targets = {"region": save / "region" / originals["region"].name, "level": save / "level.dat",
               "schem": here / "w.schem", "blocks": here / "plains_nw_1.txt"}  # fmt: skip
    target = targets[which]
    original = originals[which].read_bytes()
    # Compressed files: damage the NBT inside as often as the compressed bytes.
    inner = which in ("level", "schem") and data.draw(st.booleans())
    payload = gzip.decompress(original) if inner else original
    damaged = data.draw(mutated_bytes(payload))
    target.write_bytes(gzip.compress(damaged, mtime=0) if inner else damaged)
    read_or_clean_error(target, load_world, save if which in ("region", "level") else target)


@FUZZ
@given(data=st.data())
def test_damaged_region_chunks(originals: dict[str, Path], scratch: Path, data) -> None:
    """Damage inside a chunk's (compressed) payload, not only in the header."""
    raw = bytearray(originals["region"].read_bytes())
    locations = np.frombuffer(bytes(raw[: anvil.SECTOR]), dtype=">u4")
    i = data.draw(st.sampled_from(np.flatnonzero(locations).tolist()))
    offset = int(locations[i] >> 8) * anvil.SECTOR
    length = int.from_bytes(raw[offset : offset + 4], "big")
    start = offset + data.draw(st.integers(0, length + 3))
    raw[start : start + 1] = data.draw(st.sampled_from([b"", b"\x00", b"\xff", b"\x03", b"\x01\x02"]))
    path = scratch / "bw-chunk" / originals["region"].name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(bytes(raw))
    read_or_clean_error(path, load_world, path)


# --- tag damage ------------------------------------------------------------------------------------------------


@FUZZ
@given(data=st.data())
def test_wrong_tags_in_region_chunks(originals: dict[str, Path], scratch: Path, data) -> None:
    chunks = anvil.read_region(originals["region"])
    key = data.draw(st.sampled_from(sorted(chunks)))
    chunks[key] = data.draw(mutate_nbt_in_place(chunks[key]))
    save = copy_save(originals, scratch / "bw-tags" / "save")
    target = save / "region" / originals["region"].name
    anvil.write_region(target, chunks)
    read_or_clean_error(target, load_world, save)


@FUZZ
@given(data=st.data(), which=st.sampled_from(["level", "schem"]))
def test_wrong_tags_in_level_and_schem(originals: dict[str, Path], scratch: Path, data, which: str) -> None:
    root = nbtlib.load(originals[which])
    data.draw(mutate_nbt_in_place(root))
    save = copy_save(originals, scratch / "bw-ltags" / "save")
    target = save / "level.dat" if which == "level" else scratch / "bw-ltags" / "w.schem"
    buf = io.BytesIO()
    root.write(buf)
    target.write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    read_or_clean_error(target, load_world, save if which == "level" else target)


@pytest.mark.parametrize("value", [nbtlib.String(""), nbtlib.IntArray([1, 2]), nbtlib.List[nbtlib.Int]([])])
def test_a_level_origin_without_three_coordinates_names_the_field(originals, scratch, value) -> None:
    """Found by the property test above: ``origin`` as an empty string iterated to no coordinate at all."""
    save = copy_save(originals, scratch / "bw-origin" / "save")
    root = nbtlib.load(save / "level.dat")
    root["Data"]["eqagen"]["origin"] = value
    buf = io.BytesIO()
    root.write(buf)
    (save / "level.dat").write_bytes(gzip.compress(buf.getvalue(), mtime=0))
    with pytest.raises(DataFileError, match=r"Data\.eqagen\.origin"):
        load_world(save)


# --- text -------------------------------------------------------------------------------------------------------


@FUZZ
@given(data=st.data(), which=st.sampled_from(["blocks", "specs", "mobs"]))
def test_mutated_text_files(originals: dict[str, Path], scratch: Path, data, which: str) -> None:
    text = originals[which].read_text()
    if which == "blocks":  # a few lines are enough, and keep the run quick
        text = "\n".join(text.splitlines()[:40])
    path = scratch / "bw-text" / originals[which].name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data.draw(mutated_text(text)), encoding="utf-8", errors="surrogatepass")
    reader = {"blocks": read_block_list, "specs": read_env_specs, "mobs": read_mob_specs}[which]
    read_or_clean_error(path, reader, path)


@pytest.mark.parametrize(
    "text",
    [
        "99999999 99999999 99999999\n0 0 0 minecraft:stone\n",
        "2 2 2\n0 0 4000000000 minecraft:stone\n",
        "2 2 2\n0 0 0 minecraft:stone[\n",
        "2 2 2\n\u00b2 0 0 minecraft:stone\n",
    ],
    ids=["huge-size", "huge-coordinate", "open-bracket", "superscript-digit"],
)
def test_block_lists_with_odd_values(scratch: Path, text: str) -> None:
    path = scratch / "bw-odd" / "x.txt"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    with pytest.raises(DataFileError) as err:
        read_block_list(path)
    assert err.value.field and err.value.field.startswith("line") and str(path) in str(err.value)


@pytest.mark.realdata
@FUZZ
@given(data=st.data())
def test_mutated_real_pqb_files(realdata: Path, scratch: Path, data) -> None:
    root = realdata / "pqb_eqa"
    name = data.draw(st.sampled_from(["qea_for_environment_generation.csv", "env_specific_mobs.txt"]))
    path = scratch / "bw-real" / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data.draw(mutated_text((root / name).read_text())), encoding="utf-8", errors="surrogatepass")
    reader = read_env_specs if name.endswith(".csv") else read_mob_specs
    read_or_clean_error(path, reader, path)


@pytest.mark.slow
@FUZZ_LONG
@given(which=st.sampled_from(["region", "level", "schem", "blocks"]), data=st.data())
def test_damaged_bytes_long(originals: dict[str, Path], scratch: Path, which: str, data) -> None:
    test_damaged_bytes.hypothesis.inner_test(originals, scratch, which, data)
