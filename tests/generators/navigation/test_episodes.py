"""Navigation episodes in core's form: determinism, frame, visibility, events, regions."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from eqagen.core import Episode, to_egocentric
from eqagen.generators import get_backend
from eqagen.generators.navigation.backend import embedded_house


@pytest.fixture(scope="module")
def episodes() -> list[Episode]:
    backend = get_backend("navigation", "embedded")
    return [backend.run(s) for s in backend.plan(12, 3, {"policy": "express", "n_scenes": 4})]


def test_deterministic_and_round_trips(episodes):
    backend = get_backend("navigation", "embedded")
    spec = backend.plan(12, 3, {"policy": "express", "n_scenes": 4})[5]
    again = backend.run(spec)
    assert again.to_dict() == episodes[5].to_dict()
    assert Episode.from_dict(again.to_dict()).to_dict() == again.to_dict()
    assert len({ep.episode_id for ep in episodes}) == len(episodes)
    assert {ep.family for ep in episodes} == {"navigation"} and {ep.frame.native for ep in episodes} == {"habitat"}


def test_episode_frame_starts_at_origin_facing_forward(episodes):
    for ep in episodes:
        assert np.allclose(ep.steps.pose[0], 0.0, atol=1e-5)
        native = ep.frame.to_native(ep.steps.pose[:, :3].astype(np.float64))
        assert np.allclose(native[0], ep.task["start_position"], atol=1e-5)
        assert np.allclose(native[-1], ep.task["final_position"], atol=1e-4)
        quat = np.asarray(ep.task["start_rotation"])
        assert np.isclose(np.rad2deg(2 * np.arctan2(quat[2], quat[0])) % 360, ep.frame.yaw0 % 360)


def _reference_visible(ep: Episode, scene, t: int, n: int) -> bool:
    """Slow reference: view cone from egocentric coordinates, range to the box, sight every 1 cm."""
    pose = ep.steps.pose[t].astype(np.float64)
    box = np.asarray(scene.objects[n].box)
    centre = ep.frame.to_episode((box[:3] + box[3:]) / 2)
    right, _, forward = to_egocentric(centre, pose[:3], pose[3])
    if np.degrees(abs(np.arctan2(right, forward))) > 45.0 + 1e-9:
        return False
    agent = ep.frame.to_native(pose[:3])
    nearest = np.clip(agent, box[:3], box[3:])
    gap = np.linalg.norm((nearest - agent)[[0, 2]])
    if gap > 5.0:
        return False
    for s in np.arange(0.0, max(gap - 0.1, 0.0), 0.01):
        p = agent + (nearest - agent) * s / max(gap, 1e-9)
        r, c = (int(np.floor(v)) for v in scene.grid.to_cell(p))
        if not scene.transparent[r, c]:
            return False
    return True


def test_visibility_matches_a_slow_reference(episodes):
    agree = total = 0
    for ep in episodes[:4]:
        scene = embedded_house(0, int(ep.scene_id.split("-")[-1]))
        visible = ep.timeline.field("visible")
        n_obj = len(scene.objects)
        assert not visible[:, n_obj:].any()  # region entities are never seen
        for t in range(0, ep.n_steps, 3):
            for n in range(n_obj):
                total += 1
                agree += bool(visible[t, n]) == _reference_visible(ep, scene, t, n)
    assert total > 500 and agree / total >= 0.99  # sampling density differs on grazing sight lines


def test_events_follow_the_walk(episodes):
    for ep in episodes:
        scene = embedded_house(0, int(ep.scene_id.split("-")[-1]))
        native = ep.frame.to_native(ep.steps.pose[:, :3].astype(np.float64))
        region = scene.region_at(native)
        n_obj = len(scene.objects)
        for ev in ep.events:
            if ev.kind == "enter_region":
                assert region[ev.t] == ev.entity - n_obj and ep.entities.attributes[ev.entity]["kind"] == "region"
            else:
                assert ev.kind == "pass" and ev.entity < n_obj
                box = np.asarray(scene.objects[ev.entity].box)
                assert np.linalg.norm((np.clip(native[ev.t], box[:3], box[3:]) - native[ev.t])[[0, 2]]) <= 1.0
        entered = [int(r) for r in region if r >= 0]
        changes = sum(1 for a, b in itertools.pairwise(entered) if a != b)
        assert sum(ev.kind == "enter_region" for ev in ep.events) == changes + (region[0] < 0 and len(entered) > 0)


def test_regions_are_entities_and_core_regions(episodes):
    ep = episodes[0]
    scene = embedded_house(0, int(ep.scene_id.split("-")[-1]))
    n_obj = len(scene.objects)
    assert len(ep.regions) == len(scene.regions) == ep.n_entities - n_obj
    position = ep.timeline.field("position")[0]
    for i, region in enumerate(ep.regions):
        lo, hi = np.array(region.footprint[:3]), np.array(region.footprint[3:])
        assert np.allclose(region.center, position[n_obj + i], atol=1e-4)
        assert (lo <= position[n_obj + i] + 1e-4).all() and (position[n_obj + i] <= hi + 1e-4).all()
        assert ep.entities.type[n_obj + i] == region.category
    for n in range(n_obj):
        assert ep.entities.attributes[n]["room"] == scene.regions[scene.objects[n].region].category
