"""Asking a program proposed in one episode on another episode (PQB-EQA's per-question environments).

A program names things by their type ("the countertop", "a mug") and events by their canonical name
("open Fridge #2"), never by an index of its own episode, except the moment filters' event indices, which
:func:`program_in` finds again by name. So the same question can be asked wherever the things it names
exist; it is asked there only if it passes the same exact check (``sampler.judge``: an answer of a size
to ask about and every validity rule) as where it was proposed.

``names``: what an episode can be asked about by name (its observed object types, its events' names and
the filter specs that can hold in it), and what a program needs of an episode (its filters, events and
subject): a vocabulary that tells which episodes to skip before any evaluation (about a third of the
episodes that have every type and event a question names give no answer for want of a filter's value).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np

from eqagen.core import Draws, FilterSpec, Program
from eqagen.predicates.config import QuestionConfig
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.evaluator import Select
from eqagen.predicates.filters import event_names, moment_spec_in
from eqagen.predicates.registry import REGISTRY, selection
from eqagen.predicates.sampler import Accepted, Answered, grounded_choice, judge


def spec_name(spec: FilterSpec) -> str:
    """A filter spec as a name of the vocabulary: its content but the args an episode alone gives meaning to
    (a moment's event indices; a moment is named by its events instead)."""
    receptacle, figure = spec.args.get("receptacle", ""), spec.args.get("figure", "")
    return (
        f"{spec.family}:{spec.key}={spec.value}"
        + (f"@{receptacle}" if receptacle else "")
        + (f"~{figure}" if figure else "")
    )


def episode_names(ctx: EpisodeContext, specs: list[FilterSpec] | None = None) -> set[str]:
    """The names a question can use of this episode: the types of the objects the agent saw, the canonical
    names of its events, and every filter spec that can hold here (the registered ``values`` of each filter
    key its world family supports: what the sampler's index starts from; ``specs``: the index's, where the
    caller has it)."""
    if specs is None:
        specs = [
            spec
            for family in ctx.support.filters
            for key in REGISTRY.filter_keys(ctx.support, family)
            for spec in REGISTRY.filter(family, key).values(ctx, key)
        ]
    names = {spec_name(spec) for spec in specs if spec.family != "moment"}
    return set(ctx.observed_types()) | {ev.name for ev in ctx.events} | names | several_names(ctx)


def several_name(type_name: str) -> str:
    """The name of an episode where the agent saw two or more things of a type: where an existence question
    about it can be answered ``yes`` with a filter that matters (one that leaves some of them out)."""
    return f"several:{type_name}"


def several_names(ctx: EpisodeContext) -> set[str]:
    """The ``several:`` names of the episode, where its world family has an existence query (only those ask
    for them: :func:`presence_name`)."""
    if not any(REGISTRY.query(q).asks_presence for q in ctx.support.queries):
        return set()
    types, counts = np.unique(ctx.types[ctx.observed], return_counts=True)
    return {several_name(t) for t in types[counts >= 2].tolist()}


def program_names(program: Program) -> set[str]:
    """Everything a program names that an episode may lack: its filters (moments by their events' names),
    its subject."""
    names: set[str] = set()
    for f in program.filters:
        names.update(event_names(f) if f.family == "moment" else [spec_name(f)])
    subject = program.query.args.get("subject")
    return names | {subject} if subject else names


def required_names(program: Program, source_names: set[str]) -> frozenset[str]:
    """The names another episode must have for ``program`` (proposed in an episode with ``source_names``)
    to be asked there."""
    return frozenset(program_names(program) & source_names)


def presence_name(program: Program) -> str | None:
    """For an existence question, the name of the episodes most likely to answer it ``yes`` (those that saw
    several things of the type it asks about: :func:`several_name`); None for other queries. It is not a
    name the question needs: elsewhere it is answered ``no``."""
    return several_name(program.query.arg) if REGISTRY.query(program.query.name).asks_presence else None


def program_in(ctx: EpisodeContext, program: Program) -> Program | None:
    """The same program in the episode of ``ctx`` (moment filters pointing at its own events), or None where
    an event it names did not happen there."""
    filters = []
    for f in program.filters:
        if f.family == "moment":
            f = moment_spec_in(ctx, f)
            if f is None:
                return None
        filters.append(f)
    return Program(tuple(filters), program.query)


def ask(
    ctx: EpisodeContext, program: Program, config: QuestionConfig, select: Select | None = None
) -> tuple[Program, Answered] | str:
    """The program asked on this episode (its moments pointing at this episode's events) and its answers, or
    the rejection reason (``event_missing`` where an event it names did not happen here; else the exact
    check's reason). ``select``: the episode's selections (``registry.EpisodeSelections``); by default the
    definitions, called."""
    here = program_in(ctx, program)
    if here is None:
        return "event_missing"
    verdict = judge(ctx, here, config, select or partial(selection, ctx))
    return verdict if isinstance(verdict, str) else (here, verdict)


def accept(
    ctx: EpisodeContext,
    program: Program,
    answered: Answered,
    make_rng: Callable[[], np.random.Generator],
    select: Select | None = None,
) -> Accepted:
    """An asked program accepted, with the group its grounded twin names drawn among the valid anchors as the
    sampler draws it; the generator is made only for a program with anchors (most have none)."""
    if not any(g.anchor >= 0 for g in answered.groups):
        return Accepted(program, answered.groups, None)
    select = select or partial(selection, ctx)
    return Accepted(program, answered.groups, grounded_choice(ctx, select, program, answered, Draws(make_rng())))
