"""Embedded worlds: biome-consistent ground, vegetation, structures, mobs; deterministic; indexed."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.generators.blockworld.biomes import PROFILES
from eqagen.generators.blockworld.embedded import GROUND, SIZE_XZ, generate_world
from eqagen.generators.blockworld.features import detect_cacti, detect_trees, ground_truth
from eqagen.generators.blockworld.palette import base_name, short_name
from eqagen.generators.blockworld.world import BIOMES, quadrant_of


@pytest.mark.parametrize("biome", BIOMES)
def test_world_shape_biome_and_surface(biome):
    w = generate_world(biome, 11)
    prof = PROFILES[biome]
    assert w.shape[0] == w.shape[2] == SIZE_XZ and w.biome == biome
    surface = {base_name(w.palette.states[i]) for i in np.unique(w.blocks[:, GROUND - 1, :])}
    assert f"minecraft:{prof.surface}" in surface
    assert all(m.kind in prof.mobs for m in w.mobs)
    if biome == "cave":
        assert (w.blocks[:, -1, :] != 0).all(), "a cave has a stone roof"


@pytest.mark.parametrize("seed", range(6))
def test_cacti_stand_on_sand_and_only_in_deserts(seed):
    for biome in BIOMES:
        w = generate_world(biome, seed)
        cacti = detect_cacti(w)
        if biome != "desert":
            assert not cacti
        for c in cacti:
            x, y, z = c.position
            assert short_name(w.state_at(x, y - 1, z)) == "sand"


@pytest.mark.parametrize("biome", ["plains", "town", "snow", "mansion", "nether", "city"])
def test_trees_are_of_the_biomes_wood(biome):
    woods = set(PROFILES[biome].woods)
    for seed in range(4):
        for tree in detect_trees(generate_world(biome, seed)):
            assert tree.material in woods


def test_each_garden_is_fenced_with_one_material():
    n = 0
    for biome in BIOMES:
        for seed in range(5):
            w = generate_world(biome, seed)
            for s in (s for s in w.structures if s.kind == "garden"):
                x0, y0, z0, x1, _, z1 = s.bbox
                ring = np.zeros((x1 - x0, z1 - z0), bool)
                ring[[0, -1], :] = True
                ring[:, [0, -1]] = True
                ids = w.blocks[x0:x1, y0, z0:z1][ring]
                names = {short_name(w.palette.states[i]) for i in ids if i != 0}  # the gate gap is air
                assert names == {s.material}, (biome, seed, names)
                assert (ids == 0).sum() == 1, "one gate"
                n += 1
    assert n > 5


@settings(max_examples=25, deadline=None)
@given(st.sampled_from(BIOMES), st.integers(0, 10**6))
def test_structures_lie_in_one_quadrant_and_do_not_overlap(biome, seed):
    w = generate_world(biome, seed)
    foot = np.zeros((SIZE_XZ, SIZE_XZ), int)
    for s in w.structures:
        x0, _, z0, x1, _, z1 = s.bbox
        corners = {quadrant_of(x, z, SIZE_XZ, SIZE_XZ) for x in (x0, x1 - 1) for z in (z0, z1 - 1)}
        assert corners == {s.quadrant}
        foot[x0:x1, z0:z1] += 1
    assert foot.max(initial=0) <= 1


@settings(max_examples=10, deadline=None)
@given(st.sampled_from(BIOMES), st.integers(0, 10**6))
def test_same_seed_same_bytes(biome, seed):
    a, b = generate_world(biome, seed), generate_world(biome, seed)
    assert a.blocks.tobytes() == b.blocks.tobytes() and a.palette.states == b.palette.states
    assert a.mobs == b.mobs and a.chests == b.chests and a.structures == b.structures


def test_different_seeds_differ():
    assert generate_world("plains", 1).blocks.tobytes() != generate_world("plains", 2).blocks.tobytes()


def test_ground_truth_counts_match_a_brute_force_scan():
    for biome in ("desert", "plains", "nether"):
        w = generate_world(biome, 5)
        gt = ground_truth(w)
        names = w.palette.states
        counts: dict[str, int] = {}
        sx, sy, sz = w.shape
        for x in range(sx):
            for y in range(sy):
                for z in range(sz):
                    i = int(w.blocks[x, y, z])
                    if i:
                        counts[base_name(names[i])] = counts.get(base_name(names[i]), 0) + 1
        assert gt.block_counts == dict(sorted(counts.items()))
        per_q: dict[str, dict[str, int]] = {}
        for m in w.mobs:
            q = quadrant_of(m.position[0], m.position[2], sx, sz)
            per_q.setdefault(q, {})[m.kind] = per_q.setdefault(q, {}).get(m.kind, 0) + 1
        for q, kinds in per_q.items():
            for kind, n in kinds.items():
                assert gt.per_quadrant[q][kind] == n


def test_chests_hold_items():
    chests = [c for seed in range(6) for c in generate_world("town", seed).chests]
    assert chests and all(c.items and all(n > 0 for _, n in c.items) for c in chests)
