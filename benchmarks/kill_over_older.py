"""SIGKILL ``eqagen generate`` at random moments while it writes over an older dataset, then rerun it.

    python benchmarks/kill_over_older.py --preset demo --kills 10 --work /tmp/kills
    python benchmarks/kill_over_older.py --preset tag-eqa --kills 8 --runner inline \\
        --older split.ratios=[0.8,0.1,0.1] --work /tmp/kills-tag

The older dataset is the preset made with ``--set OLDER`` (another config; the default ``seed=1``); the
newer one is the preset as it is, written over it with ``--overwrite`` (``--checkpoints`` reuses an
earlier output's batches, so that an older that differs only in balancing or splits makes every run a
finish: the kills then land in the writing). Each try copies the older
folder (checkpoints included), starts the newer run, kills it with SIGKILL after a random delay drawn
uniformly from [0, the duration of an uninterrupted run] (a try that finishes first is not counted, and
shortens that horizon), and looks at the folder: the older dataset
whole, the newer one whole, or refused by eqagen's reader (no manifest; a journal the next command
completes) -- anything else is a mixed folder. The same command is then run again, and its shards and
manifest must equal those of an uninterrupted run. Not a ``bench_*`` script: ``run_all.py`` skips it.
Prints one JSON report.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

EQAGEN = [sys.executable, "-m", "eqagen.cli", "generate"]


def digests(out: Path) -> dict[str, str]:
    files = [p for t in ("questions", "episodes") for p in (out / t).glob("*.parquet")]
    files += [out / "manifest.json"] if (out / "manifest.json").exists() else []
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(files)}


def run(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([*EQAGEN, *args], check=True, capture_output=True, text=True)
    return time.perf_counter() - start


def state_of(out: Path, older: dict[str, str], newer: dict[str, str]) -> str:
    from eqagen.core import DataFileError
    from eqagen.outputs.dataset import open_dataset

    try:
        open_dataset(out)
    except DataFileError as err:
        refused = "no manifest.json" in str(err) and (out / ".eqagen" / "commit.json").exists()
        return "refused (swap under way)" if refused else f"MIXED: {err}"
    found = digests(out)
    return {json.dumps(older): "older, whole", json.dumps(newer): "newer, whole"}.get(json.dumps(found), "MIXED")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--preset", default="demo")
    parser.add_argument("--kills", type=int, default=10)
    parser.add_argument("--runner", default="local")
    parser.add_argument("--older", default="seed=1", help="the --set that makes the older dataset")
    parser.add_argument("--work", type=Path, required=True)
    parser.add_argument("--seed", type=int, default=0, help="of the random kill delays")
    parser.add_argument("--checkpoints", type=Path, help="an earlier output whose batch checkpoints to reuse")
    args = parser.parse_args()
    common = ["--runner", args.runner, "--no-progress"]
    older, newer = args.work / "older", args.work / "newer"
    shutil.rmtree(args.work, ignore_errors=True)
    if args.checkpoints:
        shutil.copytree(args.checkpoints / ".eqagen" / "batches", older / ".eqagen" / "batches")
    run([args.preset, "--out", str(older), "--set", args.older, *common])
    shutil.copytree(older, newer, symlinks=True)
    duration = run([args.preset, "--out", str(newer), "--overwrite", *common])  # the run the tries kill
    reference_older, reference_newer = digests(older), digests(newer)
    rng, tries, horizon = random.Random(args.seed), [], duration
    while len(tries) < args.kills:
        out = args.work / f"try-{len(tries)}"
        shutil.rmtree(out, ignore_errors=True)
        shutil.copytree(older, out, symlinks=True)
        cmd = [*EQAGEN, args.preset, "--out", str(out), "--overwrite", *common]
        delay = rng.uniform(0, horizon)
        start = time.perf_counter()
        proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            proc.wait(timeout=delay)
            horizon = time.perf_counter() - start  # it ran faster than measured (the machine's load changed)
            continue  # not killed: draw again within the shorter horizon
        except subprocess.TimeoutExpired:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        time.sleep(1.0)  # the kernel kills the Prefect server and workers (PR_SET_PDEATHSIG)
        state = state_of(out, reference_older, reference_newer)
        rerun = subprocess.run(cmd, capture_output=True, text=True, check=False)
        same = rerun.returncode == 0 and digests(out) == reference_newer
        tries.append({"delay_s": round(delay, 2), "after_kill": state, "rerun_exit": rerun.returncode,
                      "rerun_gives_reference_bytes": same})  # fmt: skip
        shutil.rmtree(out)
        print(json.dumps(tries[-1]), file=sys.stderr, flush=True)
    report = {
        "preset": args.preset, "runner": args.runner, "older": args.older, "uninterrupted_s": round(duration, 1),
        "kills": len(tries), "mixed": sum(t["after_kill"].startswith("MIXED") for t in tries),
        "reruns_with_reference_bytes": sum(t["rerun_gives_reference_bytes"] for t in tries), "tries": tries,
    }  # fmt: skip
    print(json.dumps(report, indent=1))
    return 0 if report["mixed"] == 0 and report["reruns_with_reference_bytes"] == len(tries) else 1


if __name__ == "__main__":
    sys.exit(main())
