"""The pipeline's stages as plain functions: callable and testable without Prefect.

plan scenes -> sample episodes (per batch) -> sample and check programs (per batch) -> balance ->
split -> paraphrase -> write shards -> audit. (Question and answer text are rendered with each
program by the question engine, so there is no separate render stage.)

The two batched stages work on tens of episodes at a time; their results are checkpointed per batch
(:mod:`eqagen.flows.checkpoints`). The dataset-level stages take and return the questions table
(``pa.Table`` with :data:`~eqagen.outputs.schemas.QUESTIONS_SCHEMA`) plus a dict of statistics; each
is a function of its own package in :data:`DATASET_STAGES`, with the signature
``fn(table, section_config, seed) -> (table, stats)``.
"""

from __future__ import annotations

import contextlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from eqagen.core import Episode, QARecord, derive_rng
from eqagen.curation.balance import balance
from eqagen.curation.compose import ComposeConfig, MixTargets, compose
from eqagen.curation.compose import mix_targets as compose_mix
from eqagen.curation.partition import held_out_share, partitions_scenes
from eqagen.curation.splits import split
from eqagen.generators import EpisodeSpec, get_backend
from eqagen.paraphrase.stage import paraphrase_table

Sampler = Callable[[Episode, Any, np.random.Generator], "tuple[list[QARecord], Counter[str]]"]
TableStage = Callable[[pa.Table, Any, int], "tuple[pa.Table, dict[str, Any]]"]

# Dataset-level stages, each provided by its own package.
DATASET_STAGES: dict[str, TableStage] = {
    "balance": balance,
    "compose": compose,
    "split": split,
    "paraphrase": paraphrase_table,
}
# split before paraphrase: the few-shot examples of the LLM prompt are drawn from the train split only.
DATASET_STAGE_ORDER = ("balance", "compose", "split", "paraphrase")
# The stages that choose rows and assign splits decide over every candidate at once; they read only key
# columns (eqagen.flows.stream). Paraphrase works row by row and is streamed over chunks of kept rows.
SELECTION_STAGES = ("balance", "compose", "split")


@dataclass(frozen=True)
class Batch:
    index: int
    specs: tuple[EpisodeSpec, ...]

    @property
    def name(self) -> str:
        return f"batch-{self.index:05d}"


@dataclass
class QuestionBatch:
    records: list[QARecord]
    rejections: Counter[str] = field(default_factory=Counter)
    candidates: int = 0
    names: list[set[str]] = field(default_factory=list)  # per episode: its names (predicates.asking)


# --- plan and the batched stages --------------------------------------------------------------------


def backend_params(generation: Any) -> dict[str, Any]:
    return {**generation.params, "max_steps": generation.max_steps}


def plan_batches(generation: Any, seed: int) -> list[Batch]:
    """Scenes and seeds for every episode (the backend's plan), cut into batches of ``batch_size``."""
    backend = get_backend(generation.family, generation.backend)
    specs = backend.plan(generation.n_episodes, seed, backend_params(generation))
    size = generation.batch_size
    return [Batch(i // size, tuple(specs[i : i + size])) for i in range(0, len(specs), size)]


def sample_episodes(batch: Batch) -> list[Episode]:
    """Run every spec of a batch through its backend (deterministic per spec)."""
    backends: dict[tuple[str, str], Any] = {}
    out = []
    for spec in batch.specs:
        key = (spec.family, spec.backend)
        if key not in backends:
            backends[key] = get_backend(*key)
        out.append(backends[key].run(spec))
    return out


def warm_imports(config: Any) -> None:
    """Import the backend and the question engine now (e.g. while a server starts), not in the first task."""
    get_backend(config.generation.family, config.generation.backend)
    with contextlib.suppress(ImportError):
        import eqagen.templates.records  # noqa: F401  (the question engine and its text)


def question_config(section: Any) -> Any:
    """The question engine's own config model from the ``questions`` section (a model or a mapping)."""
    if isinstance(section, dict):
        from eqagen.predicates import QuestionConfig

        return QuestionConfig.model_validate(section)
    return section


def sample_programs(episodes: list[Episode], qconfig: Any, seed: int, sampler: Sampler | None = None) -> QuestionBatch:
    """Sample and check programs on each episode with its own generator ``(seed, "questions", episode_id)``,
    and note what each episode can be asked about by name (the ask stage's vocabulary). The question engine
    and the vocabulary share one context per episode; a caller's own sampler takes the episode."""
    from eqagen.predicates.asking import episode_names
    from eqagen.predicates.context import context_for
    from eqagen.templates.records import questions_in_context

    out = QuestionBatch([])
    for ep in episodes:
        ctx, rng = context_for(ep), derive_rng(seed, "questions", ep.episode_id)
        records, rejected = sampler(ep, qconfig, rng) if sampler else questions_in_context(ctx, qconfig, rng)
        out.records.extend(records)
        out.rejections.update(rejected)
        out.candidates += len(records) + sum(rejected.values())
        out.names.append(episode_names(ctx))
    return out


# --- dataset-level stages -------------------------------------------------------------------------


def mix_targets(questions: Any, family: str) -> MixTargets:
    """The question mix the composed dataset must keep (:func:`eqagen.curation.compose.mix_targets`) over what
    the world family supports."""
    from eqagen.predicates.registry import world_support

    qconfig, support = question_config(questions), world_support(family)
    return compose_mix(qconfig.query_mix, qconfig.family_mix, sorted(support.queries), sorted(support.filters))


def compose_section(config: Any) -> ComposeConfig:
    """The compose stage's section from the run's config."""
    split = config.split
    held = held_out_share(split.unseen_fraction, split.ratios) if partitions_scenes(split) else 0.0
    return ComposeConfig(mix_targets(config.questions, config.generation.family), config.balance.records, held)


def run_dataset_stage(name: str, table: pa.Table, section: Any, seed: int) -> tuple[pa.Table, dict[str, Any], float]:
    fn = DATASET_STAGES[name]
    start = time.perf_counter()
    out, stats = fn(table, section, seed)
    where = f"{fn.__module__}:{fn.__name__}"
    stats = {**stats, "implementation": where, "rows_in": table.num_rows, "rows_out": out.num_rows}
    return out, stats, time.perf_counter() - start


def with_config_hash(table: pa.Table, value: str) -> pa.Table:
    idx = table.schema.get_field_index("config_hash")
    return table.set_column(idx, table.schema.field("config_hash"), pa.array([value] * table.num_rows, pa.string()))


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """A stage's output cast back to the fixed schema (columns in order, types exact)."""
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing:
        raise ValueError(f"a dataset stage dropped columns {missing}")
    return table.select(schema.names).cast(schema)
