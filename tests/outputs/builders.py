"""Small episodes and question records built in code, for the output and pipeline tests.

These exercise every column of both tables (timeline fields of three dtypes and shapes, events,
regions, grounded answers with anchors, paraphrases) with values drawn from a seeded generator.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eqagen.core import (
    OPENEQA_CATEGORIES,
    AnswerGroup,
    Entities,
    Episode,
    FilterSpec,
    FrameTransform,
    Paraphrase,
    Program,
    QARecord,
    QuerySpec,
    Region,
    ResultItem,
    Steps,
    Timeline,
    derive_rng,
    make_episode_id,
    number_events,
)
from eqagen.generators.base import EpisodeSpec

COLORS = ("red", "green", "blue", "white")
TYPES = ("Cup", "Apple", "Fridge", "CounterTop")


def make_episode(
    seed: int, scene_id: str = "scene-0", n_steps: int = 12, n_entities: int = 5, index: int = 0
) -> Episode:
    rng = derive_rng(seed, "fixture-episode", scene_id, index)
    T, N = n_steps, n_entities
    pose = np.zeros((T, 5), np.float32)
    pose[:, 0] = np.cumsum(rng.integers(0, 2, T)) * 0.25
    pose[:, 3] = rng.choice([0.0, 90.0, 180.0, 270.0], T)
    success = rng.random(T) < 0.8
    success[0] = True
    steps = Steps(
        action=["Initialize"] + [str(a) for a in rng.choice(["MoveAhead", "OpenObject", "PickupObject"], T - 1)],
        target=rng.integers(-1, N, T).astype(np.int32),
        receptacle=np.full(T, -1, np.int32),
        args=[{"k": int(i)} if i % 3 == 0 else {} for i in range(T)],
        success=success,
        error=["" if s else "object not visible" for s in success],
        pose=pose,
        held=rng.integers(-1, N, T).astype(np.int32),
    )
    position = np.repeat(rng.normal(size=(1, N, 3)).astype(np.float32), T, axis=0)
    position[T // 2 :, 0] += 0.5  # objects move halfway through
    dense = {
        "position": position,
        "visible": rng.random((T, N)) < 0.5,
        "parent": np.where(rng.random((T, N)) < 0.7, -1, 0).astype(np.int32),
        "open": np.cumsum(rng.random((T, N)) < 0.1, axis=0) % 2 == 1,
    }
    types = [str(t) for t in rng.choice(TYPES, N)]
    entities = Entities(
        instance_id=[f"{t}#{i}" for i, t in enumerate(types)],
        type=types,
        native_id=[f"{t}|{i}" for i, t in enumerate(types)],
        attributes=[{"color": str(rng.choice(COLORS))} for _ in range(N)],
        capabilities=[("openable", "receptacle") if t in ("Fridge",) else ("pickupable",) for t in types],
    )
    events = number_events([(int(t), "open", int(rng.integers(N)), -1) for t in rng.integers(0, T, 3)], types)
    return Episode(
        episode_id=make_episode_id("fixture", scene_id, seed, index),
        family="household",
        backend="fixture",
        scene_id=scene_id,
        seed=seed,
        task={"type": "alfred", "task_type": "pick_and_place_simple", "object_target": types[0]},
        steps=steps,
        entities=entities,
        timeline=Timeline.from_dense(dense),
        events=events,
        regions=[Region("room-0", "kitchen", (0.0, 0.0, 0.0, 3.0, 2.5, 4.0), "kitchen")],
        frame=FrameTransform("ai2thor", (1.0, 0.9, -2.0), 90.0),
        meta={"success": bool(rng.random() < 0.5), "stop_reason": "success"},
    )


def make_records(episode: Episode, rng: np.random.Generator, n: int = 4) -> list[QARecord]:
    """Records answered from the episode's own arrays: 'how many <color> objects were visible'."""
    visible_any = episode.timeline["visible"].any(axis=0)
    pos = episode.timeline["position"][-1]
    out = []
    for i in range(n):
        color = COLORS[i % len(COLORS)]
        hit = [
            j for j in range(episode.n_entities) if visible_any[j] and episode.entities.attributes[j]["color"] == color
        ]
        grounded = bool(i % 2)
        anchor = tuple(float(v) for v in pos[0]) if grounded else None
        items = tuple(
            ResultItem(episode.entities.instance_id[j], episode.entities.type[j], tuple(float(v) for v in pos[j]))
            for j in hit
        )
        program = Program((FilterSpec("property", "color", color, {"event": i}),), QuerySpec("count", "", {}))
        para = Paraphrase(f"count the {color} things", str(len(hit)), "template", True) if rng.random() < 0.5 else None
        out.append(
            QARecord(
                episode_id=episode.episode_id,
                scene_id=episode.scene_id,
                family=episode.family,
                backend=episode.backend,
                program=program,
                structured_question=f"count(color={color})",
                structured_answer=[AnswerGroup(f"color = {color}", anchor, items, str(len(hit)))],
                answer_type="number",
                answer_key=str(len(hit)),
                question=f"How many {color} objects did you see?" + (" (grounded)" if grounded else ""),
                answer=str(len(hit)),
                grounded=grounded,
                category=OPENEQA_CATEGORIES[i % len(OPENEQA_CATEGORIES)],
                express_category="counting",
                balance_key=f"How many {color} objects did you see?",
                query_type="count",
                choices=["0", "1", "2"],
                paraphrase=para,
                generator_version="test",
            )
        )
    return out


class FixtureBackend:
    """A world backend for tests of the pipeline alone: random but seeded episodes (no simulation)."""

    family = "household"
    backend = "fixture"

    def plan(self, n_episodes: int, seed: int, params: dict[str, Any]) -> list[EpisodeSpec]:
        n_scenes = int(params.get("n_scenes", 5))
        return [
            EpisodeSpec("household", "fixture", f"scene-{i % n_scenes}", seed, i, dict(params))
            for i in range(n_episodes)
        ]

    def run(self, spec: EpisodeSpec) -> Episode:
        return make_episode(spec.seed, spec.scene_id, int(spec.params.get("n_steps", 12)), index=spec.index)


def fixture_sampler(episode: Episode, config: Any, rng: np.random.Generator) -> tuple[list[QARecord], dict[str, int]]:
    """Stand-in for the question engine with the same signature: records plus rejection counts."""
    records = make_records(episode, rng, n=int(rng.integers(2, 6)))
    return records, {"ineffective filter": int(rng.integers(0, 3))}
