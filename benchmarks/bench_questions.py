"""Question engine speed: accepted questions per second on one core, and the rejection funnel; and how
many candidates per-question balancing keeps.

    python benchmarks/bench_questions.py [--episodes 200] [--max-steps 250] [--repeat 5] [--json PATH]

Episodes come from the embedded household backend (made first, not timed). Timed: everything
``sample_questions`` does per episode, as it does it: the episode context and index, proposals, checks
(evaluation, effectiveness and the other validity rules),
and rendering the records' text; the stages are timed apart. Reported per CPU-second of the timing process
(one core) and per wall-second; on a machine shared with other work the wall figure is the pessimistic one.

Each of ``--repeat`` runs is timed in a fresh interpreter, one after the other, so that every run starts
as a job does (caches cold but for one warm-up episode) and none profits from another's caches; the
median of the runs is compared with the target (one run alone moves with the host's load).

Balance yield (not timed): the share of candidate records whose ``balance_key`` is asked in at least two
scenes with at least two different answers, and the share ``eqagen.curation.balance`` keeps (defaults).
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import statistics
import time
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa

from eqagen.core import derive_rng
from eqagen.curation.balance import balance
from eqagen.curation.config import BalanceConfig
from eqagen.generators.base import get_backend
from eqagen.predicates import QuestionConfig, context_for
from eqagen.predicates.sampler import sample_programs
from eqagen.templates.records import make_records, sample_questions

TARGET = 1500.0  # accepted questions per CPU-second on one core (the target)
CLEVR_RATE = 25.0  # CLEVR's question generator on this machine, per second per core


def make_episodes(n: int, seed: int, max_steps: int = 250) -> list:
    backend = get_backend("household", "embedded")
    return [backend.run(spec) for spec in backend.plan(n, seed, {"max_steps": max_steps})]


def timed_run(episodes: list, config: QuestionConfig, seed: int) -> dict:
    """Sample every episode; time the stages separately (CPU and wall)."""
    cpu = {"context_and_sampling": 0.0, "rendering": 0.0}
    records, programs, rejections, rows = 0, 0, Counter(), []
    wall0, cpu0 = time.perf_counter(), time.process_time()
    for ep in episodes:
        rng = derive_rng(seed, "questions", ep.episode_id)
        c0 = time.process_time()
        ctx = context_for(ep)
        accepted, rejected = sample_programs(ctx, config, rng)
        c1 = time.process_time()
        recs = [r for acc in accepted for r in make_records(ctx, acc)]
        c2 = time.process_time()
        cpu["context_and_sampling"] += c1 - c0
        cpu["rendering"] += c2 - c1
        records, programs = records + len(recs), programs + len(accepted)
        rows.extend((r.question_id, r.scene_id, r.balance_key, r.answer_key) for r in recs)
        rejections.update(rejected)
    return {
        "records": records,
        "programs": programs,
        "rejections": rejections,
        "cpu_seconds": time.process_time() - cpu0,
        "wall_seconds": time.perf_counter() - wall0,
        "cpu_by_stage": {k: round(v, 3) for k, v in cpu.items()},
        "rows": rows,
    }


def balance_yield(rows: list[tuple[str, str, str, str]], seed: int) -> dict:
    """Candidates whose question recurs across scenes with different answers, and what balancing keeps."""
    scenes, answers = defaultdict(set), defaultdict(set)
    for _, scene, key, answer in rows:
        scenes[key].add(scene)
        answers[key].add(answer)
    recurring = sum(len(scenes[k]) >= 2 and len(answers[k]) >= 2 for _, _, k, _ in rows)
    columns = ("question_id", "scene_id", "balance_key", "answer_key")
    table = pa.table({c: [r[i] for r in rows] for i, c in enumerate(columns)})
    kept, stats = balance(table, BalanceConfig(), seed)
    return {
        "candidates": len(rows),
        "scenes": len({r[1] for r in rows}),
        "recurring_share": round(recurring / max(len(rows), 1), 4),
        "kept": kept.num_rows,
        "kept_share": round(kept.num_rows / max(len(rows), 1), 4),
        "kept_questions": stats.get("questions_kept"),
    }


def funnel(run: dict) -> dict:
    candidates = run["programs"] + sum(run["rejections"].values())
    return {
        "candidate_programs": candidates,
        "accepted_programs": run["programs"],
        "acceptance_rate": round(run["programs"] / max(candidates, 1), 4),
        "rejected_by_reason": dict(run["rejections"].most_common()),
    }


def measure(episodes: list, seed: int) -> dict:
    """One timed run as a fresh process makes it: a warm-up episode (imports, template compilation), then
    ``timed_run``, with the 1-minute load average before and after."""
    config = QuestionConfig()
    sample_questions(episodes[0], config, derive_rng(seed, "warmup"))
    load_before = os.getloadavg()[0]
    run = timed_run(episodes, config, seed)
    run["load"] = (load_before, os.getloadavg()[0])
    return run


def measure_in_fresh_processes(episodes: list, seed: int, repeat: int) -> list[dict]:
    """``measure`` in ``repeat`` fresh interpreters (spawned, one after the other)."""
    context = multiprocessing.get_context("spawn")
    runs = []
    for _ in range(repeat):
        with context.Pool(1) as pool:
            runs.append(pool.apply(measure, (episodes, seed)))
    return runs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--episodes", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--max-steps", type=int, default=250)
    parser.add_argument("--repeat", type=int, default=5, help="timed runs, each in a fresh process")
    parser.add_argument("--json", type=Path, default=None)
    args = parser.parse_args()
    episodes = make_episodes(args.episodes, args.seed, args.max_steps)
    runs = measure_in_fresh_processes(episodes, args.seed, max(args.repeat, 1))
    run = runs[0]  # the runs differ in their timings only
    rates = [r["records"] / r["cpu_seconds"] for r in runs]
    per_cpu = statistics.median(rates)
    per_wall = statistics.median(r["records"] / r["wall_seconds"] for r in runs)
    result = {
        "episodes": args.episodes,
        "accepted_questions": run["records"],
        "runs": len(runs),
        "accepted_questions_per_cpu_second": round(per_cpu, 1),
        "accepted_questions_per_cpu_second_by_run": [round(r, 1) for r in rates],
        "accepted_questions_per_wall_second": round(per_wall, 1),
        "accepted_programs_per_cpu_second": round(statistics.median(r["programs"] / r["cpu_seconds"] for r in runs), 1),
        "target_per_core": TARGET,
        "meets_target": per_cpu >= TARGET,
        "speedup_over_clevr": round(per_cpu / CLEVR_RATE, 1),
        "cpu_by_stage": run["cpu_by_stage"],
        "load_average_1min": [[round(x, 2) for x in r["load"]] for r in runs],
        "funnel": funnel(run),
        "balance": balance_yield(run["rows"], args.seed),
    }
    by_run = " / ".join(f"{r:,.0f}" for r in rates)
    loads = [x for r in runs for x in r["load"]]
    print(f"{args.episodes} household episodes -> {run['records']} accepted questions ({run['programs']} programs)")
    print(f"accepted questions per CPU second (one core): {per_cpu:,.0f}, the median of {len(runs)} runs in fresh "
          f"processes: {by_run}   (target {TARGET:,.0f}: {'met' if per_cpu >= TARGET else 'NOT met'}; "
          f"CLEVR ~{CLEVR_RATE:.0f})")  # fmt: skip
    print(f"accepted questions per wall second:           {per_wall:,.0f}, median   (1-min load average "
          f"{min(loads):.2f}-{max(loads):.2f} on {os.cpu_count()} cores; CPU time is the figure to compare)"
          )  # fmt: skip
    print(f"CPU seconds by stage (first run): {run['cpu_by_stage']}")
    f = result["funnel"]
    print(f"funnel: {f['candidate_programs']} candidate programs -> {f['accepted_programs']} accepted "
          f"({f['acceptance_rate']:.1%})")  # fmt: skip
    for reason, n in f["rejected_by_reason"].items():
        print(f"  rejected {reason:<28} {n:>8}")
    b = result["balance"]
    print(f"balance: {b['candidates']} candidates in {b['scenes']} scenes; asked in >= 2 scenes with >= 2 answers: "
          f"{b['recurring_share']:.1%}; kept by balancing: {b['kept']} ({b['kept_share']:.1%}), "
          f"{b['kept_questions']} questions")  # fmt: skip
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
