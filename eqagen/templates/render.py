"""Question text: every text form of a filter, the natural question and TAG-EQA's structured question.

A question's text depends on its program alone (and, when grounded, on the anchor it names): types,
values and events are named by what the program holds, never by instance ids, so the same program reads
the same in every scene. The words come from the phrasing data (``phrasing.yaml``, ``phrasing.py``):

- a filter's text has two forms, each made by one function: ``filter_phrase``, its phrase in the natural
  question and in an answer's group label ("on the countertop at (x=.., y=.., z=..)"), and ``conjunct``, its
  TAG-EQA form in the structured question and in an answer group's predicate ("(location:on the object =
  countertop (x=.., y=.., z=..))");
- ``question_text``: the natural question, in the variant its ``Wording`` says;
- ``structured_question``: TAG-EQA's form (``countObjects? (property:color = green) AND ...``), which is
  also the scene-independent form the wording is drawn from.

A filter or query that a world family registers with its own jinja2 source (``phrases``, ``template``)
and that the phrasing data does not list is rendered from that source.
"""

from __future__ import annotations

from functools import lru_cache
from operator import attrgetter
from typing import Any, NamedTuple

import jinja2

from eqagen.core import FilterSpec, Program, QuerySpec
from eqagen.predicates.registry import REGISTRY
from eqagen.templates.phrasing import PHRASING_FILE, Wording, filter_phrases, phrasing, question_variants, wording_for
from eqagen.templates.words import coords, label, ordinal, plural, upper_first, verb, with_article

AGENT = "you"
Point = tuple[float, float, float]


# -- jinja2, for sources a world family registers ----------------------------------------------------
@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    return jinja2.Environment(undefined=jinja2.StrictUndefined, autoescape=False, keep_trailing_newline=False)


@lru_cache(maxsize=256)
def registered_template(source: str) -> jinja2.Template:
    """A registered jinja2 source, compiled once per process."""
    return environment().from_string(source)


# -- events ------------------------------------------------------------------------------------------
def event_parts(name: str) -> tuple[str, str, int]:
    """An event's canonical name (``open Fridge``, ``open Fridge #2``: what a moment filter's value holds)
    as (kind, entity type, ordinal; 0 when the event happened once)."""
    base, _, number = name.partition(" #")
    kind, _, type_name = base.partition(" ")
    return kind, type_name, int(number) if number else 0


def event_phrase(name: str) -> str:
    """``opened the fridge`` / ``opened the fridge for the second time``."""
    kind, type_name, n = event_parts(name)
    data = phrasing()
    text = data.event_ordinal if n else data.event
    return text.format(verb=verb(kind, past=True), object=label(type_name), ordinal=ordinal(n))


def event_label(name: str) -> str:
    """An event in the structured question: ``open fridge`` / ``open fridge #2``."""
    kind, type_name, n = event_parts(name)
    return f"{kind} {label(type_name)}" + (f" #{n}" if n else "")


def event_names(spec: FilterSpec) -> list[str]:
    """The events a moment filter names: one, or two for ``between`` (its value is ``"E1, E2"``)."""
    return spec.value.split(", ") if "event2" in spec.args else [spec.value]


# -- filters -----------------------------------------------------------------------------------------
class FilterText(NamedTuple):
    """One filter's words in the natural question: where its phrase goes, the adjectives' order, the phrase."""

    slot: str  # "pre" (an adjective before the noun), "post" (after it) or "when" (a time clause)
    rank: int  # order in its slot: states first ("open green cup"), then properties ("made of wood and on ...")
    phrase: str


def readable_value(spec: FilterSpec) -> str:
    """A filter's value in words: a property as it is, an object type as a name (``SinkBasin`` -> sink basin)."""
    return spec.value if spec.family == "property" or spec.value == AGENT else label(spec.value)


def conjunct(spec: FilterSpec, anchor: Point | None = None) -> str:
    """TAG-EQA's form of one filter, for the structured question and an answer group's predicate:
    ``(location:on the object = countertop (x=1.00, y=0.90, z=2.00))``, ``(when = after open fridge #2)``."""
    if spec.family == "moment":
        return f"(when = {spec.key.replace('_', ' ')} {' and '.join(event_label(n) for n in event_names(spec))})"
    if spec.family == "situation":  # TAG-EQA's situational "where = a chair is in front of a dining table"
        where = f" {coords(anchor)}" if anchor is not None else ""
        relation = REGISTRY.filter(spec.family, spec.key).label
        return f"(where = {label(spec.args['figure'])} {relation} {readable_value(spec)}{where})"
    key_text = REGISTRY.filter(spec.family, spec.key).label
    if spec.args.get("receptacle"):
        key_text = key_text.replace("object", label(spec.args["receptacle"]))
    where = f" {coords(anchor)}" if anchor is not None else ""
    return f"({spec.family}:{key_text} = {readable_value(spec)}{where})"


def phrase_fields(spec: FilterSpec, anchor: Point | None) -> dict[str, str]:
    """The readable pieces a filter phrase is made of."""
    events = [event_phrase(n) for n in event_names(spec)] if spec.family == "moment" else []
    return {
        "value": readable_value(spec),
        "anchor": f" at {coords(anchor)}" if anchor is not None else "",
        "receptacle": label(spec.args.get("receptacle", "")),
        "event": events[0] if events else "",
        "event2": events[1] if len(events) > 1 else "",
        "a_figure": with_article(label(spec.args["figure"])) if "figure" in spec.args else "",
    }


def filter_phrase(spec: FilterSpec, variant: int, anchor: Point | None = None) -> str:
    """The natural phrase of one filter in one of its variants ("on the countertop at (x=.., y=.., z=..)")."""
    fields = phrase_fields(spec, anchor)
    phrases = filter_phrases(spec)
    if phrases is not None:
        return phrases.texts[variant % len(phrases.texts)].format(**fields)
    source = REGISTRY.filter(spec.family, spec.key).phrase
    if source is None:
        raise ValueError(f"filter {spec.family}:{spec.key} has no phrase: add 'filters.{spec.family}.{spec.key}' "
                         f"to {PHRASING_FILE} or register it with phrases=")  # fmt: skip
    return registered_template(source).render(f=spec, v=fields, **fields).strip()


def filter_text(spec: FilterSpec, variant: int = 0, anchor: Point | None = None) -> FilterText:
    """One filter's words in the natural question, naming ``anchor`` (its coordinates) where given."""
    phrases = filter_phrases(spec)
    slot = phrases.slot if phrases is not None and phrases.slot else REGISTRY.filter(spec.family, spec.key).slot
    rank = {"state": 0, "property": 1}.get(spec.family, 2)
    return FilterText(slot, rank, filter_phrase(spec, variant, anchor))


# -- questions ---------------------------------------------------------------------------------------
class NounPhrase:
    """The noun with the adjectives and post phrases of its filters, in the forms question texts read:
    ``plural`` ("white cups on the table"), ``bare`` ("white cup on the table", after "each") and ``a`` ("a
    white cup on the table"; "something white on the table" for any object)."""

    def __init__(self, pre: list[str], noun: str | None, post: str) -> None:
        self._pre, self._noun = pre, noun
        self._head = " ".join([*pre, noun or "object"])
        self._tail = post

    @property
    def plural(self) -> str:
        return f"{plural(self._head)}{self._tail}"

    @property
    def bare(self) -> str:
        return self._head + self._tail

    @property
    def a(self) -> str:
        if self._noun is None:
            return " ".join(["something", *self._pre]) + self._tail
        return f"{with_article(self._head)}{self._tail}"


def phrase_slots(words: list[FilterText]) -> tuple[list[str], str, str]:
    """The adjectives before the noun, the phrases after it ("above the cabinet and under the countertop":
    "and" keeps the second from reading as said of the cabinet) and the time clause (" after you ...")."""
    slots: dict[str, list[str]] = {"pre": [], "post": [], "when": []}
    for w in sorted(words, key=attrgetter("rank")):
        slots[w.slot].append(w.phrase)
    post, when = (" " + " and ".join(slots[s]) if slots[s] else "" for s in ("post", "when"))
    return slots["pre"], post, when


def question_fields(q: QuerySpec, words: list[FilterText]) -> dict[str, Any]:
    """What a question text reads (see ``questions`` in phrasing.yaml)."""
    subject = q.args.get("subject")
    pre, post, when = phrase_slots(words)
    return {
        "np": NounPhrase(pre, label(subject) if subject else None, post),
        "kind": NounPhrase(pre, label(q.arg), post),
        "when": when,
        "arg": q.arg.replace("_", " "),
        "event_verb": verb(q.args.get("kind", "")),
        "either_or": phrasing().either_or.get(q.arg, f"{q.arg} or not"),
        "subject": label(subject) if subject else "object",
        "q": q,
    }


def render_question(q: QuerySpec, words: list[FilterText], variant: int) -> str:
    """The natural question of query ``q`` whose filters say ``words``, in text variant ``variant``."""
    fields = question_fields(q, words)
    texts = question_variants(q)
    if texts is not None:
        text = texts[variant % len(texts)].format(**fields)
    else:
        source = REGISTRY.query(q.name).template
        if source is None:
            raise ValueError(f"query {q.name} has no question: add 'questions.{q.name}' to {PHRASING_FILE} "
                             "or register it with template=")  # fmt: skip
        text = registered_template(source).render(**fields)
    return upper_first(" ".join(text.split()))


def program_wording(program: Program) -> Wording:
    """The wording of a program's question: drawn with its own generator, seeded by its ungrounded
    structured question (``phrasing.wording_for``)."""
    return wording_for(program.query, program.filters, structured_question(program))


def program_words(program: Program, wording: Wording, anchors: dict[int, Point] | None = None) -> list[FilterText]:
    """Each filter's text in its variant; ``anchors`` maps a filter's position to the coordinates it names."""
    anchors = anchors or {}
    return [filter_text(f, wording.filters[i], anchors.get(i)) for i, f in enumerate(program.filters)]


def question_text(program: Program, wording: Wording, anchors: dict[int, Point] | None = None) -> str:
    """The natural question of ``program`` in ``wording``, naming ``anchors`` (grounded) where given."""
    return render_question(program.query, program_words(program, wording, anchors), wording.question)


# -- structured question -----------------------------------------------------------------------------
def query_head(q: QuerySpec) -> str:
    if q.name == "count":
        return "countEvents(" + q.args.get("kind", "") + ")" if q.arg == "events" else "countObjects"
    return f"{q.name}({q.arg})" if q.arg else q.name


def structured_question(program: Program, anchors: dict[int, Point] | None = None) -> str:
    """TAG-EQA's structured question; ``anchors`` as for ``question_text``. Ungrounded, it is the program's
    scene-independent form that its wording is drawn from."""
    anchors = anchors or {}
    parts = [conjunct(f, anchors.get(i)) for i, f in enumerate(program.filters)]
    subject = program.query.args.get("subject")
    if subject:
        parts.insert(0, f"(object = {label(subject)})")
    return f"{query_head(program.query)}? {' AND '.join(parts)}"
