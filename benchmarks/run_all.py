"""Run every benchmark and write one JSON report; or compare two reports side by side.

    python benchmarks/run_all.py --out benchmarks/results/report.json [--only household,questions]
        [--scaling-sizes 1000,10000,100000]
    python benchmarks/run_all.py --compare OLD.json NEW.json

Each ``benchmarks/bench_<name>.py`` is run in its own process (so peak memory is per benchmark) with
``--json PATH``; the report holds each one's own numbers plus its wall time and peak RSS as measured
by this runner. The comparison lists every numeric value of both reports with the ratio new/old.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
# Sizes that keep one run of the whole suite to well under an hour on two cores; the 100,000-episode
# size of the scaling benchmark is asked for with --scaling-sizes (it takes about an hour by itself).
DEFAULT_ARGS: dict[str, list[str]] = {"scaling": ["--sizes", "preset,1000,10000"]}


def discover(only: set[str] | None) -> list[Path]:
    found = sorted(HERE.glob("bench_*.py"))
    return [p for p in found if only is None or p.stem.removeprefix("bench_") in only]


def run_one(script: Path, extra: list[str]) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "result.json"
        before = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        start = time.perf_counter()
        proc = subprocess.run([sys.executable, str(script), "--json", str(out), *extra], capture_output=True, text=True)
        wall = time.perf_counter() - start
        peak_kb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
        result = json.loads(out.read_text()) if out.exists() else None
    entry = {"returncode": proc.returncode, "wall_seconds": round(wall, 3), "result": result}
    # ru_maxrss of children is the largest of any child so far: only meaningful when it grew.
    entry["peak_rss_mb"] = round(peak_kb / 1024, 1) if peak_kb > before else None
    if proc.returncode != 0:
        entry["stderr_tail"] = proc.stderr[-2000:]
    return entry


def flatten(d: Any, prefix: str = "") -> dict[str, float]:
    """Every numeric leaf of a nested report, keyed by its path."""
    out: dict[str, float] = {}
    if isinstance(d, dict):
        for k, v in d.items():
            out.update(flatten(v, f"{prefix}/{k}" if prefix else str(k)))
    elif isinstance(d, (int, float)):  # bools too: True counts as 1
        out[prefix] = float(d)
    return out


def compare(old: dict[str, Any], new: dict[str, Any]) -> str:
    a, b = flatten(old.get("benchmarks", {})), flatten(new.get("benchmarks", {}))
    keys = sorted(set(a) | set(b))
    width = max((len(k) for k in keys), default=10)
    lines = [f"{'metric':<{width}}  {'old':>12}  {'new':>12}  {'new/old':>8}"]
    for k in keys:
        va, vb = a.get(k), b.get(k)
        ratio = f"{vb / va:8.3f}" if va not in (None, 0) and vb is not None else "       -"
        fa = f"{va:12.4g}" if va is not None else f"{'-':>12}"
        fb = f"{vb:12.4g}" if vb is not None else f"{'-':>12}"
        lines.append(f"{k:<{width}}  {fa}  {fb}  {ratio}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "report.json")
    parser.add_argument("--only", help="comma-separated benchmark names (household, questions, ...)")
    parser.add_argument("--compare", nargs=2, type=Path, metavar=("OLD", "NEW"))
    parser.add_argument("--scaling-sizes", help="episodes per scaling run ('preset': the preset's own size), e.g. "
                        "preset,1000,10000,100000 (default preset,1000,10000)")  # fmt: skip
    args = parser.parse_args(argv)
    if args.compare:
        old, new = (json.loads(p.read_text()) for p in args.compare)
        print(compare(old, new))
        return 0
    only = set(args.only.split(",")) if args.only else None
    report: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version(), "platform": platform.platform()},
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "benchmarks": {},
    }
    for script in discover(only):
        name = script.stem.removeprefix("bench_")
        print(f"running {name} ...", flush=True)
        extra = DEFAULT_ARGS.get(name, [])
        if name == "scaling" and args.scaling_sizes:
            extra = ["--sizes", args.scaling_sizes]
        report["benchmarks"][name] = entry = run_one(script, extra)
        print(f"  {name}: exit {entry['returncode']}, {entry['wall_seconds']} s", flush=True)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    print(f"report: {args.out}")
    return 0 if all(b["returncode"] == 0 for b in report["benchmarks"].values()) else 1


if __name__ == "__main__":
    sys.exit(main())
