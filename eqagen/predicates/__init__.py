"""Programs over episodes: filters, queries, the evaluator and the sampler (TAG-EQA's method).

Public API: :class:`QuestionConfig`, the episode context, and the registry (:func:`register_filter`,
:func:`register_query`, :func:`forbid_pair`, :func:`declare_world_family`, :func:`extend_world_family`)
through which world families add their own predicates. Importing the package registers the built-in
predicates and every world family's (``household``, ``navigation``, ``blockworld``). The package makes no
text: questions and answers are worded by ``eqagen.templates`` (``records.sample_questions``,
``answers.evaluate``).
"""

from eqagen.predicates import blockworld, builtin, household, navigation, situation  # noqa: F401  (they register)
from eqagen.predicates.config import QuestionConfig
from eqagen.predicates.context import EpisodeContext, NamedEvent, context_for
from eqagen.predicates.registry import REGISTRY, Anchored, Outcome, forbid_pair, register_filter, register_query
from eqagen.predicates.worlds import declare_world_family, extend_world_family, world_support

__all__ = [
    "REGISTRY",
    "Anchored",
    "EpisodeContext",
    "NamedEvent",
    "Outcome",
    "QuestionConfig",
    "context_for",
    "declare_world_family",
    "extend_world_family",
    "forbid_pair",
    "register_filter",
    "register_query",
    "world_support",
]
