"""Replay bundles: per episode, what its simulator needs to reproduce it (``eqagen export DIR --format replay``).

``FOLDER/manifest.json`` lists every episode with its simulator, the pinned version, whether the simulator can
load it, and its files; ``FOLDER/<episode_id>/`` holds them:

- ALFRED-backed households (backend ``alfred``, expert and FILM modes): ``traj_data.json`` in ALFRED's
  layout: ``scene`` (floor plan, scene number, object poses, toggles, dirty/empty, ``init_action``, random
  seed: recorded from ALFRED's own file when the episode was made) and ``plan.low_actions[*].api_action``
  (the episode's actions with their AI2-THOR arguments and objectIds), plus ``task_id``, ``task_type`` and
  ``pddl_params`` where known. ALFRED's replay script runs it under AI2-THOR 2.1.0, the version ALFRED's
  requirements name.
- Navigation: ``habitat_episode.json`` (habitat's episode dataset layout: ``episodes`` with ``scene_id``,
  start position and rotation, goals and the per-step poses as ``shortest_paths``) and ``poses/NNNNN.txt``,
  the camera-to-world 4x4 matrix of each step (OpenEQA's per-frame pose files), in habitat's native frame.
- Minecraft: ``world/`` (a save folder from the Anvil writer, the world rebuilt from the dataset's config) and
  ``teleports.mcfunction`` (one ``/tp`` per step: native block coordinates, yaw, pitch).
- Embedded households and embedded navigation houses are procedural: no simulator has their scenes. The
  manifest says so (``replayable: false`` and why) and the bundle holds the episode's history and scene
  graph (docs/models.md) instead.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from eqagen.core import DataFileError, Episode
from eqagen.outputs.atomic import write_text_atomic
from eqagen.outputs.dataset import Dataset, open_dataset
from eqagen.outputs.export_express import native_poses, trajectory_fields
from eqagen.outputs.history import episode_history
from eqagen.outputs.model_inputs import episodes_asked_about
from eqagen.outputs.scenegraph import scene_graph

SIMULATORS = {
    "alfred": {"simulator": "ai2thor", "version": "2.1.0", "pinned_by": "ALFRED's requirements.txt"},
    "habitat": {"simulator": "habitat-sim", "version": None, "pinned_by": "none: no source checked here names one"},
    "minecraft": {"simulator": "minecraft", "version": "1.20.1", "pinned_by": "the Anvil writer's DataVersion 3465"},
}
PROCEDURAL = "a procedural scene of eqagen's embedded backend: no simulator has it; history and scene graph instead"


def _json(path: Path, record: Any) -> None:
    write_text_atomic(path, json.dumps(record, indent=1, ensure_ascii=False) + "\n")


# -- ALFRED -----------------------------------------------------------------------------------------------
def api_action(episode: Episode, t: int) -> dict[str, Any]:
    """Step ``t`` as AI2-THOR's call: the action, its objectIds (ALFRED's own where the step recorded them,
    else the entity's native id) and its other arguments."""
    s, ids = episode.steps, episode.entities.native_id
    args = dict(s.args[t])
    alfred_ids = args.pop("alfred_ids", {})
    call = {"action": s.action[t], **args}
    for key, e in (("objectId", int(s.target[t])), ("receptacleObjectId", int(s.receptacle[t]))):
        if key in alfred_ids:
            call[key] = alfred_ids[key]
        elif e >= 0:
            call[key] = ids[e]
    return call


def traj_data(episode: Episode) -> dict[str, Any]:
    """The episode in ALFRED's ``traj_data.json`` layout (the fields a replay reads)."""
    task = episode.task
    data = {
        "task_id": task.get("task_id", episode.episode_id),
        "scene": episode.meta["alfred_scene"],
        "plan": {"low_actions": [{"api_action": api_action(episode, t)} for t in range(1, episode.n_steps)]},
    }
    if episode.meta.get("alfred_task"):
        data |= episode.meta["alfred_task"]
    return data


# -- navigation --------------------------------------------------------------------------------------------
def habitat_episode(episode: Episode) -> dict[str, Any]:
    """habitat's episode dataset JSON holding this one episode."""
    fields = trajectory_fields(episode)
    positions, rotations = native_poses(episode)
    path = [
        {"action": episode.steps.action[t], "position": positions[t].round(5).tolist(),
         "rotation": rotations[t].round(5).tolist()}
        for t in range(episode.n_steps)
    ]  # fmt: skip
    return {
        "episodes": [
            {
                "episode_id": episode.episode_id,
                "scene_id": episode.scene_id,
                "start_position": fields["start_position"],
                "start_rotation": fields["start_rotation"],
                "info": {"geodesic_distance": fields["geodesic_distance"]},
                "goals": [{"position": fields["goal_position"], "radius": None}],
                "shortest_paths": [path],
            }
        ]
    }


def camera_to_world(position: np.ndarray, quaternion: np.ndarray) -> np.ndarray:
    """The 4x4 pose matrix of a camera at ``position`` rotated by ``[w, x, y, z]`` about +y."""
    w, _, y, _ = quaternion
    yaw = 2 * np.arctan2(y, w)
    m = np.eye(4)
    m[:3, :3] = [[np.cos(yaw), 0, np.sin(yaw)], [0, 1, 0], [-np.sin(yaw), 0, np.cos(yaw)]]
    m[:3, 3] = position
    return m


def write_navigation(episode: Episode, folder: Path) -> list[str]:
    _json(folder / "habitat_episode.json", habitat_episode(episode))
    positions, rotations = native_poses(episode)
    for t in range(episode.n_steps):
        text = "".join(" ".join(f"{v:.6f}" for v in row) + "\n" for row in camera_to_world(positions[t], rotations[t]))
        write_text_atomic(folder / "poses" / f"{t:05d}.txt", text)
    return ["habitat_episode.json", "poses/"]


# -- Minecraft ---------------------------------------------------------------------------------------------
def teleports(episode: Episode) -> str:
    """One ``/tp @p x y z yaw pitch`` per step, native coordinates."""
    pose = episode.steps.pose.astype(np.float64)
    native = episode.frame.to_native(pose[:, :3])
    yaw = episode.frame.yaw_to_native(pose[:, 3])
    lines = [f"tp @p {x:.3f} {y:.3f} {z:.3f} {a:.1f} {p:.1f}" for (x, y, z), a, p in zip(native, yaw, pose[:, 4])]
    return "\n".join(lines) + "\n"


def write_minecraft(episode: Episode, folder: Path, dataset: Dataset) -> list[str]:
    from eqagen.generators.blockworld.backend import world_of_scene  # loaded only for a Minecraft bundle
    from eqagen.generators.blockworld.savedir import write_save

    config = dataset.manifest.config.get("generation")
    if not config or "n_episodes" not in config:
        why = "missing: the world of a Minecraft episode is rebuilt from the run's config"
        raise DataFileError(
            dataset.root / "manifest.json", "config.generation", why, "export a folder eqagen generate wrote"
        )
    params, n = config.get("params") or {}, int(config["n_episodes"])
    world = world_of_scene(config["backend"], dataset.manifest.seed, params, n, episode.scene_id)
    write_save(world, folder / "world")
    write_text_atomic(folder / "teleports.mcfunction", teleports(episode))
    return ["world/", "teleports.mcfunction"]


# -- the bundle ----------------------------------------------------------------------------------------------
def write_procedural(episode: Episode, folder: Path) -> list[str]:
    _json(folder / "history.json", episode_history(episode))
    _json(folder / "scenegraph.json", scene_graph(episode))
    return ["history.json", "scenegraph.json"]


def write_bundle(episode: Episode, dest: Path, dataset: Dataset) -> dict[str, Any]:
    """One episode's bundle under ``dest/<episode_id>/``; returns its manifest entry."""
    folder = Path(dest) / episode.episode_id
    entry: dict[str, Any] = {"episode_id": episode.episode_id, "family": episode.family, "backend": episode.backend}
    if episode.backend == "alfred" and "alfred_scene" in episode.meta:
        _json(folder / "traj_data.json", traj_data(episode))
        return entry | SIMULATORS["alfred"] | {"replayable": True, "files": ["traj_data.json"]}
    if episode.family == "blockworld":
        files = write_minecraft(episode, folder, dataset)
        return entry | SIMULATORS["minecraft"] | {"replayable": True, "files": files}
    if episode.family == "household" and episode.backend != "embedded":
        why = "no ALFRED scene recorded in this episode (made before they were, or by the ai2thor backend)"
        return entry | SIMULATORS["alfred"] | {"replayable": False, "why": why, "files": []}
    files = write_procedural(episode, folder) if episode.backend == "embedded" else []
    if episode.family == "navigation":
        files += write_navigation(episode, folder)
        if episode.backend == "embedded":
            return entry | SIMULATORS["habitat"] | {"replayable": False, "why": PROCEDURAL, "files": files}
        return entry | SIMULATORS["habitat"] | {"replayable": True, "files": files}
    return entry | {"simulator": None, "version": None, "replayable": False, "why": PROCEDURAL, "files": files}


def export_replay(out_dir: Path, dest: Path, split: str | None = None) -> int:
    """Bundles of the episodes the questions of ``split`` (every split by default) are about, and the
    manifest; returns how many episodes were bundled."""
    dataset = open_dataset(Path(out_dir))
    entries = [write_bundle(ep, Path(dest), dataset) for ep in episodes_asked_about(dataset, split)]
    manifest = {
        "format": "eqagen-replay",
        "dataset": str(Path(out_dir).resolve()),
        "split": split or "all",
        "episodes": entries,
        "replayable": sum(e["replayable"] for e in entries),
    }
    _json(Path(dest) / "manifest.json", manifest)
    return len(entries)
