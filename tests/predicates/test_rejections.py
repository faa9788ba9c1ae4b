"""Every rejection path of the sampler gives its own named reason: a hand-built kitchen where one rule must fire
(the answer that makes it fire is asserted first, from the episode's own arrays), and the exact reason is
asserted, with the same question accepted once that one condition is lifted (so no other rule fires)."""

from __future__ import annotations

import dataclasses
from collections import Counter
from functools import partial

import numpy as np
import pytest

from eqagen.core import Draws, FilterSpec, Program, QuerySpec, derive_rng
from eqagen.generators.household.objects import catalog
from eqagen.predicates import QuestionConfig, context_for
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.evaluator import evaluate_raw
from eqagen.predicates.index import SeedCells, build_index
from eqagen.predicates.registry import ForbiddenPair, selection
from eqagen.predicates.sampler import (
    Accepted,
    Answered,
    MixState,
    SamplingState,
    check,
    judge,
    mix_problem,
    propose,
    sample_programs,
)
from eqagen.predicates.validity import violations
from tests.predicates.conftest import tiny_episode

# The kitchen: entity, type, color, material, what holds it (-1: nothing). Cabinet#2 is opened at step 2.
KITCHEN = [
    (0, "CounterTop", "white", "stone", -1),
    (1, "CounterTop", "gray", "stone", -1),
    (2, "Cabinet", "brown", "wood", -1),
    (3, "Cabinet", "white", "wood", -1),
    (4, "Mug", "white", "ceramic", 0),
    (5, "Mug", "blue", "ceramic", 1),
    (6, "Cup", "white", "glass", 0),
    (7, "Cup", "green", "glass", 2),
]
CAPABILITIES = {"CounterTop": ("receptacle",), "Cabinet": ("receptacle", "openable", "enclosing")}
T, OPENED_AT = 4, 2


def kitchen_episode():
    types = [kind for _, kind, *_ in KITCHEN]
    n = len(KITCHEN)
    position = np.zeros((T, n, 3))
    position[:, :, 0] = np.arange(n)
    position[:, :, 2] = 2.0  # all in a row ahead of the agent, seen at every step
    parent = np.array([[holder for *_, holder in KITCHEN]] * T)
    is_open = np.zeros((T, n), dtype=bool)
    is_open[OPENED_AT:, 3] = True
    attributes = [
        {"color": color, "material": material, "utility": catalog().get(kind).utility}
        for _, kind, color, material, _ in KITCHEN
    ]
    return tiny_episode(
        types,
        position,
        np.ones((T, n), dtype=bool),
        parent=parent,
        flags={"open": is_open},
        events=[(OPENED_AT, "open", 3, -1)],
        attributes=attributes,
        capabilities=[CAPABILITIES.get(kind, ("pickupable",)) for kind in types],
    )


@pytest.fixture(scope="module")
def kitchen() -> EpisodeContext:
    return context_for(kitchen_episode())


def prop(key: str, value: str) -> FilterSpec:
    return FilterSpec("property", key, value)


ON_COUNTERTOP = FilterSpec("location", "on", "CounterTop")  # two countertops: an ambiguous filter
WHITE = prop("color", "white")
LIST = QuerySpec("listObjects")


def answers(ctx: EpisodeContext, program: Program) -> list[tuple[int, list[str], str]]:
    """The program's groups as (anchor, instance ids, value): what the preconditions below are read from."""
    ids = ctx.episode.entities.instance_id
    return [(g.anchor, [ids[e] for e in g.entities.tolist()], g.value) for g in evaluate_raw(ctx, program)]


def verdict(ctx: EpisodeContext, program: Program, seen: set | None = None, extra=(), **config) -> str:
    """``check``'s verdict on the kitchen's own index: the reason, or "accepted"."""
    out = check(build_index(ctx), program, QuestionConfig(**config), [ForbiddenPair(*p) for p in extra], seen or set())
    return "accepted" if isinstance(out, Answered) else out


# -- the checks before evaluation -------------------------------------------------------------------------
def test_a_program_already_accepted_is_a_duplicate(kitchen):
    program = Program((WHITE,), LIST)
    assert verdict(kitchen, program) == "accepted"
    assert verdict(kitchen, program, seen={program.signature()}) == "duplicate"
    assert verdict(kitchen, program, seen={Program((prop("color", "gray"),), LIST).signature()}) == "accepted"


def test_a_registered_or_configured_forbidden_pair_is_forbidden_pair(kitchen):
    where = Program((ON_COUNTERTOP,), QuerySpec("getLocation"))  # "where is what is on the countertop?"
    assert verdict(kitchen, where) == "forbidden_pair"
    program = Program((WHITE,), LIST)
    assert verdict(kitchen, program, extra=[("property", "color", "listObjects", "*")]) == "forbidden_pair"
    assert verdict(kitchen, program, extra=[("property", "material", "listObjects", "*")]) == "accepted"


def test_more_filters_of_one_family_than_the_cap_is_family_cap(kitchen):
    program = Program((WHITE, prop("material", "ceramic")), LIST)  # the white mug: both filters narrow it
    assert answers(kitchen, program) == [(-1, ["Mug#1"], "Mug")]
    assert verdict(kitchen, program, max_filters_per_family=1) == "family_cap"
    assert verdict(kitchen, program, max_filters_per_family=2) == "accepted"


# -- the answer's shape --------------------------------------------------------------------------------------
def test_two_filters_naming_objects_with_several_instances_is_several_ambiguous_filters(kitchen):
    both = Program((ON_COUNTERTOP, FilterSpec("location", "inside", "Cabinet")), LIST)
    assert len(kitchen.instances("CounterTop")) == len(kitchen.instances("Cabinet")) == 2
    assert verdict(kitchen, both) == "several_ambiguous_filters"
    assert verdict(kitchen, Program((ON_COUNTERTOP, prop("material", "ceramic")), LIST)) == "accepted"


def test_filters_no_object_satisfies_together_is_empty_answer(kitchen):
    program = Program((prop("color", "blue"), prop("material", "glass")), LIST)  # the blue thing is a mug
    assert answers(kitchen, program) == []
    assert verdict(kitchen, program) == "empty_answer"


def test_a_list_longer_than_the_limit_is_too_many_items(kitchen):
    program = Program((WHITE,), LIST)
    assert answers(kitchen, program) == [
        (-1, ["CounterTop#1", "Cabinet#2", "Mug#1", "Cup#1"], "Cabinet, CounterTop, Cup, Mug")
    ]
    assert verdict(kitchen, program, max_list_items=3) == "too_many_items"
    assert verdict(kitchen, program, max_list_items=4) == "accepted"


def test_more_objects_to_describe_than_the_limit_is_too_many_targets(kitchen):
    program = Program((prop("material", "stone"),), QuerySpec("getProperty", "color"))
    assert answers(kitchen, program) == [(-1, ["CounterTop#1", "CounterTop#2"], "gray, white")]
    assert verdict(kitchen, program, max_query_targets=1) == "too_many_targets"
    assert verdict(kitchen, program, max_query_targets=2) == "accepted"


# -- the validity rules: each question breaks one rule, and only that one ----------------------------------
OPENED = FilterSpec("moment", "before", "open Cabinet", {"event": 0})
RULE_BREAKERS = {
    # the green thing is the one green glass: dropping "glass" changes nothing
    "ineffective_filter": Program((prop("color", "green"), prop("material", "glass")), LIST),
    # both cabinets are wooden: how many wooden cabinets reads as how many cabinets
    "same_as_unfiltered": Program((prop("material", "wood"),), QuerySpec("count", "objects", {"subject": "Cabinet"})),
    # whether the cabinet was open before you opened it: the event gives the answer away
    "answer_given_by_event": Program((OPENED,), QuerySpec("getState", "open", {"subject": "Cabinet"})),
    # which mugs on the countertop: "a mug", what the question says
    "trivial_answer": Program((ON_COUNTERTOP,), QuerySpec("listObjects", "", {"subject": "Mug"})),
    # what the ceramic things are used for: one use per type in the object table
    "constant_property": Program((prop("material", "ceramic"),), QuerySpec("getProperty", "utility")),
}


@pytest.mark.parametrize("reason", sorted(RULE_BREAKERS))
def test_a_question_breaking_one_validity_rule_is_rejected_by_that_rules_name(kitchen, reason):
    program = RULE_BREAKERS[reason]
    assert answers(kitchen, program)  # an answer to judge, of a size to ask about
    assert violations(kitchen, program) == [reason]
    assert judge(kitchen, program, QuestionConfig(), partial(selection, kitchen)) == reason
    assert verdict(kitchen, program) == reason


def test_the_rule_breakers_read_as_described(kitchen):
    """The facts each breaker relies on, from the kitchen's arrays (so that a breaker that broke another rule
    would be noticed here, not taken on trust)."""
    assert answers(kitchen, RULE_BREAKERS["ineffective_filter"]) == answers(
        kitchen, Program((prop("color", "green"),), LIST)
    )
    assert answers(kitchen, RULE_BREAKERS["same_as_unfiltered"])[0][2] == "2"
    before = answers(kitchen, RULE_BREAKERS["answer_given_by_event"])
    assert before == [(-1, ["Cabinet#1", "Cabinet#2"], "closed")] and kitchen.events[0].entity == 3
    assert {value for _, _, value in answers(kitchen, RULE_BREAKERS["trivial_answer"])} == {"Mug"}
    table = kitchen.params["attribute_values"]  # the household object table, as the rule reads it
    assert [len(table("utility", kind)) for kind in ("Mug", "Cup")] == [1, 1]


def test_a_valid_question_breaks_no_rule(kitchen):
    program = Program((ON_COUNTERTOP,), LIST)
    assert answers(kitchen, program) == [(0, ["Mug#1", "Cup#1"], "Cup, Mug"), (1, ["Mug#2"], "Mug")]
    assert violations(kitchen, program) == [] and verdict(kitchen, program) == "accepted"


# -- the episode's mix and its proposals ------------------------------------------------------------------
def candidate(ambiguous: bool) -> Accepted:
    """An accepted program, with a grounded twin (two records) or without."""
    return Accepted(Program((ON_COUNTERTOP,), LIST), [], 0 if ambiguous else None)


def test_a_grounded_twin_past_the_target_share_is_grounded_mix():
    config = QuestionConfig(grounded_share=0.35, grounded_tolerance=0.1)
    # 2 grounded of 4 records; a twin would make 3 of 6 (50% > 45%)
    assert mix_problem(candidate(True), config, MixState(grounded=2, records=4)) == "grounded_mix"
    assert mix_problem(candidate(True), config, MixState(grounded=1, records=4)) is None  # 2 of 6
    assert mix_problem(candidate(False), config, MixState(grounded=2, records=4)) is None


def proposals(ctx: EpisodeContext, n: int = 40, **index_changes) -> Counter:
    index = dataclasses.replace(build_index(ctx), **index_changes)
    config = QuestionConfig()
    state, draws = SamplingState.start(index, config), Draws(derive_rng(0, "proposals"))
    return Counter(
        p if isinstance(p, str) else "program" for p in (propose(index, state, config, draws) for _ in range(n))
    )


def test_a_query_with_no_observation_to_build_on_is_no_seed(kitchen):
    assert proposals(kitchen)["program"] > 0
    empty = {key: SeedCells([], [], []) for key in build_index(kitchen).seeds}
    assert proposals(kitchen, seeds=empty) == Counter({"no_seed": 40})


def identical_cups():
    """Two white glass cups side by side: every filter that holds keeps both, so none changes an answer."""
    position = np.zeros((3, 2, 3))
    position[:, :, 2] = 2.0
    attributes = [{"color": "white", "material": "glass", "utility": "drinking"}] * 2
    return tiny_episode(["Cup", "Cup"], position, np.ones((3, 2), dtype=bool), attributes=attributes)


def test_an_episode_where_no_filter_changes_an_answer_is_no_satisfiable_filter():
    accepted, rejected = sample_programs(context_for(identical_cups()), QuestionConfig(), derive_rng(0, "q"))
    assert accepted == [] and set(rejected) == {"no_satisfiable_filter"}


def test_the_episode_counts_each_rejection_under_the_reason_its_check_gave(kitchen):
    """Forbid every filter with every query: each proposal that gets as far as the checks is a forbidden pair,
    and is counted so (never as the duplicate it is not: nothing was accepted)."""
    families, queries = ("property", "location", "state", "position", "moment"), sorted(build_index(kitchen).queries)
    config = QuestionConfig(forbidden_pairs=[(f, "*", q, "*") for f in families for q in queries])
    accepted, rejected = sample_programs(kitchen, config, derive_rng(0, "q"))
    assert accepted == [] and rejected["forbidden_pair"] > 0
    assert set(rejected) <= {"forbidden_pair", "no_satisfiable_filter", "fewer_filters"}, rejected
