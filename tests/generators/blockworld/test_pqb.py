"""PQB's environment specifications and environments assembled from them."""

import pytest

from eqagen.core import DataFileError
from eqagen.generators.blockworld.blocklist import read_block_list
from eqagen.generators.blockworld.pqb import assemble_environment, read_env_specs, read_mob_specs
from eqagen.generators.blockworld.world import BIOMES, QUADRANT_CODES

from .helpers import state_grid

pytestmark = pytest.mark.realdata


@pytest.fixture(scope="module")
def pqb(realdata):
    root = realdata / "pqb_eqa"
    return (
        root,
        read_env_specs(root / "qea_for_environment_generation.csv"),
        read_mob_specs(root / "env_specific_mobs.txt"),
    )


def _complete(root, specs):
    return [s for s in specs if all((root / "structures" / s.structure_file(q)).exists() for q in QUADRANT_CODES)]


def test_specs_parse(pqb):
    _, specs, mobs = pqb
    assert len(specs) == 424  # the 424 environments after the header line
    assert {s.biome for s in specs} == set(BIOMES)
    assert mobs["desert"].extras == {"rabbit": {"RabbitType": 4}}
    assert mobs["snow"].mobs == ("polar_bear", "wolf", "rabbit")


def test_assembled_environments_have_their_biome_structures_and_mobs(pqb):
    root, specs, mobs = pqb
    complete = _complete(root, specs)
    assert len(complete) >= 40
    for spec in complete[::4]:
        world = assemble_environment(spec, root / "structures", mobs, seed=1)
        assert world.biome == spec.biome and world.meta["missing_structures"] == []
        assert [s.structure_id for s in world.structures] == [spec.structure_file(q)[:-4] for q in QUADRANT_CODES]
        assert sorted(m.kind for m in world.mobs) == sorted(spec.mobs)
        grid = state_grid(world)
        for s in world.structures:
            assert s.quadrant == QUADRANT_CODES[s.structure_id.split("_")[1]]
            part = read_block_list(root / "structures" / f"{s.structure_id}.txt")
            x0, _, z0, x1, y1, z1 = s.bbox
            sub, src = grid[x0:x1, :y1, z0:z1], state_grid(part)
            listed = part.blocks != 0
            assert (sub[listed] == src[listed]).all(), s.structure_id
            assert world.quadrant_of((x0 + x1) / 2, (z0 + z1) / 2) == s.quadrant
        if spec.biome == "desert":
            assert all(m.extra == {"RabbitType": 4} for m in world.mobs)


def test_missing_structure_is_named_or_filled(pqb):
    root, specs, mobs = pqb
    incomplete = next(s for s in specs if s not in _complete(root, specs))
    with pytest.raises(DataFileError) as err:
        assemble_environment(incomplete, root / "structures", mobs)
    assert err.value.field == "structure" and "on_missing='fill'" in str(err.value)
    world = assemble_environment(incomplete, root / "structures", mobs, on_missing="fill")
    missing = world.meta["missing_structures"]
    assert missing and all(not (root / "structures" / m).exists() for m in missing)
    assert len(world.structures) == 4 - len(missing)


def test_bad_spec_lines(tmp_path):
    path = tmp_path / "spec.csv"
    path.write_text("Environment\nplains nw1_ne1_sw1_se1 pig\njungle nw1_ne1_sw1_se1\n")
    with pytest.raises(DataFileError) as err:
        read_env_specs(path)
    assert err.value.field == "line 3 (biome)"
    path.write_text("Environment\nplains nw1_ne1 pig\n")
    with pytest.raises(DataFileError, match="line 2"):
        read_env_specs(path)
    path.write_text("plains nw1_ne1_sw1_se1\n")
    with pytest.raises(DataFileError, match="line 1"):
        read_env_specs(path)
