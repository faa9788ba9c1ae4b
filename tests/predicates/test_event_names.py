"""Events are named by the ordinal the generators store (``core.number_events``: per kind and entity type),
and the names are unique within an episode, in all three world families."""

from __future__ import annotations

from collections import Counter

from eqagen.predicates.context import EpisodeContext
from tests.predicates.helpers import family_episodes, household_episodes


def test_names_count_as_the_stored_ordinals_and_are_unique():
    families, across_entities = Counter(), 0
    for ep in (*household_episodes(40), *family_episodes()):
        stored = {(e.t, e.kind, e.entity, e.target): e.ordinal for e in ep.events}
        named = EpisodeContext(ep).events
        assert all(stored[(n.t, n.kind, n.entity, n.target)] == n.ordinal for n in named), ep.episode_id
        names = [n.name for n in named]
        assert len(set(names)) == len(names), (ep.episode_id, Counter(names).most_common(2))
        first_entity = {}
        for n in named:  # an ordinal counting events on another entity of the same type
            first_entity.setdefault((n.kind, n.type), n.entity)
            across_entities += n.ordinal > 1 and first_entity[(n.kind, n.type)] != n.entity
        families[ep.family] += len(named)
    assert across_entities > 0 and set(families) == {"household", "navigation", "blockworld"}, families
