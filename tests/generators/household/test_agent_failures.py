"""FILM's failure mechanisms of the agent, each switched on alone in a small kitchen, and off by default."""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from eqagen.core import derive_rng
from eqagen.generators.household.agent import AgentConfig, FilmAgent
from eqagen.generators.household.scene import HouseholdScene
from eqagen.generators.household.tasks import AlfredTask
from eqagen.generators.household.world import HouseholdWorld
from tests.generators.household.test_world import _obj, kitchen

PICK_APPLE = AlfredTask(task_type="pick_and_place_simple", object_target="Apple", parent_target="DiningTable")
PICK_TOMATO = AlfredTask(task_type="pick_and_place_simple", object_target="Tomato", parent_target="CounterTop")


def run(scene: HouseholdScene, task: AlfredTask, cfg: AgentConfig, seed: int = 0) -> tuple[FilmAgent, HouseholdWorld]:
    world = HouseholdWorld(scene, max_steps=120)
    agent = FilmAgent(world, task, derive_rng(seed, "agent-failures"), cfg)
    agent.run()
    return agent, world


def tomato_in_the_fridge() -> HouseholdScene:
    """The kitchen with its only tomato shut in the (closed) fridge."""
    scene = kitchen()
    fridge = next(o for o in scene.objects if o.object_type == "Fridge")
    objs = [o for o in scene.objects if o.object_type != "Tomato"]
    objs.append(_obj("Tomato", (1.25, 0.8, 0.75), fridge.object_id))
    return replace(scene, objects=objs)


def test_a_wide_mask_falls_on_the_counter_and_thor_refuses_it():
    agent, world = run(kitchen(), PICK_APPLE, AgentConfig(mask_error_deg=40.0))
    errors = [e for e in world.s_error if e]
    assert any(e.startswith("CounterTop|") and e.endswith("is not pickupable") for e in errors)
    assert agent.interaction_failures >= 1 and world.held != world.types.index("Apple")
    _, exact_world = run(kitchen(), PICK_APPLE, AgentConfig())
    assert not any("CounterTop" in e and "pickupable" in e for e in exact_world.s_error)


def test_search_that_does_not_open_never_finds_what_is_in_the_fridge():
    agent, world = run(tomato_in_the_fridge(), PICK_TOMATO, AgentConfig(open_to_search=False))
    assert agent.stop_reason == "max_steps" and agent.phase == "search" and agent.sought == "Tomato"
    assert agent.sought_enclosed() and not agent.sought_absent()
    assert "OpenObject" not in world.s_action  # it never looked inside
    assert agent.search_revisits > 0  # and went round the same cells looking
    _, opener_world = run(tomato_in_the_fridge(), PICK_TOMATO, AgentConfig())
    assert "OpenObject" in opener_world.s_action  # the default search opens the fridge


def test_a_blind_detector_leaves_the_goal_object_not_found():
    agent, _ = run(kitchen(), PICK_APPLE, AgentConfig(blind_small=1.0, open_to_search=False))
    assert agent.stop_reason == "max_steps" and agent.phase == "search" and agent.sought == "Apple"
    assert not agent.sought_enclosed() and not agent.known[agent.types == "Apple"].any()
    seen, _ = run(kitchen(), PICK_APPLE, AgentConfig(blind_small=0.0, open_to_search=False))
    assert seen.known[seen.types == "Apple"].any()


def test_collisions_and_interaction_failures_are_counted_apart():
    for seed in range(4):
        agent, world = run(kitchen(), PICK_APPLE, AgentConfig(mask_error_deg=20.0, phantom_free=1.0), seed)
        errors = np.array(world.s_error)
        actions = np.array(world.s_action)
        assert agent.collisions == int(np.sum((errors != "") & np.char.startswith(actions, "Move")))
        assert agent.interaction_failures == int(np.sum((errors != "") & np.char.endswith(actions, "Object")))
