"""A small synthetic dataset directory, written with plain pyarrow in the declared schemas (typed nested
columns), for the audit's unit tests.

Independent of the pipeline on purpose: the audit must read any directory of the documented layout.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from eqagen.core import OPENEQA_CATEGORIES, Entities, Episode, Steps, Timeline
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA, episode_row
from eqagen.outputs.shards import file_schema_sha256, sha256_of

SPLITS = ("train", "validation", "test")
QUERY_TYPES = ("count", "listObjects", "getState", "getProperty", "getLocation")
FAMILIES = ("property", "location", "state", "position", "moment")


def random_episode(rng: np.random.Generator, episode_id: str, scene_id: str) -> Episode:
    T, N = int(rng.integers(3, 30)), 4
    pose = np.zeros((T, 5), np.float32)
    pose[:, 0] = rng.integers(0, 3, T) * 0.25  # few cells, so some episodes revisit a pose
    pose[:, 3] = rng.choice([0, 90, 180, 270], T)
    success = rng.random(T) < 0.8
    success[0] = True
    steps = Steps(
        action=["Initialize"] + ["MoveAhead"] * (T - 1),
        target=np.full(T, -1, np.int32),
        receptacle=np.full(T, -1, np.int32),
        args=[{} for _ in range(T)],
        success=success,
        error=["" if s else "blocked" for s in success],
        pose=pose,
        held=np.full(T, -1, np.int32),
    )
    dense = {"position": np.zeros((T, N, 3), np.float32), "visible": rng.random((T, N)) < 0.5,
             "parent": np.full((T, N), -1, np.int32)}  # fmt: skip
    ents = Entities([f"Cup#{i}" for i in range(N)], ["Cup"] * N, [""] * N, [{}] * N, [()] * N)
    return Episode(episode_id, "household", "embedded", scene_id, 0, {"type": "explore"}, steps, ents,
                   Timeline.from_dense(dense), [], meta={"success": bool(rng.random() < 0.5)})  # fmt: skip


def random_questions(rng: np.random.Generator, n: int, episodes: list[Episode]) -> list[dict]:
    rows = []
    splits = np.array(["train", "validation", "test"])
    for i in range(n):
        ep = episodes[int(rng.integers(len(episodes)))]
        fams = sorted(set(rng.choice(FAMILIES, int(rng.integers(1, 4))).tolist()))
        validated = bool(rng.random() < 0.6)
        answer_key = str(rng.integers(0, 3))
        filters = [{"family": f, "key": "k", "value": "v", "args": {"event": 0} if f == "moment" else {}} for f in fams]
        rows.append({
            "question_id": f"q{i:05d}", "episode_id": ep.episode_id, "scene_id": ep.scene_id,
            "family": "household", "backend": "embedded", "split": str(rng.choice(splits, p=[0.7, 0.15, 0.15])),
            "query_type": str(rng.choice(QUERY_TYPES)), "answer_type": str(rng.choice(["number", "yes/no"])),
            "answer_key": answer_key, "grounded": bool(rng.random() < 0.4),
            "program": {"filters": filters, "query": {"name": "count", "arg": "", "args": {"kind": "open"}}},
            "structured_answer": [{"predicate": "", "anchor": None, "result": [], "value": answer_key}],
            "category": str(rng.choice(OPENEQA_CATEGORIES)), "express_category": "counting",
            "balance_key": f"how many things of kind {int(rng.integers(0, 15))}?", "predicate_families": fams,
            "n_filters": len(fams), "question": "how many cups " * int(rng.integers(1, 4)), "answer": "two",
            "paraphrase": {"question": "cups: how many?", "answer": "2 cups", "model": "m" if validated else "",
                           "validated": validated},
        })  # fmt: skip
    return rows


def write_dataset(out: Path, seed: int = 0, n_questions: int = 400) -> Path:
    """The documented layout (questions/<split>-00000-of-00001.parquet, episodes/episodes-00000-of-00001.parquet)
    and a manifest listing every shard with its rows and sha256, and each table's one schema (inferred from
    all of its rows, so that every split's shard has it), written by hand."""
    rng = np.random.default_rng(seed)
    episodes = [random_episode(rng, f"ep{i}", f"scene{i % 7}") for i in range(20)]
    rows = random_questions(rng, n_questions, episodes)
    tables = {f"questions/{s}-00000-of-00001.parquet": [r for r in rows if r["split"] == s] for s in SPLITS}
    tables["episodes/episodes-00000-of-00001.parquet"] = [episode_row(ep) for ep in episodes]
    shards = []
    for rel, part in tables.items():
        (out / rel).parent.mkdir(parents=True, exist_ok=True)
        schema = EPISODES_SCHEMA if rel.startswith("episodes/") else QUESTIONS_SCHEMA
        pq.write_table(pa.Table.from_pylist(part, schema=schema), out / rel)
        shards.append({"path": rel, "rows": len(part), "sha256": sha256_of(out / rel),
                       "bytes": (out / rel).stat().st_size})  # fmt: skip
    counts = {s: len(tables[f"questions/{s}-00000-of-00001.parquet"]) for s in SPLITS}
    manifest = {
        "format": "eqagen-dataset", "format_version": 2, "seed": seed, "config_hash": "fixture", "config": {},
        "rows": {"episodes": len(episodes), "questions": counts, "questions_total": len(rows)},
        "shards": shards, "schema_sha256": {rel.split("/")[0]: file_schema_sha256(out / rel) for rel in tables},
        "files": ["stats.json"],
    }  # fmt: skip
    (out / "manifest.json").write_text(json.dumps(manifest))
    return out
