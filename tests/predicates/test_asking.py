"""Asking a program on another episode: the same exact check as where it was proposed, moments found by
the names of their events, and a vocabulary that only skips episodes where the question cannot hold."""

from __future__ import annotations

from eqagen.core import FilterSpec, Program, QuerySpec, derive_rng
from eqagen.predicates import QuestionConfig, context_for
from eqagen.predicates.asking import accept, ask, episode_names, program_in, program_names, required_names
from eqagen.predicates.sampler import sample_programs
from eqagen.predicates.validity import violations
from tests.predicates.helpers import household_episodes


def test_a_program_asked_on_its_own_episode_gets_the_answer_it_was_accepted_with():
    config, compared = QuestionConfig(), 0
    for episode in household_episodes(12):
        ctx = context_for(episode)
        accepted, _ = sample_programs(ctx, config, derive_rng(0, "questions", episode.episode_id))
        for acc in accepted:
            verdict = ask(ctx, acc.program, config)
            assert not isinstance(verdict, str), (acc.program.signature(), verdict)
            here, answered = verdict
            assert here == acc.program
            assert [(g.anchor, g.entities.tolist(), g.value) for g in answered.groups] == [
                (g.anchor, g.entities.tolist(), g.value) for g in acc.groups
            ]
            compared += 1
    assert compared > 200


def moment_program(ctx) -> Program:
    event = ctx.events[-1]
    spec = FilterSpec("moment", "before", event.name, {"event": event.index})
    return Program((spec,), QuerySpec("count", "objects"))


def test_a_moment_is_found_again_by_its_events_name():
    episodes = household_episodes(40)
    source = context_for(episodes[0])
    program = moment_program(source)
    name = program.filters[0].value
    found = missing = 0
    for episode in episodes[1:]:
        ctx = context_for(episode)
        here = program_in(ctx, program)
        named = [ev for ev in ctx.events if ev.name == name]
        if named:
            assert here is not None and here.filters[0].args == {"event": named[0].index}
            found += 1
        else:
            assert here is None
            assert ask(ctx, program, QuestionConfig()) == "event_missing"
            missing += 1
    assert found and missing


def test_asked_questions_are_valid_where_they_are_asked():
    config, episodes = QuestionConfig(), household_episodes(30)
    contexts = [context_for(e) for e in episodes]
    source = contexts[0]
    accepted, _ = sample_programs(source, config, derive_rng(0, "questions", episodes[0].episode_id))
    judged = 0
    for acc in accepted:
        need = required_names(acc.program, episode_names(contexts[0]))
        for episode, ctx in zip(episodes[1:], contexts[1:]):
            if not need <= episode_names(ctx):
                continue
            verdict = ask(ctx, acc.program, config)
            if isinstance(verdict, str):
                continue
            verdict = accept(ctx, *verdict, lambda e=episode: derive_rng(0, "ask", e.episode_id))
            assert violations(ctx, verdict.program, None, verdict.groups) == []
            if verdict.grounded is not None:
                anchor = ctx.anchor_position(verdict.groups[verdict.grounded].anchor)
                assert violations(ctx, verdict.program, anchor, verdict.groups) == []
            judged += 1
    assert judged > 20


def test_the_vocabulary_skips_only_episodes_where_a_named_thing_is_missing():
    """An episode without one of the names a question needs gives it no answer there."""
    config, episodes = QuestionConfig(), household_episodes(20)
    contexts = [context_for(e) for e in episodes]
    accepted, _ = sample_programs(contexts[0], config, derive_rng(0, "questions", episodes[0].episode_id))
    skipped = 0
    for acc in accepted:
        need = required_names(acc.program, episode_names(contexts[0]))
        assert need == program_names(acc.program)  # the proposing episode has every name its program needs
        for ctx in contexts[1:]:
            if need <= episode_names(ctx):
                continue
            verdict = ask(ctx, acc.program, config)
            # no answer there: no event, nothing found, or (two named objects with several instances here)
            # no question the evaluator can group
            assert verdict in ("event_missing", "empty_answer", "several_ambiguous_filters"), verdict
            skipped += 1
    assert skipped > 20
