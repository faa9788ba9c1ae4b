"""The pipeline's stages as plain functions: callable and testable without Prefect.

plan scenes -> sample episodes (per batch) -> sample and check programs (per batch) -> balance ->
split -> paraphrase -> write shards -> audit. (Question and answer text are rendered with each
program by the question engine, so there is no separate render stage.)

The two batched stages work on tens of episodes at a time; their results are checkpointed per batch
(:mod:`eqagen.flows.checkpoints`). The dataset-level stages take and return the questions table
(``pa.Table``) plus a dict of statistics; each is a function of its own package, wired here under the one
contract of :class:`eqagen.core.stages.DatasetStage` (the columns it reads and writes, its typed config
section, its drops counted by reason) in the order the run applies them (:data:`DATASET_STAGES`).
"""

from __future__ import annotations

import contextlib
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from eqagen.config import GenerationConfig, PipelineConfig
from eqagen.core import Episode, QARecord, derive_rng
from eqagen.core.stages import DatasetStage
from eqagen.curation.balance import BALANCE_COLUMNS, balance
from eqagen.curation.compose import ComposeConfig, MixTargets, compose
from eqagen.curation.compose import mix_targets as compose_mix
from eqagen.curation.config import BalanceConfig, SplitConfig
from eqagen.curation.partition import held_out_share, partitions_scenes
from eqagen.curation.splits import split
from eqagen.generators import EpisodeSpec, get_backend
from eqagen.generators.base import WorldBackend
from eqagen.paraphrase.config import ParaphraseConfig
from eqagen.paraphrase.stage import PARAPHRASE_COLUMNS, paraphrase_table
from eqagen.predicates.config import QuestionConfig

Sampler = Callable[[Episode, QuestionConfig, np.random.Generator], "tuple[list[QARecord], Counter[str]]"]

# Dataset-level stages, each a function of its own package under one contract (eqagen.core.stages): the
# columns it reads and writes, and its config section's type.
BALANCE = DatasetStage("balance", balance, BALANCE_COLUMNS, ("choices",), BalanceConfig)
COMPOSE = DatasetStage("compose", compose, ("balance_key", "query_type", "filter_families"), (), ComposeConfig)
SPLIT = DatasetStage("split", split, ("scene_id", "balance_key"), ("split",), SplitConfig)
PARAPHRASE = DatasetStage("paraphrase", paraphrase_table, PARAPHRASE_COLUMNS, ("paraphrase",), ParaphraseConfig)
# The stages that choose rows and assign splits decide over every candidate at once; they read only key
# columns (eqagen.flows.stream). Paraphrase works row by row and is streamed over chunks of kept rows.
# split before paraphrase: the few-shot examples of the LLM prompt are drawn from the train split only.
SELECTION_STAGES = (BALANCE, COMPOSE, SPLIT)
STREAMED_STAGES = (PARAPHRASE,)
DATASET_STAGES = {stage.name: stage for stage in (*SELECTION_STAGES, *STREAMED_STAGES)}


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


def backend_params(generation: GenerationConfig) -> dict[str, Any]:
    return {**generation.params, "max_steps": generation.max_steps}


def plan_batches(generation: GenerationConfig, seed: int) -> list[Batch]:
    """Scenes and seeds for every episode (the backend's plan), cut into batches of ``batch_size``."""
    backend = get_backend(generation.family, generation.backend)
    specs = backend.plan(generation.n_episodes, seed, backend_params(generation))
    size = generation.batch_size
    return [Batch(i // size, tuple(specs[i : i + size])) for i in range(0, len(specs), size)]


def sample_episodes(batch: Batch) -> list[Episode]:
    """Run every spec of a batch through its backend (deterministic per spec)."""
    backends: dict[tuple[str, str], WorldBackend] = {}
    out = []
    for spec in batch.specs:
        key = (spec.family, spec.backend)
        if key not in backends:
            backends[key] = get_backend(*key)
        out.append(backends[key].run(spec))
    return out


def warm_imports(config: PipelineConfig) -> None:
    """Import the backend and the question engine now (e.g. while a server starts), not in the first task."""
    get_backend(config.generation.family, config.generation.backend)
    with contextlib.suppress(ImportError):
        import eqagen.templates.records  # noqa: F401  (the question engine and its text)


def sample_programs(
    episodes: list[Episode], qconfig: QuestionConfig, seed: int, sampler: Sampler | None = None
) -> QuestionBatch:
    """Sample and check programs on each episode with its own generator ``(seed, "questions", episode_id)``,
    and note what each episode can be asked about by name (the ask stage's vocabulary). The question engine
    and the vocabulary share one context per episode; a caller's own sampler takes the episode."""
    from eqagen.predicates.asking import episode_names
    from eqagen.predicates.context import context_for
    from eqagen.predicates.index import build_index
    from eqagen.templates.records import questions_in_context

    out = QuestionBatch([])
    for ep in episodes:
        ctx, rng = context_for(ep), derive_rng(seed, "questions", ep.episode_id)
        if sampler:
            records, rejected = sampler(ep, qconfig, rng)
            names = episode_names(ctx)
        else:
            index = build_index(ctx)
            records, rejected = questions_in_context(ctx, qconfig, rng, index)
            names = episode_names(ctx, index.specs)  # the specs that keep a cell: every one ``values`` lists
        out.records.extend(records)
        out.rejections.update(rejected)
        out.candidates += len(records) + sum(rejected.values())
        out.names.append(names)
    return out


# --- dataset-level stages -------------------------------------------------------------------------


def mix_targets(questions: QuestionConfig, family: str) -> MixTargets:
    """The question mix the composed dataset must keep (:func:`eqagen.curation.compose.mix_targets`) over what
    the world family supports."""
    from eqagen.predicates.registry import world_support

    support = world_support(family)
    return compose_mix(
        questions.query_mix,
        questions.family_mix,
        sorted(support.queries),
        sorted(support.filters),
        questions.n_filters_mix,
        questions.grounded_share,
    )


def compose_section(config: PipelineConfig) -> ComposeConfig:
    """The compose stage's section from the run's config."""
    split = config.split
    held = held_out_share(split.unseen_fraction, split.ratios) if partitions_scenes(split) else 0.0
    return ComposeConfig(mix_targets(config.questions, config.generation.family), config.balance.records, held)


def selection_sections(config: PipelineConfig) -> dict[str, Any]:
    """Each selection stage's config section from the run's config."""
    return {"balance": config.balance, "compose": compose_section(config), "split": config.split}


def with_config_hash(table: pa.Table, value: str) -> pa.Table:
    idx = table.schema.get_field_index("config_hash")
    return table.set_column(idx, table.schema.field("config_hash"), pa.array([value] * table.num_rows, pa.string()))


def conform(table: pa.Table, schema: pa.Schema) -> pa.Table:
    """A stage's output cast back to the fixed schema (columns in order, types exact)."""
    missing = [f.name for f in schema if f.name not in table.column_names]
    if missing:
        raise ValueError(f"a dataset stage dropped columns {missing}")
    return table.select(schema.names).cast(schema)
