"""Validity rules: when a program's answer makes a question a benchmark can trust (TAG-EQA's rules).

Each rule is one small pure function ``rule(q: Asked) -> bool`` (True: violated) with a named reason,
defined on the plain evaluation only (:func:`eqagen.predicates.evaluator.evaluate_raw`: the answer
groups a reader is given) and on the registered filters' own definitions. :func:`violations` runs them
all; the sampler calls it as its exact check and ``benchmarks/check_validity.py`` on the shards.

A question is judged as asked: a grounded question (``anchor``: the coordinates it names) on its own
anchor's group only, an ungrounded one on all its groups. What a reader sees of an answer is
:func:`reader_content`. The rules are described for readers in docs/questions.md ("Validity rules").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial

import numpy as np

from eqagen.core import AnswerGroup, Episode, FilterSpec, Program
from eqagen.predicates.context import EpisodeContext, context_for
from eqagen.predicates.evaluator import RawGroup, Select, base_mask, evaluate_raw, groups_on
from eqagen.predicates.filters import AGENT, EVENT_ARGS, OPPOSITE
from eqagen.predicates.registry import REGISTRY, Anchored, selection

Anchor = tuple[float, float, float]


@dataclass(frozen=True)
class Asked:
    """One question to judge: the episode's context, the program, the anchor the question names (None:
    ungrounded), the program's answer groups (all of them, as ``evaluate_raw`` gives them) and how a
    filter's selection is found (its definition, or the sampler's index of the same selections)."""

    ctx: EpisodeContext
    program: Program
    anchor: Anchor | None
    groups: list[RawGroup]
    select: Select
    dropped: list[list[RawGroup]]  # the program's answer groups with each filter dropped in turn
    asked_groups: list[RawGroup]  # the groups the question is about: its anchor's group when grounded, else all
    yes_no: bool  # the query answers yes or no

    @classmethod
    def of(cls, ctx: EpisodeContext, program: Program, anchor: Anchor | None, groups, select, dropped) -> Asked:
        """The question, with the groups it asks about and its answer type found once for every rule."""
        yes_no = REGISTRY.query(program.query.name).answer_type(program.query) == "yes/no"
        return cls(ctx, program, anchor, groups, select, dropped, raw_groups_for(ctx, groups, anchor), yes_no)

    def content(self, groups: list[RawGroup]) -> frozenset[tuple[str, ...]]:
        """``reader_content`` of raw groups."""
        ids = self.ctx.episode.entities.instance_id
        return content_of([(g.value, [ids[e] for e in g.entities.tolist()]) for g in groups], self.yes_no)


def groups_for(groups: list[AnswerGroup], anchor: Anchor | None) -> list[AnswerGroup]:
    return list(groups) if anchor is None else [g for g in groups if g.anchor == anchor]


def raw_groups_for(ctx: EpisodeContext, groups: list[RawGroup], anchor: Anchor | None) -> list[RawGroup]:
    """``groups_for`` on raw groups, whose anchor is an entity named by its position (``anchor_position``)."""
    return (
        list(groups)
        if anchor is None
        else [g for g in groups if g.anchor >= 0 and ctx.anchor_position(g.anchor) == anchor]
    )


def reader_content(groups: list[AnswerGroup], yes_no: bool = False) -> frozenset[tuple[str, ...]]:
    """What a reader sees of an answer, anchors aside: the set of distinct group values, each as the
    sorted tuple of its comma-separated items (listed types keep their repeats: "two cups" is not "a
    cup"). Two answers with the same content read the same to someone who does not compare coordinates.
    A yes/no answer also names what grounds it (the objects found, or looked at): dropping a filter never
    turns a "yes" into a "no", so what a filter of an existence question changes is which objects answer."""
    return content_of([(g.value, [item.entity for item in g.result]) for g in groups], yes_no)


def content_of(answers: list[tuple[str, list]], yes_no: bool) -> frozenset[tuple[str, ...]]:
    """``reader_content`` of groups given as (value, the names or indices of the entities it holds)."""
    if yes_no:
        return frozenset((value, *sorted(map(str, entities))) for value, entities in answers)
    return frozenset(tuple(sorted(value.split(", "))) for value, _ in answers)


def answered_entities(groups: list[RawGroup]) -> set[int]:
    """Entity indices of the groups' results."""
    return {e for g in groups for e in g.entities.tolist()}


def without(program: Program, i: int) -> Program:
    return Program(program.filters[:i] + program.filters[i + 1 :], program.query)


# -- effectiveness by value ---------------------------------------------------------------------------
def content_without(q: Asked, i: int) -> frozenset[tuple[str, ...]]:
    """The reader's content of the question's answer once filter ``i`` is dropped. Grounded: the group of
    the same anchor, unless filter ``i`` was the one naming anchors (then the answer has no anchor)."""
    groups = q.dropped[i]
    named = any(g.anchor >= 0 for g in groups)
    return q.content(raw_groups_for(q.ctx, groups, q.anchor if named else None))


def dropped_answers(ctx: EpisodeContext, program: Program, select: Select) -> list[list[RawGroup]]:
    """The program's answer groups with each filter dropped in turn (what effectiveness compares): computed
    once per program, whichever anchor its questions name."""
    qdef = REGISTRY.query(program.query.name)
    base = base_mask(ctx, program, qdef)  # the query's mask before any filter: the same for every drop
    return [groups_on(ctx, without(program, i), qdef, base, select) for i in range(len(program.filters))]


def unchanged_without_some_filter(q: Asked) -> bool:
    content = q.content(q.asked_groups)
    return any(content_without(q, i) == content for i in range(len(q.program.filters)))


def ineffective_filter(q: Asked) -> bool:
    """Some filter of a multi-filter question changes no value the reader sees when dropped."""
    return len(q.program.filters) > 1 and unchanged_without_some_filter(q)


def same_as_unfiltered(q: Asked) -> bool:
    """A one-filter question's answer reads the same as the query's on DATA (no filter)."""
    return len(q.program.filters) == 1 and unchanged_without_some_filter(q)


# -- position filters hold at every step the question admits ----------------------------------------------
def relation_at(sel: np.ndarray | Anchored, anchor: int) -> np.ndarray:
    """``[T, N]``: where a position filter's selection ``sel`` holds against one anchor entity (-1: you)."""
    if isinstance(sel, Anchored):
        return sel.masks[int(np.flatnonzero(sel.anchors == anchor)[0])]
    return sel


def filter_anchors(ctx: EpisodeContext, spec: FilterSpec, group: RawGroup) -> list[int]:
    """The anchor entities a position filter relates a group's objects to: -1 for you, the group's anchor
    when the filter names several instances (the group is that instance's), else its one instance."""
    if spec.value == AGENT:
        return [-1]
    anchors = ctx.instances(spec.value).tolist()
    if len(anchors) >= 2:
        return [a for a in anchors if a == group.anchor]
    return anchors


def both_seen(ctx: EpisodeContext, entity: int, anchor: int) -> np.ndarray:
    """Bool ``[T]``: the agent saw the entity (and the anchor, unless the anchor is you)."""
    seen = ctx.data[:, entity]
    return seen if anchor < 0 else seen & ctx.data[:, anchor]


# the filter families whose selection is a set of steps: a moment window, a situation the agent saw
STEP_FAMILIES = ("moment", "situation")


def admitted_steps(q: Asked, group: RawGroup) -> np.ndarray:
    """Bool ``[T, N]``: the steps a group's question admits: all its moment and situation filters hold (a
    situation naming several instances: the group's one; no such filter: every step)."""
    out = np.ones((q.ctx.T, q.ctx.N), dtype=bool)
    for f in q.program.filters:
        if f.family in STEP_FAMILIES:
            sel = q.select(f)
            if isinstance(sel, Anchored):
                sel = sel.masks[sel.anchors == group.anchor][0] if len(sel) >= 2 else sel.masks.any(axis=0)
            out &= sel
    return out


def position_pairs(q: Asked, spec: FilterSpec):
    """``(entity, anchor, steps the group admits)`` for every object of the asked groups and the anchor
    ``spec`` relates it to."""
    for g in q.asked_groups:
        admitted = admitted_steps(q, g)
        for e in g.entities.tolist():
            for a in filter_anchors(q.ctx, spec, g):
                yield e, a, admitted


def indefinite_moment(q: Asked) -> bool:
    """A situated relation read two ways: for some answer object and the anchor a position filter relates it
    to, at a step the moment and situation filters admit (none: any step) where the agent saw both, the object
    stood in the opposite relation (left/right, front/behind; "behind you" is never seen). A position filter
    keeps what stood in the relation at some admitted step; asked only where no such object was ever seen the
    other way round, "the objects to the left of the drawer" has one answer."""
    positions = [f for f in q.program.filters if f.family == "position"]
    if not positions:
        return False
    for spec in positions:
        against = opposite_selection(q, spec)
        if against is None:
            continue
        for e, a, admitted in position_pairs(q, spec):
            if (relation_at(against, a)[:, e] & both_seen(q.ctx, e, a) & admitted[:, e]).any():
                return True
    return False


def opposite_spec(spec: FilterSpec) -> FilterSpec | None:
    """The position filter of the relation opposite to position filter ``spec``; None where there is none
    ("behind you" is never seen)."""
    if spec.value == AGENT and spec.key == "front":
        return None
    return FilterSpec(spec.family, OPPOSITE[spec.key], spec.value)


def opposite_selection(q: Asked, spec: FilterSpec) -> np.ndarray | Anchored | None:
    """The selection of ``opposite_spec`` (by its definition); None where there is none."""
    opposite = opposite_spec(spec)
    return None if opposite is None else q.select(opposite)


# -- answers the question gives away ------------------------------------------------------------------
def answer_given_by_event(q: Asked) -> bool:
    """A state question about the object of an event that one of its moment filters names ("was the
    faucet on or off before you switched off the faucet?")."""
    if q.program.query.name != "getState":
        return False
    return bool(event_entities(q.ctx, q.program.filters) & answered_entities(q.asked_groups))


def event_entities(ctx: EpisodeContext, filters: Iterable[FilterSpec]) -> set[int]:
    """The entities of the events the moment filters among ``filters`` name."""
    return {ctx.events[f.args[k]].entity for f in filters if f.family == "moment" for k in EVENT_ARGS if k in f.args}


def named_values(program: Program) -> set[str]:
    """What the question names: its filters' values and receptacles, and its subject."""
    names = {f.value for f in program.filters} | {
        f.args[arg] for f in program.filters for arg in ("receptacle", "figure") if arg in f.args
    }
    subject = program.query.args.get("subject")
    return names | {subject} if subject else names


def trivial_answer(q: Asked) -> bool:
    """Every item of the answer is something the question names ("what is left of the cabinet?": two
    cabinets)."""
    items = {item for g in q.asked_groups for item in g.value.split(", ")}
    return items <= named_values(q.program)


AttributeValues = Callable[[str, str], "tuple[str, ...] | None"]


def constant_property(q: Asked) -> bool:
    """A getProperty question whose subject type (with no subject: every answer object's type) has a single
    value of the attribute in the world family's object table (the family's ``attribute_values`` param:
    ``(attribute, type) -> the values the table allows``, None where it does not say)."""
    query = q.program.query
    if query.name != "getProperty":
        return False
    subject = query.args.get("subject")
    types = {subject} if subject else {str(q.ctx.types[e]) for e in answered_entities(q.asked_groups)}
    return all(single_value(q.ctx, query.arg, t) for t in types)


def single_value(ctx: EpisodeContext, attribute: str, type_name: str) -> bool:
    """Whether the world family's object table gives the type a single value of the attribute."""
    table: AttributeValues | None = ctx.params.get("attribute_values")
    return table is not None and len(table(attribute, type_name) or ()) == 1


# -- entry point --------------------------------------------------------------------------------------
RULES: dict[str, Callable[[Asked], bool]] = {
    "ineffective_filter": ineffective_filter,
    "same_as_unfiltered": same_as_unfiltered,
    "indefinite_moment": indefinite_moment,
    "answer_given_by_event": answer_given_by_event,
    "trivial_answer": trivial_answer,
    "constant_property": constant_property,
}


def violations(
    ctx_or_episode: EpisodeContext | Episode,
    program: Program,
    anchor: Anchor | None = None,
    groups: list[RawGroup] | None = None,
    select: Select | None = None,
    dropped: list[list[RawGroup]] | None = None,
) -> list[str]:
    """The reasons (keys of :data:`RULES`, in that order) why the question asking ``program`` (about the
    group of ``anchor`` when grounded) is not valid; empty when it is. ``groups``: the program's answer
    groups from ``evaluate_raw`` (computed when not given). An empty answer, or a grounded question
    whose anchor names no group, is the caller's ``empty_answer``, not judged here (ValueError). ``select``:
    how a filter's selection is found (default: its definition, called). ``dropped``: ``dropped_answers``
    of the program, where the caller judges several anchors of it (computed when not given)."""
    q = asked(ctx_or_episode, program, anchor, groups, select, dropped)
    return [name for name, rule in RULES.items() if rule(q)]


def first_violation(
    ctx: EpisodeContext,
    program: Program,
    anchor: Anchor | None,
    groups: list[RawGroup],
    select: Select,
    dropped: list[list[RawGroup]],
) -> str | None:
    """The first of :func:`violations` (None: valid), the rules after it not run: what an exact check
    needs, which rejects on the first reason."""
    q = asked(ctx, program, anchor, groups, select, dropped)
    return next((name for name, rule in RULES.items() if rule(q)), None)


def asked(
    ctx_or_episode: EpisodeContext | Episode,
    program: Program,
    anchor: Anchor | None,
    groups: list[RawGroup] | None,
    select: Select | None,
    dropped: list[list[RawGroup]] | None,
) -> Asked:
    """The question the rules judge (:func:`violations`' arguments, the missing ones computed)."""
    ctx = ctx_or_episode if isinstance(ctx_or_episode, EpisodeContext) else context_for(ctx_or_episode)
    select = select or partial(selection, ctx)
    groups = evaluate_raw(ctx, program, select) if groups is None else groups
    dropped = dropped_answers(ctx, program, select) if dropped is None else dropped
    q = Asked.of(ctx, program, anchor, groups, select, dropped)
    if not q.asked_groups:
        raise ValueError(f"no answer group to judge for {program.signature()} at anchor {anchor}")
    return q
