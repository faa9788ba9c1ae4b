"""Benchmark: how ``eqagen generate`` scales with episodes and with workers, from its own timeline.

Each size runs the real command in a subprocess (the tag-eqa preset at its own size, then 1,000 and 10,000
episodes; the processes runner on this machine's cores unless told otherwise) and reads the run's timeline
from its summary (:mod:`eqagen.flows.timeline`: every unit timed on the worker that ran it, and the run's
own serial sections). It prints, per size:

- the wall time, and the critical path by stage (the wall time cut by what ran: the stage with the most
  units running, else the run's own section, else ``waiting``: imports, Prefect, orchestration);
- the serial seconds: those during which fewer than all workers were busy, their share of the wall, and
  what ran then (the critical path of those instants alone);
- the time the same work would take on 4, 16 and 64 workers (each phase of units list-scheduled on that
  many workers, phases cut at the run's barriers, the stretches without units as measured; the measured
  worker count is predicted too, as a check of the model against the run), and the predicted speed-up of
  16 workers over 4.

It also samples the resident memory of the whole process tree (the run, Prefect's server, the workers)
every 0.2 s: the batched stages hold one batch per worker in flight, so their peak must not grow with the
number of episodes.

Targets (issue: orchestration off the critical path), on 2 cores: at most 3 s of serial time for tag-eqa,
at most 5% of the wall time serial at 10,000 episodes, and a predicted speed-up of 16 workers over 4 of at
least 3.4x at 10,000 episodes.

    .venv/bin/python benchmarks/bench_scaling.py [--sizes preset,1000,10000] [--runner processes]
        [--workers N] [--timeout 3600] [--keep DIR] [--json out.json]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from eqagen.config import load_config
from eqagen.flows.timeline import critical_path, predict_seconds, serial_seconds, spans_from_dict

PAGE_KB = 4  # /proc/<pid>/statm pages on Linux x86-64
PREDICTED_WORKERS = (4, 16, 64)
TARGET_SERIAL_S_PRESET = 3.0  # tag-eqa at its own size, on 2 cores
TARGET_SERIAL_SHARE_10K = 0.05
TARGET_SPEEDUP_16_OVER_4 = 3.4  # 85% of linear


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


class MemorySampler(threading.Thread):
    """Peak tree RSS, before and after the last batch is checkpointed."""

    def __init__(self, pid: int, out: Path, n_batches: int):
        super().__init__(daemon=True)
        self.pid, self.out, self.n_batches = pid, out, n_batches
        self.peak_batched = self.peak_finish = 0.0
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            rss = tree_rss_mb(self.pid)
            if len(list(self.out.glob(".eqagen/batches/*/*/DONE"))) < self.n_batches:
                self.peak_batched = max(self.peak_batched, rss)
            else:
                self.peak_finish = max(self.peak_finish, rss)
            self.stop.wait(0.2)


def n_batches(size: str, preset: str) -> int:
    overrides = [] if size == "preset" else [f"generation.n_episodes={size}"]
    generation = load_config(preset, overrides).generation
    return math.ceil(generation.n_episodes / generation.batch_size)


def command(size: str, args: argparse.Namespace, out: Path, summary: Path) -> list[str]:
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", args.preset, "--out", str(out), "--no-progress",
           "--runner", args.runner, "--workers", str(args.workers), "--summary-json", str(summary)]  # fmt: skip
    return cmd if size == "preset" else [*cmd, "--set", f"generation.n_episodes={size}"]


def run_size(size: str, args: argparse.Namespace, out: Path) -> dict[str, Any]:
    summary_path = out.parent / f"summary-{size}.json"
    proc = subprocess.Popen(command(size, args, out, summary_path), stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    sampler = MemorySampler(proc.pid, out, n_batches(size, args.preset))
    sampler.start()
    start = time.perf_counter()
    try:
        proc.wait(timeout=args.timeout)
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGINT)  # a clean stop: finished batches stay checkpointed
        proc.wait(timeout=120)
    process_s = time.perf_counter() - start
    sampler.stop.set()
    sampler.join()
    if proc.returncode != 0:
        return {"size": size, "returncode": proc.returncode, "stderr_tail": (proc.stderr.read() or "")[-1500:]}
    summary = json.loads(summary_path.read_text())
    return analyse(size, summary, process_s, sampler.peak_batched)


def analyse(size: str, summary: dict[str, Any], process_s: float, peak_mb: float) -> dict[str, Any]:
    """The figures of one run, from its summary's timeline alone."""
    spans, workers = spans_from_dict(summary["timeline"]), summary["timeline"]["workers"]
    wall = summary["wall_seconds"]
    serial = serial_seconds(spans, workers, wall)
    predicted = {n: predict_seconds(spans, wall, n) for n in sorted({workers, *PREDICTED_WORKERS})}
    return {
        "size": size,
        "episodes": summary["counts"].get("episodes"),
        "questions": summary["counts"].get("questions_total"),
        "workers": workers,
        "wall_seconds": round(wall, 2),
        "process_seconds": round(process_s, 2),  # with the interpreter's start and exit
        "server_seconds": summary["server_seconds"],
        "critical_path": {k: round(v, 2) for k, v in critical_path(spans, wall).items()},
        # the verdicts' three values kept whole: a rounded 3.004 s must not pass for 3 s
        "serial_seconds": serial,
        "serial_by_stage": {k: round(v, 2) for k, v in critical_path(spans, wall, fewer_units_than=workers).items()},
        "serial_share": serial / wall if wall else 0.0,
        "predicted_seconds": {n: round(t, 1) for n, t in predicted.items()},
        "predicted_speedup_16_over_4": predicted[4] / predicted[16],
        "peak_rss_mb_batched": round(peak_mb, 1),
    }


def report(entry: dict[str, Any]) -> None:
    if "wall_seconds" not in entry:
        print(f"{entry['size']}: failed ({entry['returncode']}): {entry['stderr_tail']}")
        return
    print(f"\n== {entry['size']}: {entry['episodes']:,} episodes, {entry['questions']:,} questions, "
          f"{entry['workers']} workers: {entry['wall_seconds']} s wall ({entry['process_seconds']} s with "
          f"interpreter start and exit; Prefect server start {entry['server_seconds']:.1f} s, beside the "
          "work)")  # fmt: skip
    print("critical path by stage (s): " + ", ".join(f"{k} {v}" for k, v in entry["critical_path"].items()))
    print(f"serial seconds (fewer than {entry['workers']} workers busy): {entry['serial_seconds']:.2f} "
          f"({entry['serial_share']:.1%} of the wall), by stage: "
          + ", ".join(f"{k} {v}" for k, v in entry["serial_by_stage"].items() if v >= 0.01))  # fmt: skip
    print("predicted seconds by workers: " + ", ".join(f"{n}: {t}" for n, t in entry["predicted_seconds"].items())
          + f" (measured on {entry['workers']}: {entry['wall_seconds']}); 16 over 4: "
          f"{entry['predicted_speedup_16_over_4']:.3f}x")  # fmt: skip


def verdicts(results: list[dict[str, Any]]) -> list[str]:
    by_size = {r["size"]: r for r in results if "wall_seconds" in r}
    lines = []
    if "preset" in by_size:
        s = by_size["preset"]["serial_seconds"]
        lines.append(f"serial time of the preset at most {TARGET_SERIAL_S_PRESET} s: {s:.3f} s, "
                     f"{'met' if s <= TARGET_SERIAL_S_PRESET else 'MISSED'}")  # fmt: skip
    if "10000" in by_size:
        r = by_size["10000"]
        share, speedup = r["serial_share"], r["predicted_speedup_16_over_4"]
        lines.append(f"serial share at 10,000 episodes at most {TARGET_SERIAL_SHARE_10K:.0%}: {share:.2%}, "
                     f"{'met' if share <= TARGET_SERIAL_SHARE_10K else 'MISSED'}")  # fmt: skip
        met = "met" if speedup >= TARGET_SPEEDUP_16_OVER_4 else "MISSED"
        lines.append(f"predicted speed-up of 16 workers over 4 at 10,000 episodes at least "
                     f"{TARGET_SPEEDUP_16_OVER_4}x: {speedup:.4f}x, {met}")  # fmt: skip
    return lines


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="preset,1000,10000", help="'preset' (its own size) or numbers of episodes")
    ap.add_argument("--preset", default="tag-eqa")
    ap.add_argument("--runner", default="processes", choices=["local", "processes", "dask"])
    ap.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    ap.add_argument("--timeout", type=float, default=3600.0, help="seconds per size before a clean stop")
    ap.add_argument("--keep", type=Path, help="output root to keep; default: a temporary one")
    ap.add_argument("--json", type=Path, help="write the numbers here (rewritten after each size)")
    args = ap.parse_args()
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="eqagen-scaling-") as tmp:
        root = args.keep or Path(tmp)
        for size in args.sizes.split(","):
            entry = run_size(size, args, root / f"n{size}" / "out")
            results.append(entry)
            report(entry)
            if args.json:
                numbers = {"runner": args.runner, "results": results, "verdicts": verdicts(results)}
                args.json.write_text(json.dumps(numbers, indent=2) + "\n")
    print()
    for line in verdicts(results):
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())
