"""``QuestionConfig``: the ``questions`` section of a pipeline config (how programs are sampled)."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from eqagen.core.limits import MAX_ATTEMPTS, MAX_QUESTIONS_PER_EPISODE

QUERY_MIX = {"listObjects": 0.2, "count": 0.2, "getState": 0.2, "getProperty": 0.2, "getLocation": 0.2}
# Property and state values are shared by most homes; which objects stand left of which, and which events
# happened, are particular to an episode: weighting the shared families higher (and fewer filters) makes
# the same question text recur across scenes, as per-question balancing needs.
FAMILY_MIX = {"property": 0.3, "location": 0.2, "state": 0.25, "position": 0.1, "moment": 0.15, "situation": 0.1}
N_FILTERS_MIX = {1: 0.4, 2: 0.3, 3: 0.2, 4: 0.1}


class ProposalFactors(BaseModel):
    """Per query type, filter family and number of filters, a factor on its mix weight when proposing (1: as the
    mix)."""

    model_config = ConfigDict(extra="forbid")

    query: dict[str, float] = Field(default_factory=dict)
    family: dict[str, float] = Field(default_factory=dict)
    n_filters: dict[int, float] = Field(default_factory=dict)

    @field_validator("query", "family", "n_filters")
    @classmethod
    def _positive(cls, factors: dict) -> dict:
        if any(f <= 0 for f in factors.values()):
            raise ValueError("a proposal factor must be positive (1: propose as the mix says)")
        return factors


def scaled_mix(mix: dict, factors: dict) -> dict:
    """``mix`` with each factor applied (a name the mix does not name weighs as the average named one)."""
    out = dict(mix)
    named = [w for w in mix.values() if w > 0]
    for name, factor in factors.items():
        out[name] = out.get(name, sum(named) / len(named)) * factor
    return out


class QuestionConfig(BaseModel):
    """How questions are sampled per episode. Mixes are target shares (normalised; a name the episode's
    world family does not support is skipped, one it supports but the mix does not name weighs as much as
    the average named one); the sampler steers towards them as it goes."""

    model_config = ConfigDict(extra="forbid")

    # Upper bounds: these multiply into the work of every episode (records x attempts).
    questions_per_episode: int = Field(
        48, ge=1, le=MAX_QUESTIONS_PER_EPISODE,
        description="question records (candidates for balancing) per episode, ungrounded + grounded",
    )  # fmt: skip
    attempts_per_question: int = Field(
        20, ge=1, le=MAX_ATTEMPTS, description="candidate programs tried per wanted question"
    )
    max_stalled_attempts: int = Field(
        80, ge=1, le=MAX_ATTEMPTS,
        description="give up on an episode after this many attempts in a row without an acceptance",
    )  # fmt: skip
    query_mix: dict[str, float] = Field(default_factory=lambda: dict(QUERY_MIX))
    proposal_factors: ProposalFactors = Field(
        default_factory=lambda: ProposalFactors(),
        description="factors on the query_mix / family_mix / n_filters_mix weights when the sampler proposes (the "
        "dataset's targets stay the mixes): for kinds whose questions balancing keeps less often than others'",
    )
    family_mix: dict[str, float] = Field(default_factory=lambda: dict(FAMILY_MIX))
    n_filters_mix: dict[int, float] = Field(default_factory=lambda: dict(N_FILTERS_MIX))
    grounded_share: float = Field(0.35, ge=0.0, le=0.5, description="target share of grounded records")
    grounded_tolerance: float = Field(0.1, ge=0.0, le=1.0, description="how far the share may stray first")
    max_filters_per_family: int = Field(2, ge=1, le=4, description="diversity: cap of filters of one family")
    event_count_share: float = Field(0.4, ge=0.0, le=1.0, description="of count queries, share counting events")
    any_subject_share: float = Field(0.2, ge=0.0, le=1.0, description="share of questions about 'objects'")
    shared_vocabulary: float = Field(
        0.8,
        ge=0.0,
        le=1.0,
        description="how strongly seeds and filter values favour a fixed order shared by all scenes (so that "
        "question texts recur across scenes, as per-question balancing needs); 0: uniform",
    )
    common_share: float = Field(
        0.2,
        ge=0.0,
        le=1.0,
        description="filter values in at least this share of the world family's episodes count as common; "
        "with probability shared_vocabulary a filter is drawn from the common ones where the episode has any",
    )
    max_list_items: int = Field(6, ge=1, description="listObjects answers with more entities are rejected")
    max_query_targets: int = Field(3, ge=1, description="getState/getProperty/getLocation: entities per group")
    forbidden_pairs: list[tuple[str, str, str, str]] = Field(
        default_factory=list, description="extra (family, key, query, arg) pairs; '*' any, '=' arg equals key"
    )

    @field_validator("query_mix", "family_mix", "n_filters_mix")
    @classmethod
    def _positive_mix(cls, mix: dict) -> dict:
        if not mix or any(w < 0 for w in mix.values()) or sum(mix.values()) <= 0:
            raise ValueError("a mix needs at least one positive weight and no negative ones")
        return mix

    def proposal_mix(self) -> dict[str, float]:
        """The query mix the sampler steers towards: ``query_mix`` times ``proposal_factors.query``."""
        return scaled_mix(self.query_mix, self.proposal_factors.query)

    def proposal_family_mix(self) -> dict[str, float]:
        """The filter-family mix the sampler draws by: ``family_mix`` times ``proposal_factors.family``."""
        return scaled_mix(self.family_mix, self.proposal_factors.family)

    def proposal_n_filters_mix(self) -> dict[int, float]:
        """The numbers of filters the sampler draws by: ``n_filters_mix`` times ``proposal_factors.n_filters``."""
        return scaled_mix(self.n_filters_mix, self.proposal_factors.n_filters)

    @model_validator(mode="after")
    def _filter_counts(self) -> QuestionConfig:
        bad = [n for n in self.n_filters_mix if not 1 <= int(n) <= 4]
        if bad:
            raise ValueError(f"n_filters_mix keys must be 1 to 4, got {bad}")
        return self
