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
from operator import attrgetter
from pathlib import Path
from typing import Any, NamedTuple

import jinja2

from eqagen.core import AnswerGroup, FilterSpec, Program, QuerySpec
from eqagen.predicates.context import EpisodeContext
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
    copied into a plain dict once per template), and with a context made directly: ``new_context`` would also
    list the globals' names again, which only an ``{% import %}`` of a template with other globals reads (this
    environment's templates share one set). The same text, in about a third of the time."""
    env = template.environment
    context = env.context_class(env, {**_template_globals(template), **variables}, template.name, template.blocks)
    try:
        return env.concat(template.root_render_func(context))  # type: ignore[attr-defined]
    except Exception:
        return env.handle_exception()


class Words(dict):
    """A dict of words that templates read as attributes (``v.value``) as well as items (``v["value"]``): as
    instance attributes, jinja2 finds them without first raising (and catching) an AttributeError."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.__dict__.update(self)


def question_template(name: str) -> jinja2.Template:
    qdef = REGISTRY.query(name)
    if qdef.template is not None:
        return source_template(qdef.template)
    return file_template(f"questions/{name}.j2")


# -- filter words -------------------------------------------------------------------------------------
class FilterWords(NamedTuple):
    """One filter's text, naming its anchor or not: its phrase in the natural question, where the phrase goes
    there, and its conjunct in the structured question."""

    slot: str  # "pre" (an adjective before the noun), "post" (after it) or "when" (a time clause)
    rank: int  # adjectives' order: 0 for a state, listed first ("open green cup"), 1 otherwise
    phrase: str
    conjunct: str


def anchor_text(anchor: tuple[float, float, float] | None) -> str:
    """How a grounded text names an anchor, after the filter's value: " (x=.., y=.., z=..)", or ""."""
    return f" {coords(anchor)}" if anchor is not None else ""


def filter_words(ctx: EpisodeContext, spec: FilterSpec, anchor: str = "") -> FilterWords:
    """A filter's words with ``anchor`` (``anchor_text``, "" when ungrounded). A filter without args whose
    phrase is a macro has words that depend on its family, key, value and anchor only: those are cached across
    episodes by that content (bounded: cleared when full); the others (events, receptacles, phrases that may
    read the episode) per episode and spec object."""
    if not spec.args:
        key = (spec.family, spec.key, spec.value, anchor)
        hit = _SHARED_WORDS.get(key)
        if hit is not None:
            return hit
        if REGISTRY.filter(spec.family, spec.key).phrase is None:
            if len(_SHARED_WORDS) >= MAX_CACHED_WORDS:
                _SHARED_WORDS.clear()
            hit = _SHARED_WORDS[key] = _filter_words(ctx, spec, anchor)
            return hit
    return _filter_words(ctx, spec, anchor)


def _filter_words(ctx: EpisodeContext, spec: FilterSpec, anchor: str) -> FilterWords:
    fdef = REGISTRY.filter(spec.family, spec.key)
    rank = 0 if spec.family == "state" else 1
    return FilterWords(fdef.slot, rank, filter_phrase(ctx, spec, anchor), conjunct(ctx, spec, anchor))


def event_text(ctx: EpisodeContext, index: int) -> str:
    """``opened the fridge for the second time`` (no ordinal when it happened once)."""
    ev = ctx.events[index]
    text = f"{verb(ev.kind, past=True)} the {label(ev.type)}"
    return text if ev.n_same == 1 else f"{text} for the {ordinal(ev.ordinal)} time"


def phrase_parts(ctx: EpisodeContext, spec: FilterSpec, anchor: str) -> dict[str, Any]:
    """The readable pieces a filter phrase is built from."""
    agent = spec.value == AGENT
    value = spec.value if spec.family in ("property",) or agent else label(spec.value)
    parts: dict[str, Any] = {
        "value": value,
        "anchor": anchor,
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


def filter_phrase(ctx: EpisodeContext, spec: FilterSpec, anchor: str) -> str:
    """The natural phrase of one filter ("on the countertop (x=.., y=.., z=..)")."""
    parts = phrase_parts(ctx, spec, anchor)
    fdef = REGISTRY.filter(spec.family, spec.key)
    if fdef.phrase is not None:
        template = source_template(fdef.phrase)
        return render(template, f=spec, v=parts, value=parts["value"], anchor=parts["anchor"], ctx=ctx)
    macro = getattr(filter_macros(), f"{spec.family}_{spec.key}", None)
    if macro is not None:
        return str(macro(spec, Words(parts))).strip()
    return f"{spec.key.replace('_', ' ')} {parts['value']}{parts['anchor']}"


def event_name(ctx: EpisodeContext, index: int) -> str:
    ev = ctx.events[index]
    text = f"{ev.kind} {label(ev.type)}"
    return text if ev.n_same == 1 else f"{text} #{ev.ordinal}"


def conjunct(ctx: EpisodeContext, spec: FilterSpec, anchor: str) -> str:
    """One ``(family:key = value)`` part of the structured question."""
    fdef = REGISTRY.filter(spec.family, spec.key)
    if spec.family == "moment" and "event" in spec.args:
        events = [event_name(ctx, spec.args["event"])]
        if "event2" in spec.args:
            events.append(event_name(ctx, spec.args["event2"]))
        return f"(when = {spec.key.replace('_', ' ')} {' and '.join(events)})"
    value = spec.value if spec.family == "property" or spec.value == AGENT else label(spec.value)
    if spec.args.get("receptacle"):
        return f"({spec.family}:{fdef.label.replace('object', label(spec.args['receptacle']))} = {value}{anchor})"
    return f"({spec.family}:{fdef.label} = {value}{anchor})"


MAX_CACHED_WORDS = 65536
_SHARED_WORDS: dict[tuple, FilterWords] = {}


def program_words(ctx: EpisodeContext, program: Program, anchors: dict[int, tuple] | None = None) -> list[FilterWords]:
    """The words of each filter of a program; ``anchors`` maps a filter's position to the coordinates it names."""
    anchors = anchors or {}
    return [filter_words(ctx, f, anchor_text(anchors.get(i))) for i, f in enumerate(program.filters)]


# -- questions ----------------------------------------------------------------------------------------
def program_texts(program: Program, words: list[FilterWords]) -> tuple[str, str]:
    """The canonical natural question and the structured question of a program whose filters say ``words``.
    Cached across episodes: the texts depend on the query, its template and the words only, the same texts
    recur, and rendering costs more than looking them up (bounded: cleared when full)."""
    q = program.query
    source = REGISTRY.query(q.name).template  # a registered template's source (None: the package's file)
    try:
        key = (q.name, q.arg, tuple(sorted(q.args.items())), source, *words)
        hit = _PROGRAM_TEXTS.get(key)
    except TypeError:  # an unhashable query arg: render without the cache
        return _render_texts(q, words)
    if hit is None:
        if len(_PROGRAM_TEXTS) >= MAX_CACHED_TEXTS:
            _PROGRAM_TEXTS.clear()
        hit = _PROGRAM_TEXTS[key] = _render_texts(q, words)
    return hit


MAX_CACHED_TEXTS = 32768
_PROGRAM_TEXTS: dict[tuple, tuple[str, str]] = {}


def _render_texts(q: QuerySpec, words: list[FilterWords]) -> tuple[str, str]:
    np, when = noun_phrase(q, words)
    return _render_question(question_template(q.name), q, np, when), _render_structured(q, words)


def render_question(ctx: EpisodeContext, program: Program, anchors: dict[int, tuple] | None = None) -> str:
    """The canonical natural question; ``anchors`` maps a filter's position to the coordinates it names."""
    return program_texts(program, program_words(ctx, program, anchors))[0]


def noun_phrase(q: QuerySpec, words: list[FilterWords]) -> tuple[NounPhrase, str]:
    """The noun phrase of the subject with its pre and post filters, and the time clause."""
    pre: list[str] = []
    post: list[str] = []
    when: list[str] = []
    slots = {"pre": pre, "post": post, "when": when}
    # adjectives: states before properties ("open green cup"); the program's filters are sorted otherwise
    for w in sorted(words, key=attrgetter("rank")):
        slots[w.slot].append(w.phrase)
    subject = q.args.get("subject")
    when_text = " " + " and ".join(when) if when else ""
    return NounPhrase(pre, label(subject) if subject else "object", post), when_text


class NounPhrase:
    """The subject with its adjectives and post phrases, in the forms question templates read (``np.the``, also
    ``np["the"]``). Each form is made when it is read: a template reads one or two of the five."""

    FORMS = ("something", "bare", "the", "a", "plural")

    def __init__(self, pre: list[str], noun: str, post: list[str]) -> None:
        self._pre = pre
        self._head = " ".join([*pre, noun])
        self._tail = " " + " ".join(post) if post else ""

    @property
    def something(self) -> str:
        """For any object: "something green on the table"."""
        return " ".join(["something", *self._pre]) + self._tail

    @property
    def bare(self) -> str:
        return self._head + self._tail

    @property
    def the(self) -> str:
        return f"the {self._head}{self._tail}"

    @property
    def a(self) -> str:
        return f"{with_article(self._head)}{self._tail}"

    @property
    def plural(self) -> str:
        return f"{plural(self._head)}{self._tail}"

    def __getitem__(self, form: str) -> str:
        if form not in self.FORMS:
            raise KeyError(form)
        return getattr(self, form)


def _render_question(template: jinja2.Template, q: QuerySpec, np: NounPhrase, when: str) -> str:
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
def query_head(q: QuerySpec) -> str:
    if q.name == "count":
        return "countEvents(" + q.args.get("kind", "") + ")" if q.arg == "events" else "countObjects"
    return f"{q.name}({q.arg})" if q.arg else q.name


def render_structured(ctx: EpisodeContext, program: Program, anchors: dict[int, tuple] | None = None) -> str:
    """TAG-EQA's structured question; ``anchors`` as for ``render_question``."""
    return program_texts(program, program_words(ctx, program, anchors))[1]


def _render_structured(q: QuerySpec, words: list[FilterWords]) -> str:
    parts = [w.conjunct for w in words]
    subject = q.args.get("subject")
    if subject:
        parts.insert(0, f"(object = {label(subject)})")
    return render(file_template("structured.j2"), head=query_head(q), conjuncts=parts)


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
    values = [readable_value(answer_type, g.value) for g in groups]
    return answer_text(anchored_words(ctx, program, groups, grounded_index), values)


def anchored_words(
    ctx: EpisodeContext, program: Program, groups: list[AnswerGroup], where: int
) -> list[FilterWords | None]:
    """Per answer group, the words of the filter at position ``where`` naming the group's anchor (None where
    ``where`` is -1 or the group names no anchor): they introduce the groups in the answer, and a grounded
    question asks about one of them."""
    if where < 0:
        return [None] * len(groups)
    spec = program.filters[where]
    return [filter_words(ctx, spec, anchor_text(g.anchor)) if g.anchor is not None else None for g in groups]


def answer_text(anchored: list[FilterWords | None], values: list[str]) -> str:
    """The canonical answer from each group's ``anchored_words`` and readable value."""
    return _answer_text(tuple((w.phrase if w is not None else "", v) for w, v in zip(anchored, values)))


@lru_cache(maxsize=32768)
def _answer_text(rows: tuple[tuple[str, str], ...]) -> str:
    text = render(file_template("answer.j2"), groups=[Words(phrase=p, value=v) for p, v in rows])
    return " ".join(text.split())
