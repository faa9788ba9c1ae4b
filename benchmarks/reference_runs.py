"""Reference runs that need no model (docs/scoring.md, "Reference runs"): gold predictions in each shape, the
audit's blind baselines, and the program-executing oracle at growing perception noise, each written as a
predictions file and scored by ``eqagen score --json``; prints the table docs/scoring.md holds.

    python benchmarks/reference_runs.py DATASET --out DIR [--split test] [--levels 0,0.05,0.1,0.2,0.4]

PQB's Table 1, on our data: the blind models within the binomial test of chance (p > 0.05), the grounded
oracle far above it (p < 0.0001), falling as the noise grows.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from eqagen.outputs.dataset import open_dataset
from eqagen.outputs.readers import iter_episodes, read_questions
from eqagen.scoring.choice import p_text
from eqagen.scoring.predictions import SHAPES
from eqagen.scoring.reference import PerceptionNoise, blind_rows, gold_rows, oracle_rows

COLUMNS = ("accuracy", "structured", "structured_no_grounding", "exact_match", "readback", "count_exact", "count_mra")


def write_jsonl(rows: list[dict[str, Any]], path: Path) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


def prediction_files(dataset: Path, out: Path, split: str, levels: list[float], seed: int) -> dict[str, Path]:
    """Every reference run's predictions file, by the name of the run."""
    source = open_dataset(dataset)
    records = read_questions(source, split)
    files = {f"gold {shape}": write_jsonl(gold_rows(records, shape), out / f"gold-{shape}.jsonl") for shape in SHAPES}
    questions = source.read("questions")
    for model, rows in blind_rows(questions).items():
        files[f"blind {model}"] = write_jsonl(rows, out / f"blind-{model}.jsonl")
    wanted = {r.episode_id for r in records}
    episodes = {ep.episode_id: ep for ep in iter_episodes(source) if ep.episode_id in wanted}
    for level in levels:
        rows = oracle_rows(records, episodes, PerceptionNoise.at(level), seed)
        files[f"oracle noise {level:g}"] = write_jsonl(rows, out / f"oracle-noise-{level:g}.jsonl")
    return files


def score(dataset: Path, predictions: Path, split: str) -> dict[str, Any]:
    """``eqagen score --json -`` on one file, as a user runs it."""
    command = [sys.executable, "-m", "eqagen.cli", "score", str(dataset), str(predictions), "--split", split,
               "--json", "-"]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return json.loads(done.stdout)


def table_row(name: str, report: dict[str, Any]) -> str:
    overall, test = report["overall"], report["chance_tests"].get("overall", {})
    cells = [f"{overall[c]:.3f}" if c in overall else "" for c in COLUMNS]
    chance = f"{test['chance']:.3f}" if test else ""
    p = p_text(test["p_value"]) if test else ""
    return f"| {name} | {' | '.join(cells)} | {chance} | {p} |"


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("dataset", type=Path)
    parser.add_argument("--out", type=Path, required=True, help="where the predictions files and reports go")
    parser.add_argument("--split", default="test")
    parser.add_argument("--levels", default="0,0.05,0.1,0.2,0.4", help="the oracle's noise levels")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    levels = [float(v) for v in args.levels.split(",")]
    files = prediction_files(args.dataset, args.out, args.split, levels, args.seed)
    print(f"| run | {' | '.join(COLUMNS)} | chance | p (binomial) |")
    print("|---" * (len(COLUMNS) + 3) + "|")
    for name, path in files.items():
        report = score(args.dataset, path, args.split)
        (args.out / f"{path.stem}.report.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
        print(table_row(name, report), flush=True)


if __name__ == "__main__":
    main()
