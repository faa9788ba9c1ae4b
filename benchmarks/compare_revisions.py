"""Benchmark: the end-to-end time of two revisions, measured as alternating pairs of runs.

A 2-core host's speed moves by 15% or more between runs a minute apart, so two revisions are compared
only by runs that alternate (A, B, A, B, ...), and by the whole set of pairs, never by one run each. Each
revision (a commit: uncommitted changes are not measured) is checked out in a temporary git worktree and run
with this interpreter (``PYTHONPATH`` set to the worktree, checked to be where ``eqagen`` is imported from:
its dependencies must be installed here), writing into a fresh output folder; the worktrees are removed at
the end. Prints each pair (wall and CPU seconds: user + system of the run and every process
it waited for), the means, the mean and median difference of B over A, and the mean unit seconds of each
stage from the runs' summaries (where the gap lies).

    .venv/bin/python benchmarks/compare_revisions.py 3a4dbfd HEAD [--pairs 6] [--preset tag-eqa] [--json out.json]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STAGES = ("episodes", "programs", "ask", "paraphrase", "audit", "checkpoint")


def worktree(rev: str, where: Path) -> Path:
    """``rev`` checked out (detached) at ``where``."""
    proc = subprocess.run(["git", "-C", str(REPO), "worktree", "add", "--detach", str(where), rev],
                          capture_output=True, text=True, check=False)  # fmt: skip
    if proc.returncode != 0:
        why = (proc.stderr.strip().splitlines() or [f"git exited {proc.returncode}"])[-1]
        raise SystemExit(f"compare_revisions: cannot check out {rev}: {why}")
    return where


def environment(tree: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(tree)}


def imports_from(tree: Path) -> Path:
    """The folder ``eqagen`` is imported from as the runs import it (from ``tree``, ``PYTHONPATH`` at it): it
    must be the worktree's, not an installed copy."""
    code = "import eqagen, pathlib; print(pathlib.Path(eqagen.__file__).resolve().parent)"
    out = subprocess.run([sys.executable, "-c", code], cwd=tree, env=environment(tree), capture_output=True,
                         text=True, check=False)  # fmt: skip
    if out.returncode != 0:
        why = (out.stderr.strip().splitlines() or ["no output"])[-1]
        raise SystemExit(f"compare_revisions: cannot import eqagen from {tree}: {why}")
    return Path(out.stdout.strip())


def one_run(tree: Path, preset: str, work: Path) -> dict:
    """One ``eqagen generate`` of ``preset`` with the revision at ``tree``: wall and CPU seconds, and the
    unit seconds per stage from its summary."""
    out, summary = work / "out", work / "summary.json"
    shutil.rmtree(out, ignore_errors=True)
    summary.unlink(missing_ok=True)
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", preset, "--out", str(out), "--no-progress",
           "--summary-json", str(summary)]  # fmt: skip
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, cwd=tree, env=environment(tree), capture_output=True, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-1:] or ["(no output)"]
        raise SystemExit(f"compare_revisions: the run in {tree} exited {proc.returncode}: {tail[0]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stages = json.loads(summary.read_text()).get("stage_seconds", {})
    return {"wall_s": round(wall, 2), "cpu_s": round(cpu, 2), "stages": {k: stages.get(k, 0.0) for k in STAGES}}


def summarise(pairs: list[tuple[dict, dict]]) -> dict:
    """Means of each revision, the difference of B over A (of the means, and the median of the pairs'), and
    the mean unit seconds per stage."""
    a_wall = [a["wall_s"] for a, _ in pairs]
    b_wall = [b["wall_s"] for _, b in pairs]
    ratios = [b / a - 1.0 for a, b in zip(a_wall, b_wall)]
    return {
        "pairs": len(pairs),
        "mean_wall_s": {"a": round(statistics.mean(a_wall), 2), "b": round(statistics.mean(b_wall), 2)},
        "mean_cpu_s": {
            "a": round(statistics.mean(a["cpu_s"] for a, _ in pairs), 2),
            "b": round(statistics.mean(b["cpu_s"] for _, b in pairs), 2),
        },
        "b_over_a": round(statistics.mean(b_wall) / statistics.mean(a_wall) - 1.0, 4),
        "b_over_a_median_pair": round(statistics.median(ratios), 4),
        "stage_unit_s": {
            stage: {
                side: round(statistics.mean(p[i]["stages"][stage] for p in pairs), 2) for i, side in enumerate("ab")
            }
            for stage in STAGES
        },
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("rev_a", help="the revision measured against (e.g. the version an issue measured)")
    parser.add_argument("rev_b", help="the revision measured")
    parser.add_argument("--pairs", type=int, default=6, help="alternating pairs of runs (A then B)")
    parser.add_argument("--preset", default="tag-eqa")
    parser.add_argument("--json", type=Path, help="also write the pairs and the summary here")
    args = parser.parse_args(argv)
    if args.pairs < 1:
        parser.error(f"--pairs must be at least 1, got {args.pairs}")
    with tempfile.TemporaryDirectory(prefix="eqagen-compare-") as tmp:
        root = Path(tmp)
        trees = []
        try:
            for side, rev in (("a", args.rev_a), ("b", args.rev_b)):
                tree = worktree(rev, root / side)
                trees.append(tree)
                if imports_from(tree) != (tree / "eqagen").resolve():
                    raise SystemExit(f"compare_revisions: PYTHONPATH={tree} does not import eqagen from it")
            pairs = []
            for i in range(args.pairs):
                a = one_run(trees[0], args.preset, root)
                b = one_run(trees[1], args.preset, root)
                pairs.append((a, b))
                change = b["wall_s"] / a["wall_s"] - 1
                print(f"pair {i + 1}: A {a['wall_s']:.1f} s (cpu {a['cpu_s']:.1f})  "
                      f"B {b['wall_s']:.1f} s (cpu {b['cpu_s']:.1f})  {change:+.1%}", flush=True)  # fmt: skip
        finally:
            for tree in trees:
                subprocess.run(["git", "-C", str(REPO), "worktree", "remove", "--force", str(tree)],
                               capture_output=True, check=False)  # fmt: skip
    summary = summarise(pairs)
    print(f"{args.rev_a} (A) against {args.rev_b} (B), {args.preset}, {summary['pairs']} alternating pairs:")
    print(f"  mean wall {summary['mean_wall_s']['a']:.1f} s against {summary['mean_wall_s']['b']:.1f} s: "
          f"B {summary['b_over_a']:+.1%} (median pair {summary['b_over_a_median_pair']:+.1%})")  # fmt: skip
    print(f"  mean CPU {summary['mean_cpu_s']['a']:.1f} s against {summary['mean_cpu_s']['b']:.1f} s")
    for stage, sides in summary["stage_unit_s"].items():
        print(f"  {stage:<11} unit seconds {sides['a']:7.1f} against {sides['b']:7.1f}")
    if args.json:
        args.json.write_text(
            json.dumps({"a": args.rev_a, "b": args.rev_b, "pairs": pairs, "summary": summary}, indent=2)
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
