"""Household episodes: 1,500 FILM-like agent episodes of up to 250 steps (target: under 60 s on one core).

Runs the ``household/embedded`` backend end to end (procedural rooms, task sampling, the agent, the
world, and the conversion to the core Episode) and prints: the action failure rate (target >= 5%),
the share of episodes that revisit a pose (loops), the task success rate (target 30-90%), the mean
episode length, stop reasons, success per task type, and the time taken (wall and CPU: the CPU time is
the fairer number on a shared machine). ``--json PATH`` writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter
from pathlib import Path

import numpy as np

from eqagen.core import Episode
from eqagen.generators import get_backend
from eqagen.generators.household.backend import home_for

TARGET_SECONDS = 60.0
TARGET_FAILURE_RATE = 0.05
TARGET_SUCCESS = (0.30, 0.90)


def revisits_a_pose(ep: Episode) -> bool:
    """The agent comes back to a pose (position, yaw, pitch) it had left: it looped."""
    pose = np.round(ep.steps.pose.astype(np.float64), 3)
    keep = np.ones(len(pose), dtype=bool)
    keep[1:] = (pose[1:] != pose[:-1]).any(axis=1)  # a failed or no-op step is not a revisit
    runs = pose[keep]
    return len(np.unique(runs, axis=0)) < len(runs)


def revisits_a_cell(ep: Episode) -> bool:
    """The agent stands again on a cell it had walked away from."""
    cells = np.rint(ep.steps.pose[:, [0, 2]].astype(np.float64) / 0.25).astype(np.int64)
    keep = np.ones(len(cells), dtype=bool)
    keep[1:] = (cells[1:] != cells[:-1]).any(axis=1)
    runs = cells[keep]
    return len(np.unique(runs, axis=0)) < len(runs)


def summarise(episodes: list[Episode]) -> dict:
    actions = sum(ep.n_steps - 1 for ep in episodes)
    failed = sum(int((~ep.steps.success[1:]).sum()) for ep in episodes)
    by_type: dict[str, list[bool]] = {}
    for ep in episodes:
        by_type.setdefault(ep.task["task_type"], []).append(bool(ep.meta["success"]))
    return {
        "episodes": len(episodes),
        "actions": actions,
        "action_failure_rate": round(failed / max(actions, 1), 4),
        "loop_share_pose_revisit": round(float(np.mean([revisits_a_pose(ep) for ep in episodes])), 4),
        "loop_share_cell_revisit": round(float(np.mean([revisits_a_cell(ep) for ep in episodes])), 4),
        "success_rate": round(float(np.mean([ep.meta["success"] for ep in episodes])), 4),
        "mean_length": round(float(np.mean([ep.n_steps for ep in episodes])), 2),
        "max_length": int(max(ep.n_steps for ep in episodes)),
        "stop_reasons": dict(Counter(ep.meta["stop_reason"] for ep in episodes).most_common()),
        "success_by_task_type": {k: round(float(np.mean(v)), 3) for k, v in sorted(by_type.items())},
        "events": dict(Counter(e.kind for ep in episodes for e in ep.events).most_common()),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=1500)
    ap.add_argument("--scenes", type=int, default=100)
    ap.add_argument("--max-steps", type=int, default=250)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    backend = get_backend("household", "embedded")
    specs = backend.plan(args.episodes, args.seed, {"n_scenes": args.scenes, "max_steps": args.max_steps})
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for spec in specs[: args.scenes]:
        home_for(spec.scene_id)
    scenes_s = time.process_time() - cpu0
    episodes = [backend.run(spec) for spec in specs]
    wall, cpu = time.perf_counter() - wall0, time.process_time() - cpu0
    result = summarise(episodes)
    result.update({
        "scenes": args.scenes,
        "wall_s": round(wall, 2),
        "cpu_s": round(cpu, 2),
        "scene_build_cpu_s": round(scenes_s, 2),
        "us_per_step_cpu": round(1e6 * cpu / max(result["actions"], 1), 1),
        "target_s": TARGET_SECONDS,
    })  # fmt: skip
    checks = {
        "failure_rate>=5%": result["action_failure_rate"] >= TARGET_FAILURE_RATE,
        "success_in_30-90%": TARGET_SUCCESS[0] <= result["success_rate"] <= TARGET_SUCCESS[1],
        "cpu_time<60s": cpu < TARGET_SECONDS,
    }
    result["checks"] = checks
    for k, v in result.items():
        print(f"{k:26s} {v}")
    print("targets: " + ", ".join(f"{k} {'met' if v else 'NOT met'}" for k, v in checks.items()))
    print("(wall time includes other processes' load on a shared machine; CPU time is this process only)")
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
