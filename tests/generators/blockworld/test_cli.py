"""``eqagen blockworld inspect PATH``: JSON summary of block lists, schematics, region files and saves."""

import json
from collections import Counter

import pytest

from eqagen.cli import main
from eqagen.generators.blockworld.blocklist import write_block_list
from eqagen.generators.blockworld.embedded import generate_world
from eqagen.generators.blockworld.savedir import write_save
from eqagen.generators.blockworld.schem import write_schem


def _inspect(capsys, path) -> dict:
    assert main(["blockworld", "inspect", str(path)]) == 0
    return json.loads(capsys.readouterr().out)


def _expected_blocks(world) -> dict[str, int]:
    names = [s.split("[")[0].split("{")[0] for s in world.palette.states]
    counts = Counter(names[i] for i in world.blocks.ravel().tolist() if i)
    return dict(sorted(counts.items()))


def test_inspect_every_kind(tmp_path, capsys):
    world = generate_world("plains", 4)
    write_save(world, tmp_path / "save")
    write_schem(world, tmp_path / "w.schem")
    write_block_list(world, tmp_path / "w.txt")
    mobs = dict(sorted(Counter(f"minecraft:{m.kind}" for m in world.mobs).items()))
    blocks = _expected_blocks(world)
    for path, kind, has_mobs in [
        (tmp_path / "save", "save", True),
        (tmp_path / "w.schem", "schematic", True),
        (tmp_path / "w.txt", "block-list", False),
    ]:
        out = _inspect(capsys, path)
        assert out["kind"] == kind and out["size"] == [60, 32, 60]
        assert out["blocks"] == blocks
        assert out["entities"] == (mobs if has_mobs else {})
    region = _inspect(capsys, tmp_path / "save" / "region" / "r.0.0.mca")
    assert region["kind"] == "region" and region["size"] == [64, 32, 64] and region["blocks"] == blocks


@pytest.mark.realdata
def test_inspect_real_structure(realdata, capsys):
    path = realdata / "pqb_eqa" / "structures" / "desert_ne_1.txt"
    out = _inspect(capsys, path)
    lines = path.read_text().splitlines()[1:]
    assert out["n_blocks"] == len([ln for ln in lines if ln.strip()])
    assert out["blocks"]["minecraft:sandstone"] == sum(
        ln.split()[3].startswith("minecraft:sandstone[") or ln.split()[3] == "minecraft:sandstone" for ln in lines
    )


def test_inspect_bad_path_is_an_error(tmp_path, capsys):
    (tmp_path / "x.dat").write_text("x")
    assert main(["blockworld", "inspect", str(tmp_path / "x.dat")]) == 2
    assert "unknown world file type" in capsys.readouterr().err
