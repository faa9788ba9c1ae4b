"""A world family adds its own filter family and query from outside eqagen.predicates."""

from __future__ import annotations

import numpy as np
import pytest

from eqagen.core import FilterSpec, Program, QuerySpec, UnknownNameError, derive_rng
from eqagen.predicates import REGISTRY, Outcome, QuestionConfig, forbid_pair, register_filter, register_query
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.registry import WorldSupport, world_support
from eqagen.predicates.sampler import sample_programs
from eqagen.templates.answers import evaluate_context
from eqagen.templates.render import program_wording, question_text, structured_question
from tests.predicates.conftest import make_episode


def zone_of(ctx) -> np.ndarray:
    """[T, N]: 'east' where x > 0, else 'west' (a stand-in for a navigation region)."""
    return np.where(ctx.position[..., 0] > 0, "east", "west")


def zone_values(ctx, key):
    seen = zone_of(ctx)[ctx.data]
    return [FilterSpec("testzone", key, z) for z in sorted(set(seen.tolist()))]


@register_filter(
    "testzone", ("in_zone",), zone_values, slot="post", phrases={"in_zone": "in the {{ value }} zone{{ anchor }}"}
)
def in_zone(ctx, spec):
    return zone_of(ctx) == spec.value


@register_query(
    "testexists",
    args=lambda ctx: [QuerySpec("testexists")],
    applies=lambda ctx, q: np.ones(ctx.N, dtype=bool),
    answer_type="yes/no",
    categories=("object recognition", "existence"),
    template="Did you see {{ np.a }}{{ when }}?",
)
def exists(ctx, query, mask):
    ents = np.flatnonzero(mask.any(axis=0))
    return Outcome(ents, "yes") if ents.size else None


def test_registered_family_and_query_are_sampled_and_rendered():
    support = WorldSupport(
        "household",
        filters={"testzone": None, "property": ("color",)},
        queries={"testexists": None, "count": ("objects",)},
    )
    ep = make_episode(4, 60)
    ctx = EpisodeContext(ep, support)
    accepted, _ = sample_programs(ctx, QuestionConfig(questions_per_episode=30), derive_rng(0, "t"))
    programs = [a.program for a in accepted]
    assert any(f.family == "testzone" for p in programs for f in p.filters)
    assert {p.query.name for p in programs} <= {"testexists", "count"}
    zone = next(p for p in programs if any(f.family == "testzone" for f in p.filters))
    assert " zone" in question_text(zone, program_wording(zone))
    assert "(testzone:in_zone = " in structured_question(zone)
    east = Program((FilterSpec("testzone", "in_zone", "east"),), QuerySpec("count", "objects"))
    expected = int((ctx.data & (ctx.position[..., 0] > 0)).any(axis=0).sum())
    assert evaluate_context(ctx, east)[0].value == str(expected)


def test_forbidden_pair_rules():
    forbid_pair("testzone", "*", "testexists", "*")
    assert REGISTRY.is_forbidden(FilterSpec("testzone", "in_zone", "east"), QuerySpec("testexists"))
    assert REGISTRY.is_forbidden(FilterSpec("property", "color", "red"), QuerySpec("getProperty", "color"))
    assert not REGISTRY.is_forbidden(FilterSpec("property", "color", "red"), QuerySpec("getProperty", "material"))
    assert REGISTRY.is_forbidden(FilterSpec("location", "above", "Table"), QuerySpec("getLocation"))


def test_unknown_names_say_what_is_known():
    with pytest.raises(UnknownNameError, match="property:color"):
        REGISTRY.filter("property", "colour")
    with pytest.raises(UnknownNameError, match="listObjects"):
        REGISTRY.query("listObject")
    with pytest.raises(UnknownNameError):
        world_support("underwater")


def test_household_support_is_declared_by_the_package():
    support = world_support("household")
    assert set(support.filters) == {"property", "location", "state", "position", "moment", "situation"}
    assert set(support.queries) == {"listObjects", "count", "getState", "getProperty", "getLocation"}
