"""Per-episode model inputs written by ``eqagen export DIR --format history|scenegraph --out FOLDER``.

``FOLDER/eqagen-<backend>/<episode_id>.json`` (the OpenEQA export's ``episode_history`` value, plus
``.json``) for every episode that a question of the chosen split (all splits by
default) is about: its history (:mod:`eqagen.outputs.history`; ``--max-observations K`` keeps TAG-EQA's
K-observation subsample, :mod:`eqagen.outputs.subsample`) or its scene graph
(:mod:`eqagen.outputs.scenegraph`; ``--at-step`` picks the step, by default the last). Episodes are read
from the shards alone.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from eqagen.core import ConfigError, Episode
from eqagen.outputs.atomic import write_text_atomic
from eqagen.outputs.history import episode_history
from eqagen.outputs.readers import DatasetSource, as_dataset, iter_episodes, read_questions
from eqagen.outputs.scenegraph import scene_graph
from eqagen.outputs.subsample import subsample_steps


def history_of(episode: Episode, max_observations: int | None = None) -> dict[str, Any]:
    """The whole history, or TAG-EQA's subsample of ``max_observations`` steps."""
    if max_observations is None:
        return episode_history(episode)
    return episode_history(episode, subsample_steps(episode, max_observations))


def check_max_observations(k: int | None) -> None:
    if k is not None and k < 1:
        raise ConfigError("--max-observations", f"{k} keeps no observation", "a positive number of steps")


def episodes_asked_about(source: DatasetSource, split: str | None) -> Iterator[Episode]:
    """The episodes the questions of ``split`` (or of every split) are about, in the shards' order."""
    dataset = as_dataset(source)
    wanted = {q.episode_id for q in read_questions(dataset, split)}
    for episode in iter_episodes(dataset):
        if episode.episode_id in wanted:
            yield episode


def episode_reference(backend: str, episode_id: str) -> str:
    """How exports name an episode's history: OpenEQA's ``episode_history`` value; the history export
    writes that episode's file at ``<reference>.json``."""
    return f"eqagen-{backend}/{episode_id}"


def write_per_episode(dest: Path, records: Iterator[tuple[Episode, dict[str, Any]]]) -> int:
    """``dest/<episode reference>.json`` for each ``(episode, record)``; returns how many were written."""
    n = 0
    for episode, record in records:
        path = Path(dest) / f"{episode_reference(episode.backend, episode.episode_id)}.json"
        write_text_atomic(path, json.dumps(record, ensure_ascii=False) + "\n")
        n += 1
    return n


def export_histories(out_dir: Path, dest: Path, split: str | None = None, max_observations: int | None = None) -> int:
    check_max_observations(max_observations)
    episodes = episodes_asked_about(out_dir, split)
    return write_per_episode(dest, ((ep, history_of(ep, max_observations)) for ep in episodes))


def export_scenegraphs(out_dir: Path, dest: Path, split: str | None = None, at_step: int | None = None) -> int:
    episodes = episodes_asked_about(out_dir, split)
    return write_per_episode(dest, ((ep, scene_graph(ep, at_step)) for ep in episodes))
