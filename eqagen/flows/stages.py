"""The pipeline's stages as plain functions: callable and testable without Prefect.

plan scenes -> sample episodes (per batch) -> sample and check programs (per batch) -> balance ->
render -> split -> paraphrase -> write shards -> audit.

The two batched stages work on tens of episodes at a time; their results are checkpointed per batch
(:mod:`eqagen.flows.checkpoints`). The dataset-level stages take and return the questions table
(``pa.Table`` with :data:`~eqagen.outputs.schemas.QUESTIONS_SCHEMA`) plus a dict of statistics; each
is looked up in :data:`DATASET_STAGES` by ``module:function`` with the signature
``fn(table, section_config, seed) -> (table, stats)``, and falls back to the placeholder here while
its package does not provide it.
"""

from __future__ import annotations

import contextlib
import importlib
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from eqagen.core import SPLITS, Episode, QARecord, derive_rng, stable_hash
from eqagen.generators import EpisodeSpec, get_backend

Sampler = Callable[[Episode, Any, np.random.Generator], "tuple[list[QARecord], Counter[str]]"]
TableStage = Callable[[pa.Table, Any, int], "tuple[pa.Table, dict[str, Any]]"]

# Dataset-level stages provided by their own packages (same signature as the placeholders below).
DATASET_STAGES: dict[str, str] = {
    "balance": "eqagen.curation.balance:balance",
    "render": "eqagen.templates.stage:render_table",
    "paraphrase": "eqagen.paraphrase.stage:paraphrase_table",
    "split": "eqagen.curation.splits:split",
}
# split before paraphrase: the few-shot examples of the LLM prompt are drawn from the train split only.
DATASET_STAGE_ORDER = ("balance", "render", "split", "paraphrase")


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
        default_sampler()


def default_sampler() -> Sampler:
    from eqagen.predicates import sample_questions

    return sample_questions


def question_config(section: Any) -> Any:
    """The question engine's own config model from the ``questions`` section (a model or a mapping)."""
    if isinstance(section, dict):
        from eqagen.predicates import QuestionConfig

        return QuestionConfig.model_validate(section)
    return section


def sample_programs(episodes: list[Episode], qconfig: Any, seed: int, sampler: Sampler | None = None) -> QuestionBatch:
    """Sample and check programs on each episode with its own generator ``(seed, "questions", episode_id)``."""
    sampler = sampler or default_sampler()
    out = QuestionBatch([])
    for ep in episodes:
        records, rejected = sampler(ep, qconfig, derive_rng(seed, "questions", ep.episode_id))
        out.records.extend(records)
        out.rejections.update(rejected)
        out.candidates += len(records) + sum(rejected.values())
    return out


# --- dataset-level stages -------------------------------------------------------------------------


def passthrough(table: pa.Table, section: Any, seed: int) -> tuple[pa.Table, dict[str, Any]]:
    """Placeholder of a stage whose package has not provided it: the table is unchanged."""
    return table, {"implementation": "passthrough"}


def _ratios(section: Any) -> tuple[float, float, float]:
    ratios = section.get("ratios") if isinstance(section, dict) else getattr(section, "ratios", None)
    return tuple(ratios) if ratios else (0.70, 0.15, 0.15)  # type: ignore[return-value]


def placeholder_split(table: pa.Table, section: Any, seed: int) -> tuple[pa.Table, dict[str, Any]]:
    """Deterministic seeded split until the stratified splits stage lands: whole episodes, in an order
    drawn from ``(seed, episode_id)``, go to train, val, test until each reaches its share of questions."""
    names = ("train", "val", "test")
    ratios = np.asarray(_ratios(section), np.float64)
    episode_ids = table["episode_id"].to_pylist()
    counts = Counter(episode_ids)
    order = sorted(counts, key=lambda e: stable_hash(seed, "split", e))
    sizes = np.array([counts[e] for e in order], np.float64)
    start = np.cumsum(sizes) - sizes  # questions before this episode in the drawn order
    bounds = np.cumsum(ratios / ratios.sum()) * len(episode_ids)
    which = np.minimum(np.searchsorted(bounds, start + 1e-9, side="right"), 2)
    split_of = {e: names[k] for e, k in zip(order, which)}
    column = pa.array([split_of[e] for e in episode_ids], pa.string())
    table = table.set_column(table.schema.get_field_index("split"), table.schema.field("split"), column)
    return table, {
        "implementation": "placeholder",
        "per_split": {n: int(sizes[which == k].sum()) for k, n in enumerate(names)},
    }


PLACEHOLDERS: dict[str, TableStage] = {
    "balance": passthrough,
    "render": passthrough,
    "paraphrase": passthrough,
    "split": placeholder_split,
}


def resolve_stage(name: str) -> tuple[TableStage, str]:
    """The stage's implementation from its package, or the placeholder; and which one it is."""
    module, _, func = DATASET_STAGES[name].partition(":")
    try:
        return getattr(importlib.import_module(module), func), DATASET_STAGES[name]
    except (ImportError, AttributeError):
        return PLACEHOLDERS[name], f"eqagen.flows.stages:{PLACEHOLDERS[name].__name__}"


def run_dataset_stage(name: str, table: pa.Table, section: Any, seed: int) -> tuple[pa.Table, dict[str, Any], float]:
    fn, where = resolve_stage(name)
    start = time.perf_counter()
    out, stats = fn(table, section, seed)
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


def split_tables(table: pa.Table) -> dict[str, pa.Table]:
    """The questions table per split: train, val and test always (an empty split is an empty table, so
    the layout and the dataset card never miss one), then any other value, sorted."""
    others = sorted(set(table["split"].to_pylist()) - set(SPLITS))
    values = [*SPLITS, *others]
    return {v: table.filter(pc.equal(table["split"], v)) for v in values}
