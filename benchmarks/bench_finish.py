"""Benchmark: time and peak memory of the dataset-level finish (balance, split, paraphrase, write, audit)
as the number of batches grows, on the checkpoints of an existing run.

Each size runs ``eqagen.flows.pipeline.finish`` over the first N batches of a checkpoint directory
(``OUT/.eqagen/batches/<hash>`` of a `generate` run, finished or not) in a fresh subprocess, on
``--workers`` forked workers as a run does, which reports its own peak resident memory (``ru_maxrss``),
the seconds of every finish stage and the finish's serial seconds (fewer units running than workers). The claim
checked: the finish's memory grows with the key columns of the candidates (tens of bytes per row),
not with the full rows (kilobytes per row, with the episodes' steps).

    .venv/bin/python benchmarks/bench_finish.py --store OUT/.eqagen/batches/HASH \\
        [--preset tag-eqa] [--sizes 20,200,2000] [--workers N] [--json out.json]

Without ``--store`` it first makes the checkpoints of a 2,000-episode tag-eqa run (about two minutes
on two cores) and measures the finish on 10 and 40 of its batches.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

CHILD = """
import json, resource, sys, time
from pathlib import Path
from eqagen.config import config_hash, load_config
from eqagen.flows import pipeline
from eqagen.flows.pool import forked_pool
from eqagen.flows.timeline import Timeline, serial_seconds
store, preset, n, out, workers = Path(sys.argv[1]), sys.argv[2], int(sys.argv[3]), Path(sys.argv[4]), int(sys.argv[5])
names = sorted(p.name for p in store.iterdir() if (p / "DONE").exists() and p.name.startswith("batch-"))[:n]
config = load_config(preset, [f"generation.n_episodes={n}", f"runner.workers={workers}"])
ctx = pipeline.RunContext(out, config.seed, config_hash(config), config.questions, store)
summary = pipeline.RunSummary(out)
timeline = Timeline()
start = time.perf_counter()
with forked_pool(workers, timeline) as pool:
    pipeline.finish(config, ctx, names, summary, pool.finish_executor, timeline)
wall = time.perf_counter() - start
print(json.dumps({"batches": len(names), "workers": workers, "seconds": round(wall, 2),
                  "serial_seconds": round(serial_seconds(timeline.relative(), workers, wall), 2),
                  "stage_seconds": {k: round(v, 2) for k, v in summary.stage_seconds.items()},
                  "questions": summary.counts.get("questions_total"), "candidates": summary.counts.get("candidates"),
                  "episodes": summary.counts.get("episodes"),
                  "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)}))
"""


def run_size(store: Path, preset: str, n: int, workers: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="eqagen-finish-") as out:
        proc = subprocess.run([sys.executable, "-c", CHILD, str(store), preset, str(n), out, str(workers)],
                              capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        return {"batches": n, "error": proc.stderr[-2000:]}
    return json.loads(proc.stdout.strip().splitlines()[-1])


def make_store(root: Path, episodes: int) -> Path:
    """Checkpoints of a tag-eqa run of ``episodes`` episodes (batches of 50), made with the real command."""
    sizes = ["--set", f"generation.n_episodes={episodes}", "--set", "generation.batch_size=50"]
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", "tag-eqa", "--out", str(root), "--no-progress",
           "--runner", "processes", *sizes]  # fmt: skip
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    return next((root / ".eqagen" / "batches").iterdir())


def verdict(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Memory per candidate above the smallest size's baseline: what a batch-bounded finish should keep small."""
    ok = [r for r in results if "peak_rss_mb" in r]
    if len(ok) < 2:
        return {}
    small, large = ok[0], ok[-1]
    extra_mb = large["peak_rss_mb"] - small["peak_rss_mb"]
    extra_rows = max(1, (large["candidates"] or 0) - (small["candidates"] or 0))
    return {"extra_bytes_per_candidate": round(extra_mb * 1024 * 1024 / extra_rows, 1),
            "seconds_per_episode": [round(r["seconds"] / max(1, r["episodes"]), 5) for r in ok]}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--store", type=Path, help="OUT/.eqagen/batches/<hash> of a generate run (default: make one)")
    ap.add_argument("--preset", default="tag-eqa", help="the preset (or YAML) the run was made with")
    ap.add_argument("--sizes", help="numbers of batches, comma-separated (default 20,200,2000; 10,40 without --store)")
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)), help="forked workers (default: cores)")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="eqagen-finish-store-") as tmp:
        store = args.store or make_store(Path(tmp) / "run", 2000)
        sizes = args.sizes or ("20,200,2000" if args.store else "10,40")
        results = []
        for n in (int(s) for s in sizes.split(",")):
            results.append(run_size(store, args.preset, n, args.workers))
            print(json.dumps(results[-1]))
    report = {"store": str(args.store or "made: tag-eqa, 2,000 episodes"), "preset": args.preset, "results": results,
              **verdict(results)}  # fmt: skip
    print(json.dumps({k: v for k, v in report.items() if k != "results"}))
    if args.json:
        args.json.write_text(json.dumps(report, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
