"""Export navigation questions in EXPRESS-Bench's record format, so tools written for it read our data.

One record per question (``eqagen export OUT --format express --out express.json``)::

    {"episode_id": <question_id>, "trajectory_id": <our episode_id>, "scene_id", "type" (the EXPRESS-Bench
     category), "question", "answer", "start_position", "start_rotation", "goal_position",
     "goal_rotation", "geodesic_distance", "step_length",
     "actions": {"step_0": {"action", "position", "rotation"}, ...}}

Positions are in the scene's native habitat frame (metres, y up), rotations ``[w, x, y, z]``
quaternions about +y. ``actions`` lists every atomic action of the trajectory with the agent's pose
after it (the initial pose is ``start_position``/``start_rotation``); ``goal_position`` is the sampled
goal, ``goal_rotation`` the agent's final heading. The question text is the validated paraphrase where
there is one, else the template text (as in the OpenEQA export). Questions of other world families
are skipped.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from eqagen.core import ConfigError, DataFileError, Episode, QARecord
from eqagen.outputs.atomic import write_text_atomic
from eqagen.outputs.dataset import open_dataset
from eqagen.outputs.readers import iter_episodes, read_questions


def yaw_quaternions(yaw_deg: np.ndarray) -> np.ndarray:
    """habitat yaw (degrees, about +y) as ``[w, x, y, z]`` quaternions."""
    half = np.deg2rad(np.asarray(yaw_deg, dtype=np.float64)) / 2.0
    zero = np.zeros_like(half)
    q = np.stack([np.cos(half), zero, np.sin(half), zero], axis=-1)
    return q * np.where(q[..., :1] < 0, -1.0, 1.0)  # q and -q are the same rotation: keep w >= 0


def native_poses(episode: Episode) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``[T, 3]`` and quaternions ``[T, 4]`` of every step, in the native habitat frame."""
    if episode.frame.native != "habitat":
        raise DataFileError(
            "episodes", "frame", f"episode {episode.episode_id} is in the '{episode.frame.native}' frame",
            "export only navigation (habitat-frame) datasets as express",
        )  # fmt: skip
    pose = episode.steps.pose.astype(np.float64)
    return episode.frame.to_native(pose[:, :3]), yaw_quaternions(episode.frame.yaw_to_native(pose[:, 3]))


def _rounded(a: np.ndarray) -> list[float]:
    return [round(float(v), 5) for v in a]


def trajectory_fields(episode: Episode) -> dict[str, Any]:
    """The per-trajectory part of a record (shared by every question on the episode)."""
    positions, rotations = native_poses(episode)
    task = episode.task
    actions = {
        f"step_{t - 1}": {
            "action": episode.steps.action[t],
            "position": _rounded(positions[t]),
            "rotation": _rounded(rotations[t]),
        }
        for t in range(1, episode.n_steps)
    }
    return {
        "trajectory_id": episode.episode_id,
        "scene_id": episode.scene_id,
        "start_position": _rounded(positions[0]),
        "start_rotation": _rounded(rotations[0]),
        "goal_position": _rounded(np.asarray(task.get("goal_position", positions[-1]), dtype=np.float64)),
        "goal_rotation": _rounded(rotations[-1]),
        "geodesic_distance": round(float(task.get("geodesic_distance", float("nan"))), 5),
        "step_length": float(task.get("step_length", 0.25)),
        "actions": actions,
    }


def express_record(question: QARecord, trajectory: dict[str, Any]) -> dict[str, Any]:
    para = question.paraphrase
    text = para.question if para is not None and para.validated else question.question
    return {
        "episode_id": question.question_id,
        "trajectory_id": trajectory["trajectory_id"],
        "scene_id": trajectory["scene_id"],
        "type": question.express_category,
        "question": text,
        "answer": question.answer,
        **{k: v for k, v in trajectory.items() if k not in ("trajectory_id", "scene_id")},
    }


def express_records(out_dir: Path, split: str | None = None) -> list[dict[str, Any]]:
    dataset = open_dataset(Path(out_dir))  # verified once, read twice
    every = read_questions(dataset, split)
    questions = [q for q in every if q.family == "navigation"]
    if not questions:
        families = ", ".join(sorted({q.family for q in every})) or "no"
        raise ConfigError(
            "--format",
            f"'express' writes EXPRESS-Bench records, which are for navigation episodes only, and {out_dir} "
            f"holds {families} questions",
            "openeqa, jsonl",
        )
    wanted = {q.episode_id for q in questions}
    trajectories = {ep.episode_id: trajectory_fields(ep) for ep in iter_episodes(dataset) if ep.episode_id in wanted}
    missing = wanted - set(trajectories)
    if missing:
        raise DataFileError(
            out_dir,
            "episodes",
            f"{len(missing)} questions refer to missing episodes, e.g. {min(missing)}",
            "regenerate the dataset; the episodes table must hold every question's episode",
        )
    questions.sort(key=lambda q: q.question_id)
    return [express_record(q, trajectories[q.episode_id]) for q in questions]


def export_express(out_dir: Path, dest: Path, split: str | None = None) -> int:
    """Write EXPRESS-Bench records of the dataset in ``out_dir`` to ``dest`` (JSON); returns their number."""
    records = express_records(out_dir, split)
    write_text_atomic(Path(dest), json.dumps(records, indent=1, ensure_ascii=False) + "\n")
    return len(records)
