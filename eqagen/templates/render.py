"""Renders programs and structured answers as text with the jinja2 templates of this package.

- ``structured.j2``: TAG-EQA's structured question (``countObjects? (property:color = green) AND ...``);
- ``questions/<query>.j2``: the canonical natural question. Variables: ``q`` (the QuerySpec), ``np``
  (the noun phrase: ``np.the`` "the green cup on the countertop", ``np.a`` "a green cup ...",
  ``np.plural`` "green cups ...", ``np.bare``, ``np.something`` "something green ..." for any object),
  ``when`` (the time clauses, with a leading space, or ""), ``event_verb`` (counting events: "open",
  "pick up"), ``subject`` (readable subject or "object");
- ``filters.j2``: one macro per built-in filter key (``location_on(f, v)``); a filter registered with a
  ``phrase`` uses that jinja2 source instead;
- ``answer.j2``: the canonical answer from the answer groups.

A grounded text names the anchor of the ambiguous filter by its episode-frame coordinates.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import Any

import jinja2

from eqagen.core import AnswerGroup, FilterSpec, Program, QuerySpec
from eqagen.predicates.context import EpisodeContext, spec_key
from eqagen.predicates.registry import REGISTRY
from eqagen.templates.words import coords, label, list_phrase, ordinal, plural, verb, with_article

TEMPLATE_DIR = Path(__file__).parent
AGENT = "you"


def upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


@lru_cache(maxsize=1)
def environment() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATE_DIR)),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        auto_reload=False,  # templates ship with the package; no stat() per render
    )
    env.filters.update(label=label, plural=plural, a=with_article, upper_first=upper_first)
    return env


@lru_cache(maxsize=1)
def filter_macros() -> Any:
    return environment().get_template("filters.j2").module


@lru_cache(maxsize=256)
def source_template(source: str) -> jinja2.Template:
    return environment().from_string(source)


@lru_cache(maxsize=64)
def file_template(name: str) -> jinja2.Template:
    return environment().get_template(name)


@lru_cache(maxsize=256)
def _template_globals(template: jinja2.Template) -> dict[str, Any]:
    return dict(template.globals)


def render(template: jinja2.Template, **variables: Any) -> str:
    """``template.render(**variables)`` without re-merging the environment's globals on every call (they are
    copied into a plain dict once per template): the same text, in about half the time."""
    context = template.new_context({**_template_globals(template), **variables}, shared=True)
    try:
        return template.environment.concat(template.root_render_func(context))  # type: ignore[attr-defined]
    except Exception:
        return template.environment.handle_exception()


class Words(dict):
    """A dict of words that templates read as attributes (``np.the``) as well as items (``np["the"]``): as
    instance attributes, jinja2 finds them without first raising (and catching) an AttributeError."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.__dict__.update(self)


def question_template(name: str) -> jinja2.Template:
    qdef = REGISTRY.query(name)
    if qdef.template is not None:
        return source_template(qdef.template)
    return file_template(f"questions/{name}.j2")


# -- filter phrases -----------------------------------------------------------------------------------
def event_text(ctx: EpisodeContext, index: int) -> str:
    """``opened the fridge for the second time`` (no ordinal when it happened once)."""
    ev = ctx.events[index]
    text = f"{verb(ev.kind, past=True)} the {label(ev.type)}"
    return text if ev.n_same == 1 else f"{text} for the {ordinal(ev.ordinal)} time"


def phrase_parts(ctx: EpisodeContext, spec: FilterSpec, anchor: tuple | None) -> dict[str, Any]:
    """The readable pieces a filter phrase is built from."""
    agent = spec.value == AGENT
    value = spec.value if spec.family in ("property",) or agent else label(spec.value)
    parts: dict[str, Any] = {
        "value": value,
        "anchor": f" {coords(anchor)}" if anchor is not None else "",
        "receptacle": label(spec.args.get("receptacle", "")),
        "agent": agent,
        "event": "",
        "event2": "",
    }
    if "event" in spec.args:
        parts["event"] = event_text(ctx, spec.args["event"])
    if "event2" in spec.args:
        parts["event2"] = event_text(ctx, spec.args["event2"])
    return parts


def filter_phrase(ctx: EpisodeContext, spec: FilterSpec, anchor: tuple | None = None) -> str:
    """The natural phrase of one filter ("on the countertop (x=.., y=.., z=..)")."""
    return ctx.per_spec("phrase", spec, anchor, lambda: _render_phrase(ctx, spec, anchor))


def _render_phrase(ctx: EpisodeContext, spec: FilterSpec, anchor: tuple | None) -> str:
    parts = phrase_parts(ctx, spec, anchor)
    fdef = REGISTRY.filter(spec.family, spec.key)
    if fdef.phrase is not None:
        template = source_template(fdef.phrase)
        return render(template, f=spec, v=parts, value=parts["value"], anchor=parts["anchor"], ctx=ctx)
    macro = getattr(filter_macros(), f"{spec.family}_{spec.key}", None)
    if macro is not None:
        return _macro_phrase(macro, spec, parts)
    return f"{spec.key.replace('_', ' ')} {parts['value']}{parts['anchor']}"


def _macro_phrase(macro: Any, spec: FilterSpec, parts: dict[str, Any]) -> str:
    """A built-in macro's phrase, cached across episodes: a macro reads only the spec and the readable parts,
    and the same phrase recurs in many scenes (bounded: cleared when full)."""
    key = (spec_key(spec), tuple(parts.items()))
    hit = _MACRO_PHRASES.get(key)
    if hit is None:
        if len(_MACRO_PHRASES) >= MAX_CACHED_PHRASES:
            _MACRO_PHRASES.clear()
        hit = _MACRO_PHRASES[key] = str(macro(spec, Words(parts))).strip()
    return hit


MAX_CACHED_PHRASES = 65536
_MACRO_PHRASES: dict[tuple, str] = {}


# -- questions ----------------------------------------------------------------------------------------
def noun_phrase(ctx: EpisodeContext, program: Program, anchors: dict[int, tuple]) -> tuple[dict[str, str], str]:
    """The noun phrase of the subject with its pre and post filters, and the time clause."""
    pre, post, when = [], [], []
    # adjectives: states before properties ("open green cup"); the program's filters are sorted otherwise
    order = sorted(range(len(program.filters)), key=lambda i: program.filters[i].family != "state")
    for i in order:
        spec = program.filters[i]
        slot = REGISTRY.filter(spec.family, spec.key).slot
        text = filter_phrase(ctx, spec, anchors.get(i))
        {"pre": pre, "post": post, "when": when}[slot].append(text)
    subject = program.query.args.get("subject")
    noun = label(subject) if subject else "object"
    head = " ".join([*pre, noun])
    tail = "".join(f" {p}" for p in post)
    np = {
        "something": " ".join(["something", *pre]) + tail,  # for "any object": "something green on the table"
        "bare": head + tail,
        "the": f"the {head}{tail}",
        "a": f"{with_article(head)}{tail}",
        "plural": f"{plural(head)}{tail}",
    }
    return np, "".join(f" {w}" if i == 0 else f" and {w}" for i, w in enumerate(when))


def render_question(ctx: EpisodeContext, program: Program, anchors: dict[int, tuple] | None = None) -> str:
    """The canonical natural question; ``anchors`` maps a filter's position to the coordinates it names."""
    np, when = noun_phrase(ctx, program, anchors or {})
    q = program.query
    template = question_template(q.name)
    try:
        return _question_text(template, q.name, q.arg, tuple(sorted(q.args.items())), tuple(np.items()), when)
    except TypeError:  # an unhashable query arg: render without the cache
        return _render_question(template, q, np, when)


@lru_cache(maxsize=32768)
def _question_text(template: jinja2.Template, name: str, arg: str, args: tuple, np: tuple, when: str) -> str:
    """The rendered question, cached: the same query and phrases recur across episodes (the text depends on
    nothing else), and rendering a jinja2 template costs more than building its inputs."""
    return _render_question(template, QuerySpec(name, arg, dict(args)), Words(np), when)


def _render_question(template: jinja2.Template, q: QuerySpec, np: dict[str, str], when: str) -> str:
    subject = q.args.get("subject")
    text = render(
        template,
        q=q,
        np=np,
        when=when,
        event_verb=verb(q.args.get("kind", "")),
        subject=label(subject) if subject else "object",
    )
    return " ".join(text.split())


# -- structured question ------------------------------------------------------------------------------
def query_head(program: Program) -> str:
    q = program.query
    if q.name == "count":
        return "countEvents(" + q.args.get("kind", "") + ")" if q.arg == "events" else "countObjects"
    return f"{q.name}({q.arg})" if q.arg else q.name


def event_name(ctx: EpisodeContext, index: int) -> str:
    ev = ctx.events[index]
    text = f"{ev.kind} {label(ev.type)}"
    return text if ev.n_same == 1 else f"{text} #{ev.ordinal}"


def conjunct(ctx: EpisodeContext, spec: FilterSpec, anchor: tuple | None) -> str:
    """One ``(family:key = value)`` part of the structured question."""
    fdef = REGISTRY.filter(spec.family, spec.key)
    where = f" {coords(anchor)}" if anchor is not None else ""
    if spec.family == "moment" and "event" in spec.args:
        events = [event_name(ctx, spec.args["event"])]
        if "event2" in spec.args:
            events.append(event_name(ctx, spec.args["event2"]))
        return f"(when = {spec.key.replace('_', ' ')} {' and '.join(events)})"
    value = spec.value if spec.family == "property" or spec.value == AGENT else label(spec.value)
    if spec.args.get("receptacle"):
        return f"({spec.family}:{fdef.label.replace('object', label(spec.args['receptacle']))} = {value}{where})"
    return f"({spec.family}:{fdef.label} = {value}{where})"


def render_structured(ctx: EpisodeContext, program: Program, anchors: dict[int, tuple] | None = None) -> str:
    anchors = anchors or {}
    parts = [conjunct(ctx, f, anchors.get(i)) for i, f in enumerate(program.filters)]
    subject = program.query.args.get("subject")
    if subject:
        parts.insert(0, f"(object = {label(subject)})")
    return _structured_text(query_head(program), tuple(parts))


@lru_cache(maxsize=32768)
def _structured_text(head: str, conjuncts: tuple[str, ...]) -> str:
    return render(file_template("structured.j2"), head=head, conjuncts=list(conjuncts))


# -- answers ------------------------------------------------------------------------------------------
@lru_cache(maxsize=32768)
def readable_value(answer_type: str, value: str) -> str:
    """The answer value as words: types listed with counts, receptacle types as names."""
    if answer_type == "objects":
        return list_phrase(value.split(", "))
    items = value.split(", ")
    if answer_type == "location":
        items = [label(v) for v in items]
    if len(items) <= 1:
        return items[0] if items else ""
    return ", ".join(items[:-1]) + " and " + items[-1]


def render_answer(
    ctx: EpisodeContext, program: Program, groups: list[AnswerGroup], answer_type: str, grounded_index: int
) -> str:
    """The canonical answer. ``grounded_index`` is the ambiguous filter's position (-1: none): each
    group is then introduced by that filter's phrase naming its anchor."""
    rows = []
    for g in groups:
        phrase = ""
        if grounded_index >= 0 and g.anchor is not None:
            phrase = filter_phrase(ctx, program.filters[grounded_index], g.anchor)
        rows.append((phrase, readable_value(answer_type, g.value)))
    return _answer_text(tuple(rows))


@lru_cache(maxsize=32768)
def _answer_text(rows: tuple[tuple[str, str], ...]) -> str:
    text = render(file_template("answer.j2"), groups=[Words(phrase=p, value=v) for p, v in rows])
    return " ".join(text.split())
