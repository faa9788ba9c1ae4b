"""ALFRED benchmark: expert-replay throughput and fidelity, and FILM-mode statistics, on the real data.

    .venv/bin/python benchmarks/bench_alfred.py [--realdata DIR] [--film-limit N] [--json PATH]

Prints replays per second per core (CPU time of one process: reading, scene building, replay and goal
check of each valid_seen trajectory; target: 100 or more), wall-clock replays per second (inflated on a
loaded machine), fidelity per task type with every failure, and FILM mode on tests_seen (episodes run,
failure rate, loops, task success) and on valid_seen (parse accuracy and true-goal success).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

from eqagen.generators.household.alfred.catalog import SceneCatalog, build_catalog
from eqagen.generators.household.alfred.film import FILM_FILES, read_film_parses
from eqagen.generators.household.alfred.runs import fidelity_summary, film_root, film_stats, replay_root

TARGETS = {"replays_per_s_per_core": 100.0, "actions_ok_rate": 0.98, "goal_ok_rate": 0.95, "film_episodes_run": 400}


def bench_replay(alfred: Path) -> dict:
    root, layouts = alfred / "json_2.1.0" / "valid_seen", alfred / "layouts"
    list(replay_root(root, layouts, limit=5))  # warm imports and caches
    cpu0, wall0 = time.process_time(), time.perf_counter()
    entries = [fid for _, fid in replay_root(root, layouts)]
    cpu, wall = time.process_time() - cpu0, time.perf_counter() - wall0
    return {
        "n_replays": len(entries),
        "replays_per_s_per_core": round(len(entries) / cpu, 1),
        "replays_per_s_wall": round(len(entries) / wall, 1),
        "fidelity": fidelity_summary(entries),
        "failures": [
            {"trajectory": e.trajectory, "task_type": e.task_type, "reason": e.reason} for e in entries if e.reason
        ],
    }


def bench_film(alfred: Path, film: Path, split: str, limit: int | None) -> dict:
    layouts = alfred / "layouts"
    catalog = SceneCatalog(build_catalog(alfred / "json_2.1.0", layouts))
    parses = read_film_parses(film / FILM_FILES[split])
    metas, errors = [], 0
    t0 = time.perf_counter()
    root = alfred / "json_2.1.0" / split
    runs = film_root(root, layouts, parses, catalog, seed=0, limit=limit, every_annotation=True)
    for _, ep, _err in runs:
        if ep is None:
            errors += 1
            continue
        metas.append(ep.meta | {"n_steps": ep.n_steps})
    stats = film_stats(metas, errors)
    stats["episodes_per_s_wall"] = round(len(metas) / (time.perf_counter() - t0), 2)
    return stats


def report(results: dict) -> list[str]:
    r = results["replay"]
    target = TARGETS["replays_per_s_per_core"]
    lines = [
        f"expert replay: {r['n_replays']} trajectories, {r['replays_per_s_per_core']} replays/s per core "
        f"(CPU time; target >= {target:.0f}), {r['replays_per_s_wall']}/s wall"
    ]
    lines.append(f"  {'task type':36s} {'n':>4s} {'actions ok':>11s} {'goal ok':>9s}")
    for k, s in r["fidelity"].items():
        lines.append(f"  {k:36s} {s['n']:4d} {s['actions_ok_rate']:11.1%} {s['goal_ok_rate']:9.1%}")
    lines += [f"  FAIL {f['trajectory']}: {f['reason']}" for f in r["failures"]]
    for split in ("tests_seen", "valid_seen"):
        f = results.get(f"film_{split}")
        if f:
            acc = "n/a (no task published)" if f["parse_accuracy"] is None else f"{f['parse_accuracy']:.1%}"
            true = (
                "" if f["true_goal_success_rate"] is None else f", true-goal success {f['true_goal_success_rate']:.1%}"
            )
            lines.append(
                f"FILM mode {split}: {f['episodes_run']} run ({f['errors']} errors), failure rate "
                f"{f['failure_rate']:.1%}, task success {f['task_success_rate']:.1%}, episodes with loops "
                f"{f['episodes_with_loops']}, parse accuracy {acc}{true}, stops {f['stop_reasons']}"
            )
    return lines


def verdicts(results: dict) -> dict[str, bool]:
    r, f = results["replay"], results.get("film_tests_seen", {})
    out = {
        "replays_per_s_per_core": r["replays_per_s_per_core"] >= TARGETS["replays_per_s_per_core"],
        "actions_ok_rate": r["fidelity"]["all"]["actions_ok_rate"] >= TARGETS["actions_ok_rate"],
        "goal_ok_rate": r["fidelity"]["all"]["goal_ok_rate"] >= TARGETS["goal_ok_rate"],
    }
    if f:
        out["film_episodes_run"] = f["episodes_run"] >= TARGETS["film_episodes_run"]
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    default = os.environ.get("EQAGEN_REALDATA") or str(Path(__file__).resolve().parents[2] / "shared" / "realdata")
    p.add_argument("--realdata", type=Path, default=Path(default))
    p.add_argument("--film-limit", type=int, help="FILM mode on at most this many episodes per split")
    p.add_argument("--no-film", action="store_true")
    p.add_argument("--json", type=Path)
    args = p.parse_args(argv)
    alfred = args.realdata / "alfred"
    if not alfred.is_dir():
        print(f"real data not found at {alfred}: set EQAGEN_REALDATA or pass --realdata", file=sys.stderr)
        return 2
    results: dict = {"replay": bench_replay(alfred), "load_average": os.getloadavg()[0], "cores": os.cpu_count()}
    if not args.no_film:
        for split in ("tests_seen", "valid_seen"):
            results[f"film_{split}"] = bench_film(alfred, args.realdata / "film", split, args.film_limit)
    results["targets"], results["meets_target"] = TARGETS, verdicts(results)
    print("\n".join(report(results)))
    print(f"load average {results['load_average']:.1f} on {results['cores']} cores (other work inflates wall times)")
    print("targets met: " + ", ".join(f"{k}={'yes' if v else 'NO'}" for k, v in results["meets_target"].items()))
    if args.json:
        args.json.write_text(json.dumps(results, indent=1, sort_keys=True) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
