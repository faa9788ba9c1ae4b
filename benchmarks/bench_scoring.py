"""The scorer, validated as TAG-EQA validated its own, and timed.

1. Perturbation: the test split's gold structured answers perturbed by each of TAG-EQA's four perturbations
   (:mod:`eqagen.scoring.perturb`) at strengths 0, 0.2, ..., 1; the mean structured score (with grounding)
   per strength must fall monotonically from 5; Spearman's rank correlation between strength and score over
   every (record, strength); a random answer (another record's) for the floor.
2. Speed: ``eqagen score`` on the test split's gold predictions in each shape, offline, in this process
   (target: under 10 s for the 2,270 test predictions of tag-eqa on 2 cores; the dataset's checksums included).

    python benchmarks/bench_scoring.py [--dataset DIR] [--split test] [--json PATH]

Without ``--dataset`` it first makes tag-eqa with the real command (``eqagen generate tag-eqa``, about two
minutes on 2 idle cores) in a temporary folder.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy.stats import spearmanr

from eqagen.commands.score import score
from eqagen.core import QARecord, derive_rng
from eqagen.outputs.readers import read_questions
from eqagen.scoring.perturb import PERTURBATIONS, Pools, random_answer
from eqagen.scoring.predictions import SHAPES
from eqagen.scoring.reference import gold_rows
from eqagen.scoring.structured import structured_score

STRENGTHS = (0.0, 0.2, 0.4, 0.6, 0.8, 1.0)
TARGET_SECONDS = 10.0


def perturbation_table(records: list[QARecord], seed: int = 0) -> dict[str, Any]:
    """Per perturbation: the mean score at each strength, whether it falls monotonically, and Spearman's rho."""
    pools = Pools.of(records)
    out: dict[str, Any] = {}
    for name, perturb in PERTURBATIONS.items():
        scores = np.empty((len(records), len(STRENGTHS)))
        for i, r in enumerate(records):
            for j, s in enumerate(STRENGTHS):
                rng = derive_rng(seed, "perturb", name, r.question_id)  # the same draws at every strength
                scores[i, j] = structured_score(perturb(r.structured_answer, s, rng, pools), r.structured_answer)
        means = scores.mean(axis=0)
        rho = spearmanr(np.tile(STRENGTHS, len(records)), scores.ravel()).statistic
        out[name] = {
            "mean_score": [round(float(m), 4) for m in means],
            "monotone": bool(np.all(np.diff(means) < 0)),
            "spearman": round(float(rho), 4),
        }
    rng = derive_rng(seed, "perturb", "random")
    floor = [structured_score(random_answer(records, i, rng), r.structured_answer) for i, r in enumerate(records)]
    out["random_answer"] = {"mean_score": round(float(np.mean(floor)), 4)}
    return out


def timing(dataset: Path, split: str, records: list[QARecord]) -> dict[str, dict[str, float]]:
    """Wall and CPU seconds of ``eqagen score`` (verification, reading, scoring, breakdowns) per shape (the CPU
    seconds say what a loaded machine's wall clock cannot)."""
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        for shape in SHAPES:
            path = Path(tmp) / f"gold-{shape}.jsonl"
            path.write_text("".join(json.dumps(row) + "\n" for row in gold_rows(records, shape)), encoding="utf-8")
            args = argparse.Namespace(dataset=dataset, predictions=path, split=split, similarity="token-jaccard",
                                      judge=None)  # fmt: skip
            start, cpu = time.perf_counter(), time.process_time()
            score(args)
            out[shape] = {"wall_s": round(time.perf_counter() - start, 3), "cpu_s": round(time.process_time() - cpu, 3)}
    return out


def made_dataset(root: Path) -> Path:
    """tag-eqa, made by ``eqagen generate`` as a user makes it."""
    out = root / "tag-eqa"
    command = [sys.executable, "-m", "eqagen.cli", "generate", "tag-eqa", "--out", str(out), "--no-progress"]
    subprocess.run(command, check=True, stdout=subprocess.DEVNULL)
    return out


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dataset", type=Path, help="a dataset folder (default: tag-eqa, made first)")
    parser.add_argument("--split", default="test")
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        run(args.dataset or made_dataset(Path(tmp)), args.split, args.json)


def run(dataset: Path, split: str, json_path: Path | None) -> None:
    records = read_questions(dataset, split)
    table = perturbation_table(records)
    print(f"perturbation ({len(records)} gold answers), mean structured score at strength {list(STRENGTHS)}:")
    for name, row in table.items():
        if name == "random_answer":
            print(f"  random answer: {row['mean_score']:.3f}")
        else:
            print(f"  {name:12s} {' '.join(f'{m:.3f}' for m in row['mean_score'])}  monotone={row['monotone']}  "
                  f"spearman={row['spearman']:.3f}")  # fmt: skip
    seconds = timing(dataset, split, records)
    print(f"eqagen score on {len(records)} predictions (target < {TARGET_SECONDS:g} s):")
    for shape, s in seconds.items():
        verdict = "ok" if s["wall_s"] < TARGET_SECONDS else "OVER"
        print(f"  {shape:18s} {s['wall_s']:6.2f} s wall, {s['cpu_s']:6.2f} s CPU  {verdict}")
    if json_path:
        json_path.write_text(json.dumps({"perturbation": table, "seconds": seconds}, indent=2), encoding="utf-8")


if __name__ == "__main__":
    main()
