"""Audit speed: ``eqagen audit`` on a 100,000-question dataset (target: under 20 s on one core).

Builds a synthetic dataset of the documented layout (questions split into shards per split, an
episodes table, manifest and stats.json), then times the full audit: reading the shards, recomputing
every statistic, checking checksums and stats.json. Prints the numbers; ``--json PATH`` saves them.
(The synthetic questions are not balanced, so the balance checks report failures: only speed is measured.)
"""

from __future__ import annotations

import argparse
import json
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from eqagen.commands.audit_run import audit_dir
from eqagen.core import OPENEQA_CATEGORIES
from eqagen.curation.audit import build_stats
from eqagen.outputs.shards import sha256_of

TARGET_SECONDS = 20.0


def synthetic_questions(n: int, n_episodes: int, rng: np.random.Generator) -> pa.Table:
    ep = rng.integers(0, n_episodes, n)
    fams = np.array(["property", "location", "state", "position", "moment"])
    fam_lists = [sorted(set(fams[rng.integers(0, 5, k)].tolist())) for k in rng.integers(1, 4, n)]
    validated = rng.random(n) < 0.6
    answer_keys = rng.integers(0, 4, n).astype(str)
    return pa.table({
        "question_id": [f"q{i:07d}" for i in range(n)],
        "episode_id": [f"ep{e}" for e in ep],
        "scene_id": [f"scene{e % 300}" for e in ep],
        "family": ["household"] * n, "backend": ["embedded"] * n,
        "split": rng.choice(["train", "validation", "test"], n, p=[0.7, 0.15, 0.15]),
        "query_type": rng.choice(["count", "listObjects", "getState", "getProperty", "getLocation"], n),
        "answer_type": rng.choice(["number", "yes/no", "color"], n),
        "answer_key": answer_keys,
        "structured_answer": [[{"predicate": "", "anchor": None, "result": [], "value": a}] for a in answer_keys],
        "program": [{"filters": [{"family": f, "key": "k", "value": "v", "args": "{}"} for f in fl],
                     "query": {"name": "count", "arg": "", "args": "{}"}} for fl in fam_lists],
        "grounded": rng.random(n) < 0.4,
        "category": rng.choice(list(OPENEQA_CATEGORIES), n),
        "express_category": rng.choice(["counting", "location"], n),
        "balance_key": [f"question {k}" for k in rng.integers(0, n // 6, n)],
        "predicate_families": fam_lists, "n_filters": [len(f) for f in fam_lists],
        "question": ["how many green cups were on the countertop after you opened the fridge?"] * n,
        "answer": ["two"] * n,
        "paraphrase": [{"question": "q", "answer": "a", "model": "m", "validated": bool(v)} for v in validated],
    })  # fmt: skip


def synthetic_episodes(n: int, rng: np.random.Generator) -> pa.Table:
    lengths = rng.integers(20, 250, n)
    success = [(rng.random(k) < 0.85).tolist() for k in lengths]
    pose = [np.round(rng.integers(0, 8, (k, 5)) * 0.25, 2).tolist() for k in lengths]
    return pa.table({
        "episode_id": [f"ep{i}" for i in range(n)], "family": ["household"] * n, "backend": ["embedded"] * n,
        "scene_id": [f"scene{i % 300}" for i in range(n)],
        "meta": [json.dumps({"success": bool(s)}) for s in rng.random(n) < 0.5],
        "steps": [{"success": s, "pose": p} for s, p in zip(success, pose)],
    })  # fmt: skip


def write(out: Path, questions: pa.Table, episodes: pa.Table, rows_per_shard: int = 20_000) -> None:
    shards = {}
    for split in ("train", "validation", "test"):
        part = questions.filter(pa.compute.equal(questions["split"], split))
        for i, start in enumerate(range(0, part.num_rows, rows_per_shard)):
            rel = f"questions/split={split}/part-{i:05d}.parquet"
            (out / rel).parent.mkdir(parents=True, exist_ok=True)
            pq.write_table(part.slice(start, rows_per_shard), out / rel)
            shards[rel] = {"rows": min(rows_per_shard, part.num_rows - start)}
    (out / "episodes").mkdir(parents=True, exist_ok=True)
    pq.write_table(episodes, out / "episodes/part-00000.parquet")
    shards["episodes/part-00000.parquet"] = {"rows": episodes.num_rows}
    for rel, info in shards.items():
        info["sha256"] = sha256_of(out / rel)
    (out / "manifest.json").write_text(json.dumps({"shards": shards}))
    stats = build_stats(questions, episodes, {})
    (out / "stats.json").write_text(json.dumps(stats))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--questions", type=int, default=100_000)
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp)
        write(out, synthetic_questions(args.questions, args.episodes, rng), synthetic_episodes(args.episodes, rng))
        start = time.perf_counter()
        _, checks = audit_dir(out)
        seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    result = {"questions": args.questions, "episodes": args.episodes, "audit_seconds": round(seconds, 3),
              "target_seconds": TARGET_SECONDS, "meets_target": seconds < TARGET_SECONDS,
              "checks_run": len(checks), "peak_rss_mb": round(peak_mb, 1)}  # fmt: skip
    print(json.dumps(result, indent=2))
    if args.json:
        args.json.write_text(json.dumps(result, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
