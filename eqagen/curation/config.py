"""Typed settings of the curation stages; the pipeline composes them into its top-level config."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

DEFAULT_STRATIFY = ("family", "query_type", "predicate_families", "grounded")


class BalanceConfig(BaseModel):
    """Per-question balancing across scenes.

    ``exact`` (PQB-EQA): keep a question only where at least ``min_answers`` different answers come from
    different scenes, and choose scenes so each kept answer occurs equally often (``n`` scenes each,
    at most ``max_per_answer``). ``entropy`` (EmbodiedQA): keep a question whose answer distribution
    over scenes has normalised entropy at least ``entropy_threshold`` and that is seen in at least
    ``min_scenes`` scenes; no scene is dropped.
    """

    model_config = ConfigDict(extra="forbid")

    mode: Literal["exact", "entropy"] = "exact"
    min_answers: int = Field(2, ge=2, description="fewest different answers a kept question must have")
    min_per_answer: int = Field(1, ge=1, description="fewest scenes per kept answer")
    max_per_answer: int | None = Field(
        4,
        ge=1,
        description="most scenes per kept answer; bounds a question's group so splits stay fine-grained "
        "(null: no bound)",
    )
    max_group_records: int | None = Field(
        16,
        ge=2,
        description="most records of one kept question (k answers x n scenes); small groups let the split "
        "even out strata in small val and test sets (null: no bound)",
    )
    window_blocks: int = Field(
        8,
        ge=1,
        le=64,
        description="exact mode: a question's scenes all come from this many consecutive scene blocks "
        "(of 64), the window where it keeps the most records; clustered groups let the split hold whole "
        "blocks of scenes out of train (64: no window)",
    )
    min_window_scenes: int = Field(
        40, ge=2, description="a window is widened until it holds at least this many scenes (small datasets)"
    )
    ask_scenes: int = Field(
        16,
        ge=0,
        le=1000,
        description="each question proposed in one scene is also asked in up to this many other scenes of its "
        "partition, one episode each (0: only where proposed)",
    )
    ask_rounds: int = Field(
        2,
        ge=1,
        le=8,
        description="rounds of asking: each round after the first asks the questions of the query types and "
        "filter families the balanced pool is still short of in ask_scenes more scenes",
    )
    records: int | None = Field(
        None,
        ge=1,
        description="questions in the composed dataset, chosen among the balanced groups so the mix holds "
        "(null: as many as the partitions can supply in proportion)",
    )
    entropy_threshold: float = Field(0.5, ge=0.0, le=1.0)
    min_scenes: int = Field(4, ge=2, description="entropy mode: fewest scenes a kept question is seen in")


class SplitConfig(BaseModel):
    """Train/val/test assignment.

    ``by="question"``: the unit is a balance group (all records of one ``balance_key``), and a share
    ``unseen_fraction`` of val and test comes from scenes absent from train. ``by="scene"``: the unit
    is a scene; val and test scenes are then all unseen and balance groups may straddle splits.
    ``split_file`` (scene -> split) reproduces a published split and overrides both.
    """

    model_config = ConfigDict(extra="forbid")

    ratios: tuple[float, float, float] = (0.70, 0.15, 0.15)
    unseen_fraction: float = Field(0.5, ge=0.0, le=1.0)
    by: Literal["question", "scene"] = "question"
    split_file: Path | None = None
    stratify_by: tuple[str, ...] = DEFAULT_STRATIFY

    @field_validator("ratios")
    @classmethod
    def _ratios_sum_to_one(cls, value: tuple[float, float, float]) -> tuple[float, float, float]:
        if not all(0 <= r <= 1 for r in value) or abs(sum(value) - 1.0) > 1e-6:  # NaN fails 0 <= r
            raise ValueError(f"ratios must be three non-negative numbers summing to 1, got {value}")
        return value

    @model_validator(mode="after")
    def _stratify_not_empty(self) -> SplitConfig:
        if not self.stratify_by:
            raise ValueError("stratify_by needs at least one column")
        return self
