"""Benchmark: time and peak memory of ``eqagen generate`` for 1k, 10k and 100k household episodes.

Each size runs the real command in a subprocess (the tag-eqa preset, more episodes, the given runner)
while a sampler reads the resident memory of the whole process tree (the run, Prefect's server, pool
workers) from /proc every 0.2 s. Two peaks are kept: during the batched stages (episodes and
questions, which hold one batch per worker at a time) and during the dataset-level finish (balance,
split, write, audit, which hold the whole questions and episodes tables). The claim checked:
time grows linearly with the number of episodes, and the batched stages' memory does not grow with it.

A size that does not finish within ``--timeout`` seconds is stopped with SIGINT (finished batches stay
checkpointed; ``--keep DIR`` keeps the output so that the same command resumes it later) and reported
with its progress and the rate measured so far.

    .venv/bin/python benchmarks/bench_scaling.py [--sizes 1000,10000,100000] [--runner local]
        [--timeout 36000] [--keep DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

PAGE_KB = 4  # /proc/<pid>/statm pages on Linux x86-64
LIMIT_MB = 2048.0  # the bound for tag-eqa; batched stages must stay well under it at any size


def tree_rss_mb(root: int) -> float:
    """Resident memory of ``root`` and all its descendants, in MB (from /proc)."""
    children: dict[int, list[int]] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        children.setdefault(int(fields[1]), []).append(int(stat.parent.name))
    total_kb, todo = 0, [root]
    while todo:
        pid = todo.pop()
        with contextlib.suppress(OSError, IndexError, ValueError):
            total_kb += int((Path("/proc") / str(pid) / "statm").read_text().split()[1]) * PAGE_KB
        todo.extend(children.get(pid, []))
    return total_kb / 1024


class Sampler(threading.Thread):
    """Peak tree RSS, split into before and after the last batch is checkpointed."""

    def __init__(self, pid: int, out: Path, n_batches: int):
        super().__init__(daemon=True)
        self.pid, self.out, self.n_batches = pid, out, n_batches
        self.peak_batched = self.peak_finish = 0.0
        self.done_batches = 0
        self.batched_end: float | None = None
        self.stop = threading.Event()

    def run(self) -> None:
        start = time.perf_counter()
        while not self.stop.is_set():
            rss = tree_rss_mb(self.pid)
            self.done_batches = len(list(self.out.glob(".eqagen/batches/*/*/DONE")))
            if self.done_batches < self.n_batches:
                self.peak_batched = max(self.peak_batched, rss)
            else:
                self.batched_end = self.batched_end or time.perf_counter() - start
                self.peak_finish = max(self.peak_finish, rss)
            self.stop.wait(0.2)


def run_size(n: int, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    batch = args.batch_size
    n_batches = -(-n // batch)
    summary_path = out.parent / f"summary-{n}.json"
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", args.preset, "--out", str(out), "--no-progress",
           "--runner", args.runner, "--workers", str(args.workers), "--summary-json", str(summary_path),
           "--set", f"generation.n_episodes={n}", "--set", f"generation.batch_size={batch}"]  # fmt: skip
    start = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    sampler = Sampler(proc.pid, out, n_batches)
    sampler.start()
    try:
        proc.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # a clean stop: finished batches stay checkpointed
        proc.wait(timeout=120)
    wall = time.perf_counter() - start
    sampler.stop.set()
    sampler.join()
    entry: dict[str, Any] = {
        "episodes": n,
        "batches": n_batches,
        "returncode": proc.returncode,
        "wall_seconds": round(wall, 1),
        "peak_rss_mb_batched": round(sampler.peak_batched, 1),
        "peak_rss_mb_finish": round(sampler.peak_finish, 1),
        "batched_seconds": round(sampler.batched_end, 1) if sampler.batched_end else None,
    }
    if proc.returncode == 0:
        summary = json.loads(summary_path.read_text())
        entry["stage_seconds"] = summary["stage_seconds"]
        entry["questions"] = summary["counts"].get("questions_total")
        entry["seconds_per_episode"] = round(wall / n, 4)
    else:
        done = sampler.done_batches
        entry["finished"] = False
        entry["batches_done"] = done
        entry["stderr_tail"] = proc.stderr.read()[-1500:] if proc.stderr else ""
        if done:  # the rate so far, extrapolated to the whole size
            entry["seconds_per_episode"] = round(wall / (done * batch), 4)
            entry["extrapolated_wall_seconds"] = round(wall / done * n_batches, 0)
    return entry


def verdict(results: list[dict[str, Any]]) -> dict[str, Any]:
    """Linear time: seconds per episode of the largest size within 1.5x of the smallest's; bounded memory:
    the batched peak of the largest size within 1.5x of the smallest's (plus 100 MB of noise)."""
    rates = [r["seconds_per_episode"] for r in results if r.get("seconds_per_episode")]
    batched = [r["peak_rss_mb_batched"] for r in results if r["peak_rss_mb_batched"]]
    linear = len(rates) >= 2 and rates[-1] <= 1.5 * rates[0]
    bounded = len(batched) >= 2 and batched[-1] <= 1.5 * batched[0] + 100 and max(batched) < LIMIT_MB
    finish = [(r["episodes"], r["peak_rss_mb_finish"]) for r in results if r["peak_rss_mb_finish"]]
    return {"time_linear": linear, "batched_memory_bounded": bounded, "finish_peak_mb_by_size": finish}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1000,10000,100000")
    ap.add_argument("--preset", default="tag-eqa")
    ap.add_argument("--runner", default="local", choices=["local", "processes", "dask", "inline"])
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--batch-size", type=int, default=50)
    ap.add_argument("--timeout", type=float, default=36000.0, help="seconds per size before a clean stop")
    ap.add_argument("--keep", type=Path, help="output root to keep (and resume from); default: a temporary one")
    ap.add_argument("--json", type=Path, help="write the numbers here (rewritten after each size)")
    args = ap.parse_args()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="eqagen-scaling-") as tmp:
        root = args.keep or Path(tmp)
        for n in (int(s) for s in args.sizes.split(",")):
            entry = run_size(n, args, root / f"n{n}" / "out")
            results.append(entry)
            print(json.dumps({k: v for k, v in entry.items() if k not in ("stage_seconds", "stderr_tail")}))
            numbers = {"runner": args.runner, "workers": args.workers, "results": results, **verdict(results)}
            if args.json:
                args.json.write_text(json.dumps(numbers, indent=2) + "\n")
    v = verdict(results)
    print(f"time linear in episodes: {'met' if v['time_linear'] else 'MISSED'}")
    print(f"batched-stage memory bounded by the batch size: {'met' if v['batched_memory_bounded'] else 'MISSED'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
