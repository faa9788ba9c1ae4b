"""The ``household/embedded`` backend: procedural homes, ALFRED tasks and the FILM-like agent.

``plan`` spreads episodes over ``n_scenes`` procedural rooms (room kinds taken in turn) and derives a
seed per episode; ``run`` rebuilds the room from its id, samples a feasible ALFRED task (or takes the
one given in ``params["task"]``), lets the agent act and returns the :class:`~eqagen.core.Episode`.
Everything follows from the spec, so ``run`` gives the same episode in any process.
"""

from __future__ import annotations

from dataclasses import fields
from functools import lru_cache
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from eqagen.core import ConfigError, Episode, derive_rng, derive_seed, make_episode_id
from eqagen.generators.base import EpisodeSpec, register_backend
from eqagen.generators.household.agent import AgentConfig, FilmAgent
from eqagen.generators.household.homes import make_home
from eqagen.generators.household.scene import ROOM_KINDS, HouseholdScene
from eqagen.generators.household.tasks import AlfredTask, sample_task, validate_task
from eqagen.generators.household.world import HouseholdWorld


class HouseholdParams(BaseModel):
    """Parameters of the embedded household backend (the ``params`` of a plan)."""

    model_config = ConfigDict(extra="forbid")

    n_scenes: int = Field(100, ge=1, description="how many procedural rooms the episodes are spread over")
    room_kinds: list[str] = Field(default_factory=lambda: list(ROOM_KINDS), min_length=1)
    max_steps: int = Field(250, ge=1, le=10_000, description="step limit per episode (FILM/ALFRED: 250)")
    task: dict[str, Any] | None = Field(None, description="a fixed ALFRED task for every episode")
    agent: dict[str, float] = Field(default_factory=dict, description="AgentConfig overrides")

    @field_validator("room_kinds")
    @classmethod
    def _known_kinds(cls, v: list[str]) -> list[str]:
        bad = [k for k in v if k not in ROOM_KINDS]
        if bad:
            raise ValueError(f"unknown room kinds {bad}; known: {list(ROOM_KINDS)}")
        return v

    @field_validator("agent")
    @classmethod
    def _known_agent_keys(cls, v: dict[str, float]) -> dict[str, float]:
        known = {f.name for f in fields(AgentConfig)}
        bad = sorted(set(v) - known)
        if bad:
            raise ValueError(f"unknown agent settings {bad}; known: {sorted(known)}")
        return v


def parse_params(params: dict[str, Any]) -> HouseholdParams:
    try:
        return HouseholdParams(**params)
    except ValidationError as exc:
        err = exc.errors()[0]
        key = ".".join(str(p) for p in err["loc"]) or "params"
        raise ConfigError(f"household.{key}", err["msg"], source="household/embedded params") from None


@lru_cache(maxsize=1024)
def home_for(scene_id: str) -> HouseholdScene:
    """The procedural room named by a scene id ``<room_kind>-<seed>-<index>`` (cached per process). The cache
    holds more rooms than a preset has scenes (about 10 kB each): episodes take the scenes in turn, so a
    cache smaller than their number drops each room before its next episode (tag-eqa's 300 scenes in 256
    entries rebuilt a room for every one of 1,500 episodes in one process)."""
    kind, seed, index = scene_id.rsplit("-", 2)
    return make_home(kind, int(seed), int(index))


@register_backend("household", "embedded")
class EmbeddedHouseholdBackend:
    family = "household"
    backend = "embedded"

    def plan(self, n_episodes: int, seed: int, params: dict[str, Any]) -> list[EpisodeSpec]:
        p = parse_params(params)
        if p.task is not None:
            validate_task(AlfredTask.from_dict(p.task))
        kinds = p.room_kinds
        scenes = [f"{kinds[k % len(kinds)]}-{seed}-{k}" for k in range(p.n_scenes)]
        run_params = p.model_dump()
        return [
            EpisodeSpec(
                "household", "embedded", scenes[i % len(scenes)], derive_seed(seed, "household", i), i, run_params
            )
            for i in range(n_episodes)
        ]

    def run(self, spec: EpisodeSpec) -> Episode:
        p = parse_params(spec.params)
        scene = home_for(spec.scene_id)
        return run_episode(scene, spec.seed, spec.index, p, backend=self.backend)


def simulate(scene: HouseholdScene, seed: int, index: int, p: HouseholdParams) -> tuple[HouseholdWorld, FilmAgent]:
    """Run the agent in a fresh world and return both (the world keeps the step-by-step record)."""
    rng = derive_rng(seed, "household-episode", scene.scene_id, index)
    task = validate_task(AlfredTask.from_dict(p.task), scene) if p.task else sample_task(scene, rng)
    world = HouseholdWorld(scene, max_steps=p.max_steps)
    agent = FilmAgent(world, task, rng, AgentConfig(**p.agent))
    agent.run()
    return world, agent


def episode_of(world: HouseholdWorld, agent: FilmAgent, seed: int, index: int, backend: str = "embedded") -> Episode:
    meta = {
        "success": agent.stop_reason == "success",
        "stop_reason": agent.stop_reason,
        "n_failures": agent.failures,
        "agent": "film-like",
    }
    episode_id = make_episode_id(backend, world.scene.scene_id, seed, index)
    return world.to_episode(episode_id, backend, seed, {"type": "alfred", **agent.task.to_dict()}, meta)


def run_episode(scene: HouseholdScene, seed: int, index: int, p: HouseholdParams, backend: str = "embedded") -> Episode:
    """One agent episode in one scene (also used by benchmarks and tests)."""
    world, agent = simulate(scene, seed, index, p)
    return episode_of(world, agent, seed, index, backend)
