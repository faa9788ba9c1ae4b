"""Programs over episodes: filters, queries, the evaluator and the sampler (TAG-EQA's method).

Public API: :func:`sample_questions`, :func:`evaluate`, :class:`QuestionConfig`, and the registry
(:func:`register_filter`, :func:`register_query`, :func:`forbid_pair`, :func:`declare_world_family`,
:func:`extend_world_family`) through which world families add their own predicates.
"""

import eqagen.predicates.builtin  # noqa: F401  (registers the built-in filters, queries and forbidden pairs)
from eqagen.predicates.config import QuestionConfig
from eqagen.predicates.context import EpisodeContext, NamedEvent, context_for
from eqagen.predicates.registry import (
    REGISTRY,
    Anchored,
    Outcome,
    declare_world_family,
    extend_world_family,
    forbid_pair,
    register_filter,
    register_query,
    world_support,
)


def sample_questions(episode, config, rng):  # type: ignore[no-untyped-def]
    """Question records of one episode and the rejection counts (see
    :func:`eqagen.templates.records.sample_questions`; imported lazily, the text lives in templates)."""
    from eqagen.templates.records import sample_questions as _sample

    return _sample(episode, config, rng)


def evaluate(episode, program):  # type: ignore[no-untyped-def]
    """The structured answer of ``program`` on ``episode`` (see :func:`eqagen.templates.answers.evaluate`;
    imported lazily, the text lives in templates)."""
    from eqagen.templates.answers import evaluate as _evaluate

    return _evaluate(episode, program)


__all__ = [
    "REGISTRY",
    "Anchored",
    "EpisodeContext",
    "NamedEvent",
    "Outcome",
    "QuestionConfig",
    "context_for",
    "declare_world_family",
    "evaluate",
    "extend_world_family",
    "forbid_pair",
    "register_filter",
    "register_query",
    "world_support",
]
