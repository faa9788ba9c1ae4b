"""Backends: deterministic plans and episodes of the core shape; the world-file backend on a saved world
gives the embedded episode."""

import numpy as np
import pytest

from eqagen.core import ConfigError, Episode
from eqagen.generators import get_backend
from eqagen.generators.base import EpisodeSpec
from eqagen.generators.blockworld.embedded import generate_world
from eqagen.generators.blockworld.savedir import write_save
from eqagen.generators.blockworld.schem import write_schem

UP = np.array([0.0, 0.1, 0.0])


def test_embedded_plan_covers_biomes_and_is_deterministic():
    b = get_backend("blockworld", "embedded")
    plan = b.plan(16, 3, {})
    assert plan == b.plan(16, 3, {})
    assert {s.params["biome"] for s in plan} == {
        "city",
        "town",
        "cave",
        "desert",
        "mansion",
        "nether",
        "plains",
        "snow",
    }
    assert len({s.scene_id for s in plan}) == 16
    with pytest.raises(ConfigError):
        b.plan(2, 3, {"biomes": ["jungle"]})


def test_embedded_episode_shape_and_determinism():
    b = get_backend("blockworld", "embedded")
    spec = b.plan(3, 5, {"biomes": ["desert"]})[1]
    ep1, ep2 = b.run(spec), b.run(spec)
    assert ep1.to_dict() == ep2.to_dict()
    assert Episode.from_dict(ep1.to_dict()).to_dict() == ep1.to_dict()
    assert (ep1.family, ep1.backend, ep1.frame.native) == ("blockworld", "embedded", "minecraft")
    assert np.allclose(ep1.steps.pose[0], [0, 0, 0, 0, 0], atol=1e-5), "the episode frame starts at the origin"
    types = set(ep1.entities.type)
    assert "cactus" in types or ep1.meta["ground_truth"]["features"].get("cactus", 0) == 0
    cats = {a["category"] for a in ep1.entities.attributes}
    assert cats <= {"mob", "container", "structure", "plant"}
    assert {r.category for r in ep1.regions} >= {"quadrant"}
    assert all(a["biome"] == "desert" for a in ep1.entities.attributes)


def test_native_positions_map_back_to_the_world():
    b = get_backend("blockworld", "embedded")
    spec = b.plan(1, 9, {"biomes": ["plains"]})[0]
    ep = b.run(spec)
    world = generate_world("plains", spec.params["world_seed"], spec.scene_id)
    mobs = [i for i, a in enumerate(ep.entities.attributes) if a["category"] == "mob"]
    native = ep.native_positions(ep.timeline.field("position")[0, mobs])
    assert np.allclose(sorted(map(tuple, native)), sorted(m.position for m in world.mobs), atol=1e-3)
    ls = ep.steps.args[-1]["location_stats"]
    last = ep.native_positions(ep.steps.pose[-1:, :3])[0]
    assert np.allclose(last, [ls["xpos"], ls["ypos"], ls["zpos"]], atol=1e-3)


def test_events_match_the_poses():
    b = get_backend("blockworld", "embedded")
    for spec in b.plan(4, 2, {"biomes": ["town"]}):
        ep = b.run(spec)
        for e in ep.events:
            assert e.kind in ("enter", "exit")
            r = next(r for r in ep.regions if r.region_id == ep.entities.native_id[e.entity])
            lo, hi = np.asarray(r.footprint[:3]), np.asarray(r.footprint[3:])
            p = ep.steps.pose[e.t, :3] + UP
            inside = bool(np.all((p >= lo - 1e-4) & (p <= hi + 1e-4)))
            assert inside == (e.kind == "enter")


def test_world_file_backend_on_saved_world_matches_embedded(tmp_path):
    emb = get_backend("blockworld", "embedded")
    spec = emb.plan(1, 4, {"biomes": ["snow"]})[0]
    world = generate_world("snow", spec.params["world_seed"], spec.scene_id)
    write_save(world, tmp_path / spec.scene_id)
    write_schem(world, tmp_path / f"{spec.scene_id}.schem")
    wf = get_backend("blockworld", "world-file")
    expected = emb.run(spec)
    for path in (tmp_path / spec.scene_id, tmp_path / f"{spec.scene_id}.schem"):
        wspec = EpisodeSpec(
            "blockworld", "world-file", spec.scene_id, spec.seed, spec.index, {"path": str(path), "max_steps": 500}
        )
        ep = wf.run(wspec)
        assert ep.backend == "world-file"
        assert ep.steps.action == expected.steps.action
        assert np.array_equal(ep.steps.pose, expected.steps.pose)
        assert ep.entities.type == expected.entities.type
        assert np.array_equal(ep.timeline.field("visible"), expected.timeline.field("visible"))


@pytest.mark.realdata
def test_world_file_backend_on_pqb_specs(realdata):
    wf = get_backend("blockworld", "world-file")
    plan = wf.plan(3, 1, {"pqb_root": str(realdata / "pqb_eqa")})
    assert all(s.scene_id.startswith("pqb-") for s in plan)
    ep = wf.run(plan[0])
    assert ep.family == "blockworld" and ep.n_steps > 10
    assert sum(a["category"] == "structure" for a in ep.entities.attributes) == 4
    assert ep.meta["missing_structures"] == []
    filled = wf.plan(2, 1, {"pqb_root": str(realdata / "pqb_eqa"), "on_missing": "fill"})
    assert filled[0].scene_id == "pqb-000-plains"
