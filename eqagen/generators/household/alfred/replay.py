"""Expert mode: replay an ALFRED trajectory's ``plan.low_actions`` in the household world.

Every expert action succeeded in AI2-THOR, so each must succeed here: the replay is both a source of
real trajectories on real scenes and the strictest test of the world's AI2-THOR semantics. The goal is
judged at the end by :mod:`.goals` (ALFRED's PDDL goal conditions) with ALFRED's heated/cooled/cleaned
bookkeeping. A failed action is recorded and the replay goes on, as AI2-THOR would; ``reason`` names
the first failure.
"""

from __future__ import annotations

import os
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from eqagen.core import Episode, make_episode_id
from eqagen.generators.household.alfred.goals import AlfredGoal, AlfredStateTracker, goal_satisfied
from eqagen.generators.household.alfred.ids import IdResolver
from eqagen.generators.household.alfred.reader import AlfredTrajectory, Layout, read_layout, scene_record, task_record
from eqagen.generators.household.alfred.scene_build import AlfredScene, build_alfred_scene
from eqagen.generators.household.alfred.state import world_metadata
from eqagen.generators.household.world import HouseholdWorld

# Arguments of ALFRED's api_action that only steer Unity (rendering, physics shortcuts): kept in the
# step's args for the record, never needed by the world's semantics.
ID_KEYS = ("objectId", "receptacleObjectId")
STATE_ACTIONS = ("ToggleObjectOn", "CloseObject")  # the actions ALFRED's heated/cooled/cleaned sets watch
STATE_TYPES = frozenset({"Microwave", "Fridge", "SinkBasin", "Faucet"})  # all those updates look at


@dataclass
class Fidelity:
    """One line of ``fidelity.json``."""

    trajectory: str
    task_type: str
    actions_ok: bool
    goal_ok: bool
    reason: str | None
    n_actions: int = 0
    floor_plan: str = ""

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def make_world(alfred_scene: AlfredScene, n_actions: int) -> tuple[HouseholdWorld, IdResolver]:
    world = HouseholdWorld(alfred_scene.scene, max_steps=max(n_actions, 1))
    resolver = IdResolver(world.native_id, world.types, world.pos, world.whole_of)
    return world, resolver


def _step(world: HouseholdWorld, resolver: IdResolver, api: dict[str, Any]) -> tuple[bool, str, dict]:
    args = {k: v for k, v in api.items() if k != "action" and k not in ID_KEYS}
    ids = {k: resolver.resolve(api[k]) for k in ID_KEYS if k in api}
    if ids:  # ALFRED's own objectIds kept in the step's args: a replay in AI2-THOR needs them as written
        args["alfred_ids"] = {k: api[k] for k in ID_KEYS if k in api}
    result = world.step(api["action"], **ids, **args)
    return result.success, result.error, ids


def replay_actions(
    world: HouseholdWorld, resolver: IdResolver, actions: list[dict[str, Any]], tracker: AlfredStateTracker
) -> str | None:
    """Run the actions; returns the first failure as text (None when every action succeeded)."""
    first = None
    for i, api in enumerate(actions):
        ok, error, ids = _step(world, resolver, api)
        if api["action"] in STATE_ACTIONS and ok:
            tracker.update({**api, **ids}, ok, world_metadata(world, STATE_TYPES))
        if not ok and first is None:
            target = " ".join(str(api[k]) for k in ID_KEYS if k in api)
            first = f"step {i + 1} {api['action']} {target}: {error}".replace("  ", " ")
    return first


def episode_task(traj: AlfredTrajectory, goal: AlfredGoal | None) -> dict[str, Any]:
    task = {"source": "alfred", "task_id": traj.task_id, "floor_plan": traj.floor_plan}
    if goal is not None:
        task |= goal.to_dict()
    return task


def replay_trajectory(
    traj: AlfredTrajectory,
    layout: Layout,
    relpath: str,
    seed: int = 0,
    extra_static: dict[str, str] | None = None,
) -> tuple[Episode, Fidelity]:
    """Replay one expert trajectory; the episode and its fidelity line."""
    scene = build_alfred_scene(traj, layout, extra_static)
    world, resolver = make_world(scene, len(traj.low_actions))
    tracker = AlfredStateTracker()
    reason = replay_actions(world, resolver, traj.low_actions, tracker)
    goal = AlfredGoal.from_pddl(traj.task_type, traj.pddl_params) if traj.task_type else None
    goal_ok = bool(goal and goal_satisfied(goal, world_metadata(world, names=goal.names), tracker))
    if reason is None and not goal_ok:
        reason = "goal not satisfied at the end" if goal else "trajectory has no task type"
    actions_ok = bool(world.s_success[1 : world.n_steps].all())
    fid = Fidelity(relpath, traj.task_type or "", actions_ok, goal_ok, reason, len(traj.low_actions), traj.floor_plan)
    meta = {
        "mode": "expert",
        "trajectory": relpath,
        "instruction": traj.instruction(0),
        "actions_ok": fid.actions_ok,
        "goal_ok": goal_ok,
        "success": goal_ok,
        "reason": reason,
        "added_cells": scene.added_cells,
        "skipped_types": scene.skipped_types,
        "parent_source": dict(sorted(scene.parent_source.items())),
        "alfred_scene": scene_record(traj),
        "alfred_task": task_record(traj),
    }
    episode_id = make_episode_id("alfred", traj.floor_plan, seed, "expert", relpath)
    return world.to_episode(episode_id, "alfred", seed, episode_task(traj, goal), meta), fid


def load_layout_cached(cache: dict[str, Layout], floor_plan: str, layouts_dir: str | os.PathLike[str]) -> Layout:
    if floor_plan not in cache:
        cache[floor_plan] = read_layout(floor_plan, Path(layouts_dir))
    return cache[floor_plan]
