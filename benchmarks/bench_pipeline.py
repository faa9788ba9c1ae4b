"""Benchmark: ``eqagen generate tag-eqa`` end to end, time per stage and the share spent in orchestration.

Runs the real command in a subprocess (fresh output directory, so nothing is resumed), reads the run
summary it writes, and compares with the targets: the whole run under 75 s on a 2-core machine, and
orchestration (Prefect server start-up, task submission, state tracking: everything that is not stage
work) under 15% of the wall time.

    .venv/bin/python benchmarks/bench_pipeline.py [--preset tag-eqa] [--runner processes] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_WALL_S = 75.0  # tag-eqa on 2 cores (the question engine and the balanced-benchmark issues)
TARGET_ORCHESTRATION_SHARE = 0.15
TARGET_PEAK_MB = 2048.0  # peak memory of `eqagen generate tag-eqa`


def run(preset: str, runner: str | None, extra: list[str], out: Path) -> dict:
    summary_path = out.parent / "summary.json"
    runner_args = ["--runner", runner] if runner else []  # default: the preset's own runner
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", preset, "--out", str(out), "--no-progress",
           *runner_args, "--summary-json", str(summary_path), *extra]  # fmt: skip
    load_before = os.getloadavg()[0]
    start = time.perf_counter()
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    process_s = time.perf_counter() - start
    # Largest resident set of the run or any process it waited for (its Prefect server, pool workers),
    # and the CPU time of them all.
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    peak_kb = usage.ru_maxrss
    if proc.returncode != 0:
        sys.exit(f"eqagen generate failed ({proc.returncode}):\n{proc.stderr[-4000:]}")
    summary = json.loads(summary_path.read_text())
    summary["process_seconds"] = round(process_s, 3)  # including interpreter start and imports
    summary["peak_rss_mb"] = round(peak_kb / 1024, 1)
    summary["cpu_seconds"] = round(usage.ru_utime + usage.ru_stime, 2)
    summary["load_average"] = [round(load_before, 2), round(os.getloadavg()[0], 2)]  # 1-min, at start and end
    return summary


def throughput(summary: dict) -> dict[str, float]:
    """Items per second of stage work, per stage (summed over workers: per-core throughput)."""
    counts, secs = summary["counts"], summary["stage_seconds"]
    rates = {
        "episodes_per_s": (counts.get("episodes", 0), secs.get("episodes")),
        "steps_per_s": (counts.get("steps", 0), secs.get("episodes")),
        "candidate_questions_per_s": (counts.get("candidates", 0), secs.get("programs")),
        "balance_rows_per_s": (counts.get("candidates", 0), secs.get("balance")),
        "questions_written_per_s": (counts.get("questions_total", 0), secs.get("write")),
    }
    return {k: round(n / s, 2) for k, (n, s) in rates.items() if s}


def report(summary: dict) -> dict:
    wall = summary["process_seconds"]
    # Interpreter start and imports count as overhead too: the share is taken over the whole process.
    orchestration = summary["orchestration_seconds"] + (wall - summary["wall_seconds"])
    share = orchestration / wall
    print(f"runner: {summary['runner']}; counts: {json.dumps(summary['counts'])}")
    print(f"{'stage':28s} {'seconds':>9s}")
    print(f"{'prefect server start':28s} {summary['server_seconds']:9.2f}")
    for stage, secs in summary["stage_seconds"].items():
        print(f"{stage:28s} {secs:9.2f}")
    print(f"{'orchestration (all)':28s} {orchestration:9.2f}  ({share:.1%})")
    print(f"{'wall (process)':28s} {wall:9.2f}")
    rates = throughput(summary)
    for name, rate in rates.items():
        print(f"{name:28s} {rate:9.1f}")
    peak = summary["peak_rss_mb"]
    print(f"{'peak memory (MB)':28s} {peak:9.1f}")
    # A cross-check that timers cannot flatter: the CPU time of the run and all its processes against the
    # wall time times the cores (stage timers count a worker waiting for a core as stage time).
    cores = os.cpu_count() or 1
    busy = summary["cpu_seconds"] / (wall * cores)
    print(f"{'cpu seconds (all processes)':28s} {summary['cpu_seconds']:9.1f}  ({busy:.0%} of {cores} cores x wall)")
    print(f"{'load average (start, end)':28s} {summary['load_average'][0]:9.2f} {summary['load_average'][1]:.2f}")
    ok_wall, ok_share = wall < TARGET_WALL_S, share < TARGET_ORCHESTRATION_SHARE
    ok_memory = peak < TARGET_PEAK_MB
    print(f"target peak memory < {TARGET_PEAK_MB:.0f} MB: {'met' if ok_memory else 'MISSED'} ({peak:.0f} MB)")
    print(f"target wall < {TARGET_WALL_S:.0f} s: {'met' if ok_wall else 'MISSED'} ({wall:.1f} s)")
    print(f"target orchestration < {TARGET_ORCHESTRATION_SHARE:.0%}: {'met' if ok_share else 'MISSED'} ({share:.1%})")
    return {
        "wall_seconds": wall,
        "orchestration_seconds": round(orchestration, 3),
        "orchestration_share": round(share, 4),
        "stage_seconds": summary["stage_seconds"],
        "server_seconds": summary["server_seconds"],
        "counts": summary["counts"],
        "runner": summary["runner"],
        "throughput": rates,
        "peak_rss_mb": peak,
        "cpu_seconds": summary["cpu_seconds"],
        "cores_busy_share": round(busy, 4),
        "load_average": summary["load_average"],
        "targets": {
            "wall_seconds": TARGET_WALL_S,
            "orchestration_share": TARGET_ORCHESTRATION_SHARE,
            "peak_rss_mb": TARGET_PEAK_MB,
        },
        "met": {"wall": ok_wall, "orchestration": ok_share, "memory": ok_memory},
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--preset", default="tag-eqa")
    ap.add_argument("--runner", choices=["local", "processes", "dask", "inline"], help="default: the preset's")
    ap.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE")
    ap.add_argument("--json", type=Path, help="write the numbers here")
    args = ap.parse_args()
    extra = [x for o in args.overrides for x in ("--set", o)]
    with tempfile.TemporaryDirectory(prefix="eqagen-bench-") as tmp:
        numbers = report(run(args.preset, args.runner, extra, Path(tmp) / "out"))
    if args.json:
        args.json.write_text(json.dumps(numbers, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
