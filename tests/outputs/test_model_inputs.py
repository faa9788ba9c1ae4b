"""What a model observes: the history answers every question as the episode does, TAG-EQA's K-observation
subsample keeps what it promises, the scene graph's edges are the episode's relations, and the export command
writes one file per episode."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.core import ConfigError
from eqagen.outputs.exports import export
from eqagen.outputs.history import asked_answer, episode_from_history, episode_history, history_text
from eqagen.outputs.scenegraph import scene_graph
from eqagen.outputs.subsample import subsample_steps
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.filters import encloses
from tests.outputs.model_fixtures import episodes_and_records, write_family_dataset


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_family_dataset(tmp_path_factory.mktemp("families") / "ds")


def by_id():
    episodes, records = episodes_and_records()
    return {ep.episode_id: ep for ep in episodes}, records


def test_every_answer_is_recomputed_from_the_history_alone():
    """Each question's program over the episode rebuilt from its JSON history gives the stored answer, in all
    three world families (the tag-eqa test split: benchmarks/measure_model_inputs.py)."""
    episodes, records = by_id()
    rebuilt = {i: episode_from_history(json.loads(json.dumps(episode_history(ep)))) for i, ep in episodes.items()}
    families = set()
    for r in records:
        assert [g.to_dict() for g in asked_answer(rebuilt[r.episode_id], r)] == [
            g.to_dict() for g in r.structured_answer
        ], r.structured_question
        families.add(r.family)
    assert families == {"household", "navigation", "blockworld"}


def test_the_history_lists_only_what_the_agent_met():
    """An object never seen, acted on or in an event (and no room or structure) is not in the history."""
    episodes, _ = by_id()
    for ep in episodes.values():
        listed = {o["id"] for o in episode_history(ep)["objects"]}
        seen = ep.timeline.field("visible").any(axis=0)
        for e, iid in enumerate(ep.entities.instance_id):
            if seen[e]:
                assert iid in listed
        unseen = [iid for e, iid in enumerate(ep.entities.instance_id) if iid in listed and not seen[e]]
        for iid in unseen:  # listed without being seen: named by an action, an event, a parent, or an area
            e = ep.entities.index(iid)
            named = {ev.entity for ev in ep.events} | {ev.target for ev in ep.events}
            named |= set(ep.steps.target.tolist()) | set(ep.steps.held.tolist()) | set(ep.steps.receptacle.tolist())
            named |= set(ep.timeline.field("parent")[ep.timeline.field("visible").astype(bool)].tolist())
            attrs = ep.entities.attributes[e]
            assert e in named or attrs.get("kind") == "region" or attrs.get("category") == "structure", iid


def test_a_subsampled_history_is_no_episode():
    ep = next(iter(by_id()[0].values()))
    with pytest.raises(ValueError, match="subsampled"):
        episode_from_history(episode_history(ep, [0, 2]))


def kept_objects(history: dict) -> set[str]:
    seen = {v["id"] for s in history["steps"] for v in s["visible"]}
    return seen | {e["object"] for s in history["steps"] for e in s["events"] if e["object"]}


@settings(max_examples=25, deadline=None)
@given(k=st.integers(1, 80), which=st.integers(0, 8))
def test_subsample_keeps_every_event_and_fills_to_k(k, which):
    """Every event's step is kept; the history has exactly K steps where the events leave room (all steps
    where K covers them); steps are sorted and unique; the same call gives the same steps."""
    ep = list(by_id()[0].values())[which]
    steps = subsample_steps(ep, k)
    event_steps = {e.t for e in ep.events if e.entity >= 0}
    assert event_steps <= set(steps)
    assert steps == sorted(set(steps)) and steps == subsample_steps(ep, k)
    assert len(steps) == max(min(k, ep.n_steps), len(event_steps))


def test_subsample_sees_every_object_when_k_allows():
    """With K = 50, every object the agent saw is seen in a kept step (or named by a kept event)."""
    for ep in by_id()[0].values():
        seen = {ep.entities.instance_id[e] for e in np.flatnonzero(ep.timeline.field("visible").any(axis=0))}
        assert seen <= kept_objects(episode_history(ep, subsample_steps(ep, 50))), ep.episode_id


def test_history_text_shows_failures_and_positions():
    ep = next(e for e in by_id()[0].values() if not e.steps.success.all())
    text = history_text(episode_history(ep))
    failed = int(np.flatnonzero(~ep.steps.success)[0])
    line = text.splitlines()[1 + failed]
    assert line.startswith(f"step {failed}: ") and f"failed: {ep.steps.error[failed]}" in line
    assert "-0.00" not in text


def test_scene_graph_edges_are_the_receptacles_and_the_vertical_rule():
    """``on``/``in`` edges are exactly the listed objects' receptacles at the step (``in`` for an enclosing
    one); the graph at step 0 lists only what the agent saw at step 0."""
    ep = next(e for e in by_id()[0].values() if e.family == "household")
    ctx = EpisodeContext(ep)
    for t in (0, ep.n_steps // 2, None):
        graph = scene_graph(ep, t)
        step = graph["step"]
        index = [ep.entities.index(o["instance_id"]) for o in graph["objects"]]
        expected = set()
        for i, e in enumerate(index):
            p = int(ctx.parent[step, e])
            if p in index:
                expected.add((i, index.index(p), "in" if encloses(ctx)[p] else "on"))
        assert {tuple(x) for x in graph["edges"] if x[2] in ("on", "in")} == expected
        assert set(index) == set(np.flatnonzero(ctx.data[: step + 1].any(axis=0) & ctx.flag("exists")[step]).tolist())
    assert any(x[2] == "in" for x in scene_graph(ep)["edges"]) or not encloses(ctx).any()
    with pytest.raises(ConfigError, match="--at-step"):
        scene_graph(ep, ep.n_steps)


def test_scene_graph_boxes_show_each_vertical_edge():
    """The printed boxes are the ones above/under read: for every ``above`` edge the upper box's bottom is over
    the lower box's top (by at most 1 m of air) and their footprints overlap (within 5 cm); ``under`` mirrors
    it. A box printed by another size (the old size classes) breaks this on household scenes."""
    checked = 0
    for ep in [e for e in by_id()[0].values() if e.family == "household"][:4]:
        for t in (0, ep.n_steps // 2, None):
            graph = scene_graph(ep, t)
            boxes = [(np.array(o["bbox_center"]), np.array(o["bbox_extent"]) / 2) for o in graph["objects"]]
            for i, j, rel in graph["edges"]:
                if rel not in ("above", "under"):
                    continue
                (hi_c, hi_h), (lo_c, lo_h) = (boxes[i], boxes[j]) if rel == "above" else (boxes[j], boxes[i])
                gap = (hi_c[1] - hi_h[1]) - (lo_c[1] + lo_h[1])
                assert -0.011 < gap <= 1.011, (ep.episode_id, i, j, rel, gap)
                reach = hi_h[[0, 2]] + lo_h[[0, 2]] + 0.05 + 0.011
                assert (np.abs(hi_c[[0, 2]] - lo_c[[0, 2]]) <= reach).all(), (ep.episode_id, i, j, rel)
                checked += 1
    assert checked >= 10


def test_export_writes_one_history_per_episode_at_its_openeqa_reference(dataset, tmp_path):
    episodes, records = by_id()
    n = export(dataset, "history", tmp_path / "h", split="test", max_observations=20)
    asked = {r.episode_id for r in records if r.split == "test"}
    assert n == len(asked)
    oe = tmp_path / "oe.json"
    export(dataset, "openeqa", oe)  # the test split by default
    items = json.loads(oe.read_text())
    assert len(items) == sum(r.split == "test" for r in records)
    for item in items:
        history = json.loads((tmp_path / "h" / f"{item['episode_history']}.json").read_text())
        assert len(history["steps"]) <= max(20, len({e.t for e in episodes[history["episode_id"]].events}))
    n = export(dataset, "scenegraph", tmp_path / "g", split="all", at_step=0)
    assert n == len(episodes) and all(json.loads(p.read_text())["step"] == 0 for p in (tmp_path / "g").rglob("*.json"))


def test_cli_refuses_an_option_the_format_does_not_read(dataset, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "eqagen.cli", "export", str(dataset), "--format", "jsonl", "--at-step", "3",
         "--out", str(tmp_path / "x.jsonl")], capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and "--at-step" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "x.jsonl").exists()
