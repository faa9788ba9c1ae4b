"""PQB block lists: every real structure file loads with exactly its listed blocks."""

import re
from pathlib import Path

import numpy as np
import pytest

from eqagen.core import DataFileError
from eqagen.generators.blockworld.blocklist import read_block_list, write_block_list
from eqagen.generators.blockworld.embedded import generate_world

from .helpers import assert_same_world, state_grid


def _independent_parse(path: Path) -> tuple[tuple[int, int, int], dict[tuple[int, int, int], str]]:
    """A second, simple reading of the format: quotes removed, properties sorted."""
    lines = path.read_text().splitlines()
    size = tuple(int(v) for v in lines[0].split())
    blocks = {}
    for line in lines[1:]:
        if not line.strip():
            continue
        x, y, z, state = line.split(" ", 3)
        m = re.match(r"([^\[{]+)(?:\[([^\]]*)\])?(\{.*\})?$", state)
        name, props, layer = m.group(1), m.group(2), m.group(3)
        text = name
        if props:
            text += "[" + ",".join(sorted(p.replace('"', "") for p in props.split(","))) + "]"
        if layer:
            text += layer.replace('"', "")
        blocks[(int(x), int(y), int(z))] = text
    return size, blocks


@pytest.mark.realdata
def test_every_structure_file_loads_with_exactly_its_blocks(realdata):
    files = sorted((realdata / "pqb_eqa" / "structures").glob("*.txt"))
    assert len(files) == 78
    for path in files:
        world = read_block_list(path)
        size, listed = _independent_parse(path)
        grid = state_grid(world)
        coords = np.argwhere(world.blocks != 0)
        got = {tuple(int(v) for v in c): grid[tuple(c)] for c in coords}
        assert got == listed, path.name
        assert world.meta["header_size"] == list(size)
        assert all(world.shape[i] >= size[i] for i in range(3))


@pytest.mark.realdata
def test_structure_file_roundtrip(realdata, tmp_path):
    src = realdata / "pqb_eqa" / "structures" / "circus_nw_2.txt"  # has waterlogged blocks
    world = read_block_list(src)
    write_block_list(world, tmp_path / "circus_nw_2.txt")
    back = read_block_list(tmp_path / "circus_nw_2.txt")
    assert (state_grid(back) == state_grid(world)).all()
    assert _independent_parse(tmp_path / "circus_nw_2.txt")[1] == _independent_parse(src)[1]


def test_generated_world_as_block_list(tmp_path):
    world = generate_world("snow", 2)
    write_block_list(world, tmp_path / "snow.txt")
    back = read_block_list(tmp_path / "snow.txt")
    assert (state_grid(back) == state_grid(world)).all()


@pytest.mark.parametrize(
    ("text", "field"),
    [
        ("3 3\n0 0 0 minecraft:stone\n", "line 1 (size)"),
        ("3 3 3\n0 0 minecraft:stone\n", "line 2"),
        ("3 3 3\n0 0 0 minecraft:stone\n0 x 0 minecraft:dirt\n", "line 3"),
        ("3 3 3\n0 0 0 minecraft:stone\n0 0 0 minecraft:dirt\n", "line 3"),
        ("3 3 3\n0 -1 0 minecraft:stone\n", "line 2"),
        ("3 3 3\n0 0 0 minecraft:stone[facing]\n", "line 2"),
        ("3 3 3\n0 0 0 minecraft:stone\n1 0 0 minecraf\n", "line 3"),  # a line cut short: no new block 'minecraf'
        ("3 3 3\n0 0 0 minecraft:stone\n0 0 900 minecraft:dirt\n", "line 3"),  # would grow the world to 901
        ("3 3 3\n0 0 0 minecraft:stone\n4 0 0 minecraft:dirt\n", "line 3"),  # two past the stated size
    ],
)
def test_malformed_block_lists_name_the_line(tmp_path, text, field):
    path = tmp_path / "bad.txt"
    path.write_text(text)
    with pytest.raises(DataFileError) as err:
        read_block_list(path)
    assert err.value.field == field and "bad.txt" in str(err.value)


def test_roundtrip_keeps_mobs_out(tmp_path):
    world = generate_world("plains", 3)
    write_block_list(world, tmp_path / "p.txt")
    back = read_block_list(tmp_path / "p.txt")
    world.mobs, world.chests, world.structures, world.spawn = [], [], [], None
    back.scene_id, back.biome = world.scene_id, world.biome
    assert_same_world(world, back)


def test_a_block_one_past_the_stated_size_is_kept_as_pqb_writes_them(tmp_path):
    """PQB's own tree.txt and duck.txt list blocks one past their stated height: they still load."""
    path = tmp_path / "tree.txt"
    path.write_text("2 2 2\n0 0 0 minecraft:oak_log\n0 2 0 minecraft:oak_leaves\n")
    world = read_block_list(path)
    assert world.shape == (2, 3, 2) and world.meta["header_size"] == [2, 2, 2]
