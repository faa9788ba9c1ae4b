"""Asking a program proposed in one episode on another episode (PQB-EQA's per-question environments).

A program names things by their type ("the countertop", "a mug") and events by their canonical name
("open Fridge #2"), never by an index of its own episode, except the moment filters' event indices, which
:func:`program_in` finds again by name. So the same question can be asked wherever the things it names
exist; it is asked there only if it passes the same exact check (``sampler.judge``: an answer of a size
to ask about and every validity rule) as where it was proposed.

``names``: what an episode can be asked about by name (its observed object types and its events' names),
and what a program needs of an episode (the types and events it names): a cheap vocabulary that tells
which episodes to skip before any evaluation.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

from eqagen.core import Draws, Episode, Program
from eqagen.predicates.config import QuestionConfig
from eqagen.predicates.context import EpisodeContext, name_events
from eqagen.predicates.filters import event_names, moment_spec_in
from eqagen.predicates.sampler import Accepted, Answered, grounded_choice, judge


def episode_names(episode: Episode) -> set[str]:
    """The names a question can use of this episode: the types of the objects the agent saw and the
    canonical names of its events."""
    visible = episode.timeline.field("visible").astype(bool).any(axis=0)
    types = np.asarray(episode.entities.type, dtype=object)[visible]
    return set(types.tolist()) | {ev.name for ev in name_events(episode)}


def program_names(program: Program) -> set[str]:
    """Everything a program names that an episode may lack: its filters' values and receptacles, its events,
    its subject. (Values that are not names of a type or an event, such as a colour, are kept too; a caller
    compares them with the names of the episode the program came from.)"""
    names: set[str] = set()
    for f in program.filters:
        names.update(event_names(f) if f.family == "moment" else [f.value])
        if "receptacle" in f.args:
            names.add(f.args["receptacle"])
    subject = program.query.args.get("subject")
    return names | {subject} if subject else names


def required_names(program: Program, source_names: set[str]) -> frozenset[str]:
    """The names another episode must have for ``program`` (proposed in an episode with ``source_names``)
    to be asked there."""
    return frozenset(program_names(program) & source_names)


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


def ask(ctx: EpisodeContext, program: Program, config: QuestionConfig) -> tuple[Program, Answered] | str:
    """The program asked on this episode (its moments pointing at this episode's events) and its answers, or
    the rejection reason (``event_missing`` where an event it names did not happen here; else the exact
    check's reason)."""
    here = program_in(ctx, program)
    if here is None:
        return "event_missing"
    verdict = judge(ctx, here, config, ctx.selection)
    return verdict if isinstance(verdict, str) else (here, verdict)


def accept(
    ctx: EpisodeContext, program: Program, answered: Answered, make_rng: Callable[[], np.random.Generator]
) -> Accepted:
    """An asked program accepted, with the group its grounded twin names drawn among the valid anchors as the
    sampler draws it; the generator is made only for a program with anchors (most have none)."""
    if not any(g.anchor >= 0 for g in answered.groups):
        return Accepted(program, answered.groups, None)
    return Accepted(program, answered.groups, grounded_choice(ctx, ctx.selection, program, answered, Draws(make_rng())))
