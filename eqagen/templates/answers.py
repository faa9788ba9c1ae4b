"""The structured answer's text and the answer a person would give.

- ``answer_groups``: the evaluator's groups as ``AnswerGroup`` (the predicate in TAG-EQA's form, from the
  same ``conjunct`` as the structured question; each result item with its caption and, for a query answered
  object by object, what the query says about that entity).
- ``answer_text``: one sentence per group, naming what it is about and agreeing in number with it: "The
  desk lamp was off and the floor lamp was on.", "The two cups were white.", "An apple and two cups.",
  "Twice." Groups of an ambiguous filter are introduced by that filter's phrase naming their anchor
  ("Above the drawer at (x=.., y=.., z=..): ..."); no other answer names coordinates.

An answer is reproducible from the structured answer: the groups' values and items (type, caption, value),
and, for where a thing was, whether its receptacle type holds things inside (a fridge) or on top.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import numpy as np

from eqagen.core import AnswerGroup, Episode, Program, QuerySpec, ResultItem
from eqagen.predicates.context import EpisodeContext, context_for
from eqagen.predicates.evaluator import RawGroup, evaluate_raw
from eqagen.predicates.filters import encloses
from eqagen.predicates.registry import REGISTRY
from eqagen.templates.phrasing import most_specific, phrasing
from eqagen.templates.render import conjunct
from eqagen.templates.words import join_and, label, list_phrase, number_word, plural, upper_first

# answers about the group as a whole; every other answer type says something about each object
WHOLE_GROUP_ANSWERS = ("number", "count", "objects", "yes/no")
NAMES_TYPES = ("location", "object")  # answer types whose values are object types ("CounterTop")


# -- the structured answer -----------------------------------------------------------------------------
def evaluate(episode: Episode, program: Program) -> list[AnswerGroup]:
    """The structured answer of ``program`` on ``episode``: groups per grounded predicate value, anchor
    coordinates in the episode frame (None when the program names no ambiguous object)."""
    return evaluate_context(context_for(episode), program)


def evaluate_context(ctx: EpisodeContext, program: Program) -> list[AnswerGroup]:
    return answer_groups(ctx, program, evaluate_raw(ctx, program))


def answer_groups(ctx: EpisodeContext, program: Program, groups: list[RawGroup]) -> list[AnswerGroup]:
    answer_type = REGISTRY.query(program.query.name).answer_type(program.query)
    return [answer_group(ctx, program, g, answer_type) for g in groups]


def answer_group(ctx: EpisodeContext, program: Program, g: RawGroup, answer_type: str) -> AnswerGroup:
    """One group: its predicate (the ambiguous filter naming the anchor, or the conjunction of the filters),
    the anchor's coordinates, the result items, the value."""
    if g.anchor >= 0:
        anchor = ctx.anchor_position(g.anchor)
        predicate = conjunct(program.filters[g.filter_index], anchor)
    else:
        anchor, predicate = None, " AND ".join(conjunct(f) for f in program.filters)
    values = item_values(ctx, program.query, g) if answer_type not in WHOLE_GROUP_ANSWERS else None
    items = tuple(
        result_item(ctx, e, t, values[i] if values else "")
        for i, (e, t) in enumerate(zip(g.entities.tolist(), g.last_t.tolist()))
    )
    return AnswerGroup(predicate=predicate, anchor=anchor, result=items, value=g.value)


def item_values(ctx: EpisodeContext, q: QuerySpec, g: RawGroup) -> list[str]:
    """What the query says about each entity of a group: the query itself on that entity's reported
    observation alone. A group value naming a single value (no ", ") is every entity's."""
    n = g.entities.size
    if n == 1 or ", " not in g.value:
        return [g.value] * n
    fn = REGISTRY.query(q.name).fn
    values = []
    for e, t in zip(g.entities.tolist(), g.last_t.tolist()):
        cell = np.zeros((ctx.T, ctx.N), dtype=bool)
        cell[t, e] = True
        out = fn(ctx, q, cell)
        if out is None or out.entities.tolist() != [e]:
            raise ValueError(f"query {q.name} says nothing about entity {e} at its reported step {t} alone")
        values.append(out.value)
    return values


def caption(ctx: EpisodeContext, entity: int) -> str:
    """A short description from the static attributes: ``green plastic cup``."""
    attrs = ctx.episode.entities.attributes[entity]
    return " ".join([*(str(attrs[k]) for k in ("color", "material") if attrs.get(k)), label(str(ctx.types[entity]))])


def result_item(ctx: EpisodeContext, entity: int, t: int, value: str) -> ResultItem:
    """One entity where it is reported at step ``t``, its position rounded to centimetres."""
    x, y, z = ctx.position[t, entity].tolist()
    instance = ctx.episode.entities.instance_id[entity]
    return ResultItem(
        instance, str(ctx.types[entity]), (round(x, 2), round(y, 2), round(z, 2)), caption(ctx, entity), value
    )


# -- answers ---------------------------------------------------------------------------------------------
def readable_value(answer_type: str, value: str) -> str:
    """A group's value as words, as balancing compares answers across scenes: types listed with counts,
    receptacle types as names, several values joined ("off and on")."""
    if answer_type == "objects":
        return list_phrase(value.split(", "))
    items = [label(v) if answer_type in NAMES_TYPES else v for v in value.split(", ")]
    return join_and(items) if items else ""


def answer_text(
    ctx: EpisodeContext, q: QuerySpec, answer_type: str, groups: list[AnswerGroup], labels: list[str]
) -> str:
    """The answer: each group's sentence, introduced by its label where it has one (the ambiguous filter's
    phrase naming the group's anchor; "" for none)."""
    parts = [group_sentence(ctx, q, answer_type, g) for g in groups]
    text = "; ".join(f"{lab}: {part}" if lab else part for lab, part in zip(labels, parts))
    return upper_first(text) + "."


def group_sentence(ctx: EpisodeContext, q: QuerySpec, answer_type: str, g: AnswerGroup) -> str:
    answers = phrasing().answers
    if answer_type in ("number", "count"):
        n = int(g.value)
        return answers_for(answers, q, str(n)).format(number=number_word(n))
    if answer_type == "objects":
        return answers["listObjects"].format(items=list_phrase(g.value.split(", ")))
    if answer_type == "yes/no":
        return answers.get(g.value, g.value)
    return object_sentences(ctx, q, answer_type, g)


def answers_for(answers: dict[str, str], q: QuerySpec, value: str) -> str:
    """The sentence of a query's answer, the most specific first: ``name.arg.value``, ``name.arg``, ``name``."""
    keys = [f"{q.name}.{q.arg}.{value}", f"{q.name}.{q.arg}", q.name, "default"]
    return most_specific(answers, keys)


# -- answers about each object -------------------------------------------------------------------------
@dataclass(frozen=True)
class Named:
    """One result item as an answer names it: by its type's name, or told apart from items of its type with
    other values by a description, or counted (``counted``: "two cabinets" rather than "the two cabinets")."""

    name: str
    counted: bool


def object_sentences(ctx: EpisodeContext, q: QuerySpec, answer_type: str, g: AnswerGroup) -> str:
    """One sentence per value, about the items that have it: "the desk lamp was off and the floor lamp was on"."""
    values = [r.value or g.value for r in g.result]
    names = item_names(g.result, values)
    answers = phrasing().answers
    sentences = []
    for value in sorted(set(values)):
        subject, several = subject_phrase([n for n, v in zip(names, values) if v == value])
        text = answers_for(answers, q, value)
        words = label(value) if answer_type in NAMES_TYPES else value.replace("_", " ")
        fields = {"subject": subject, "was": "were" if several else "was", "is": "are" if several else "is"}
        sentences.append(text.format(**fields, value=words, preposition=preposition(ctx, answer_type, value)))
    return join_and(sentences)


def item_names(items: tuple[ResultItem, ...], values: list[str]) -> list[Named]:
    """How each item is named: its type's name where all items of the type share a value; else the shortest
    part of the caption that tells the type's items with different values apart (color, material, both)
    without saying the value itself ("the white drawer was white" says nothing); else counted."""
    nouns = [label(r.type) for r in items]
    names = [Named(noun, False) for noun in nouns]
    for noun in set(nouns):
        mine = [i for i, n in enumerate(nouns) if n == noun]
        if len({values[i] for i in mine}) == 1:
            continue
        adjectives = [items[i].caption.removesuffix(noun).split() for i in mine]
        for pick in (slice(0, 1), slice(1, 2), slice(0, 2)):
            described = [" ".join([*a[pick], noun]) for a in adjectives]
            own = [values[i] for i in mine]
            if all(a[pick] for a in adjectives) and tells_apart(described, own) and not says_value(described, own):
                for i, d in zip(mine, described):
                    names[i] = Named(d, False)
                break
        else:
            for i in mine:
                names[i] = Named(noun, True)
    return names


def says_value(names: list[str], values: list[str]) -> bool:
    """Whether some name says its item's value ("white drawer" for a white drawer)."""
    return any(f" {v} " in f" {n} " for n, v in zip(names, values))


def tells_apart(names: list[str], values: list[str]) -> bool:
    """Whether every name goes with one value only."""
    return all(len({v for m, v in zip(names, values) if m == n}) == 1 for n in names)


def subject_phrase(names: list[Named]) -> tuple[str, bool]:
    """``the desk lamp``, ``the two cups``, ``the apple and the cup``, ``two cabinets``; and whether it is
    plural."""
    counts = Counter(names)
    parts = []
    for named, n in counts.items():
        noun = named.name if n == 1 else plural(named.name)
        if named.counted:
            parts.append(f"{number_word(n)} {noun}")
        else:
            parts.append(f"the {noun}" if n == 1 else f"the {number_word(n)} {noun}")
    return join_and(parts), len(names) > 1


def preposition(ctx: EpisodeContext, answer_type: str, value: str) -> str:
    """Where a thing was, held by a receptacle of type ``value``: "in" what encloses its contents (a
    fridge: the world's rule for "inside"), else "on"."""
    if answer_type != "location":
        return ""
    return "in" if value in set(ctx.types[encloses(ctx)].tolist()) else "on"
