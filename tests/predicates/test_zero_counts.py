"""A count of events is an answer where the agent never did it: "0" ("Never."), one group with no object, for
a program without an ambiguous filter, asked only where a filter makes the difference."""

from __future__ import annotations

from functools import lru_cache, partial

from eqagen.core import Program, derive_rng
from eqagen.predicates import QuestionConfig, context_for
from eqagen.predicates.asking import accept, ask, program_in
from eqagen.predicates.evaluator import evaluate_raw
from eqagen.predicates.registry import Anchored, selection
from eqagen.predicates.sampler import sample_programs
from eqagen.predicates.validity import dropped_answers
from eqagen.scoring.freeform import normalise
from eqagen.templates.answers import evaluate
from eqagen.templates.records import make_records
from tests.predicates.helpers import comparable, household_episodes
from tests.predicates.reference import Plain, reference_answer

CONFIG = QuestionConfig(questions_per_episode=24, event_count_share=1.0)


def counts_events(program: Program) -> bool:
    return program.query.name == "count" and program.query.arg == "events"


@lru_cache(maxsize=1)
def event_count_programs() -> tuple[Program, ...]:
    """Count-of-events programs the sampler accepts in 60 household episodes, each once."""
    found: dict[str, Program] = {}
    for episode in household_episodes(60):
        accepted, _ = sample_programs(context_for(episode), CONFIG, derive_rng(0, "questions", episode.episode_id))
        for acc in accepted:
            if counts_events(acc.program):
                found.setdefault(acc.program.signature(), acc.program)
    return tuple(found.values())


def asked_elsewhere(n_episodes: int = 40):
    """(episode, its context, program) for every count-of-events program in each of ``n_episodes`` episodes
    where its moments happened (``program_in``: the moments pointing at that episode's events) and at most one
    filter names several instances (else the program is not asked there)."""
    programs = event_count_programs()
    for episode in household_episodes(n_episodes):
        ctx = context_for(episode)
        for program in programs:
            here = program_in(ctx, program)
            if here is not None and sum(ambiguous(ctx, f) for f in here.filters) <= 1:
                yield episode, ctx, here


def test_a_count_of_events_with_none_kept_is_one_group_of_zero_with_no_object():
    zeros = anchored_empty = 0
    for _episode, ctx, program in asked_elsewhere():
        groups = evaluate_raw(ctx, program)
        if any(g.value == "0" for g in groups):
            assert len(groups) == 1 and groups[0].anchor == -1 and groups[0].entities.size == 0
            zeros += 1
        elif not groups:  # no group at all: only where an ambiguous filter makes a group per anchor
            assert any(ambiguous(ctx, f) for f in program.filters), program.signature()
            anchored_empty += 1
    assert zeros > 50 and anchored_empty > 0


def ambiguous(ctx, spec) -> bool:
    sel = selection(ctx, spec)
    return isinstance(sel, Anchored) and len(sel) >= 2


def test_zero_counts_agree_with_the_plain_reference_evaluator():
    compared = zeros = 0
    plains: dict[str, Plain] = {}  # the plain episode is slow to build: once per episode
    for episode, _ctx, program in asked_elsewhere(25):
        plain = plains.get(episode.episode_id) or plains.setdefault(episode.episode_id, Plain(episode))
        ref = reference_answer(episode, program, plain)
        got = comparable(evaluate(episode, program))
        assert got == ref, (episode.episode_id, program.signature(), got, ref)
        compared += 1
        zeros += ref == [(None, [], "0")]
    assert compared > 200 and zeros > 20


def test_an_asked_zero_is_valid_only_where_every_filter_makes_the_difference():
    """Dropping any filter of an accepted zero gives a count that is not zero (the rules same_as_unfiltered
    and ineffective_filter); a zero where a filter does not matter is rejected."""
    accepted = rejected = 0
    for _episode, ctx, program in asked_elsewhere():
        groups = evaluate_raw(ctx, program)
        if [g.value for g in groups] != ["0"]:
            continue
        verdict = ask(ctx, program, CONFIG)
        drops = dropped_answers(ctx, program, partial(selection, ctx))
        some_drop_is_zero = any([g.value for g in dropped] == ["0"] for dropped in drops)
        if isinstance(verdict, str):
            rejected += 1
        else:
            assert not some_drop_is_zero, program.signature()
            accepted += 1
    assert accepted > 10 and rejected > 10


def test_a_zero_reads_never_and_scores_as_zero():
    for _episode, ctx, program in asked_elsewhere():
        verdict = ask(ctx, program, CONFIG)
        if isinstance(verdict, str) or [g.value for g in verdict[1].groups] != ["0"]:
            continue
        here, answered = verdict
        (record,) = make_records(ctx, accept(ctx, here, answered, lambda: derive_rng(0, "t")))
        assert record.answer == "Never."
        assert record.structured_answer[0].result == () and record.structured_answer[0].value == "0"
        assert normalise(record.answer) == normalise("0") == normalise("zero")
        return
    raise AssertionError("no accepted zero count in 40 episodes")
