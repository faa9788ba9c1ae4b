"""The fact validator: a paraphrase must keep every essential fact of its item and add none.

Facts are derived from the item's structured answer and program: numbers (answer counts, numbers in
filters), coordinates (anchors and result positions), object types (with synonyms), colors, materials,
utility and other open phrases (by their content words), states, temporal relations, event ordinals and
yes/no. A fact is *essential on a side* (question or answer) when the template text of that side states
it; the paraphrase of that side must state it too. A paraphrase may also not mention a number, color,
material, state, relation, ordinal, negation or known object type that its side of the item does not
have: that is how a changed fact ("open" -> "closed", "3" -> "4") is caught even when the original word
survives elsewhere. Temporal relations are bound to the objects of their clause, and spatial relations
(left/right, in front of/behind, above/under, on/inside) to the object that follows them, so swapping
which event comes before and which after, or which object is left of which, is caught too. A
quantity hedge ("more than 3", "several") is a word the item does not have; an object or number stated
N times (a list) must be stated N times; and a paraphrase may add no link, markup or instruction
(:mod:`eqagen.paraphrase.text_checks`).

:func:`check_paraphrase` runs :data:`SIDE_CHECKS`, small named checks each giving its own reasons.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property

from eqagen.core.records import QARecord
from eqagen.paraphrase import lexicon as lx
from eqagen.paraphrase.text_checks import added_text, kinds_in

SIDES = ("question", "answer")
KINDS = (
    "type", "number", "coordinate", "color", "material", "utility", "value", "state", "temporal", "relation",
    "direction", "ordinal", "polarity", "hedge", "viewpoint",
)  # fmt: skip
PHRASE_KINDS = ("utility", "value")  # open phrases, matched by their content words
WORD_KINDS = ("color", "material", "state", "temporal", "direction", "polarity", "hedge", "viewpoint")
# Containment may be rephrased without its preposition ("the chairs in the kitchen" -> "the chairs the
# kitchen has"): kept while its object is named and bound to no other relation. Directions may not.
CONTAINMENT = frozenset({"on", "inside"})
AGENT = frozenset({"you"})  # the object of "to your left", "in front of you"
RELATION_REACH = 4  # words at most between a relation and its object ("under the closed white drawer")
NUMBER_TOL = 0.006  # numbers printed with two decimals may be re-printed with more or fewer zeros
LOCATE_TOL = 0.051  # structure-to-template match: the template may round coordinates to one decimal
_YES = frozenset({"yes", "true", "1"})
_NO = frozenset({"no", "false", "0"})
_YES_NO_TYPES = ("yes/no", "yesno", "bool", "boolean")
_NUMBER_TYPES = ("number", "count")


@dataclass(frozen=True)
class Fact:
    """One fact of an item. ``value`` is a canonical id, a number, a coordinate triple or (for object
    types) the set of types a mention may name."""

    kind: str  # one of KINDS
    label: str  # how a reason names it
    value: object
    origin: str  # program, answer (the structure) or text (only the template text states it)
    sides: tuple[str, ...] = ()  # where the template text states it: these make it essential


Binding = tuple[str, frozenset[frozenset[str]]]  # (temporal relation, the object mentions of its clause)
Relation = tuple[str, frozenset[str]]  # (spatial relation, the types its object may name)
READ_KINDS = (*WORD_KINDS, "ordinal")  # the kinds a text is read for as words, besides types and numbers


class Reading:
    """One side's text as the validator reads it, given the item's types: each scan made once, when first
    needed, for every fact and check that reads it (a check reads its text for many facts)."""

    def __init__(self, text: str, types: frozenset[str], side: str = "question", bare_states: bool = False):
        self.text, self.types, self.side, self.bare_states = text, types, side, bare_states

    @cached_property
    def norm(self) -> lx.Normalized:
        """The text normalised once: every scan below reads this."""
        return lx.normalize_text(self.text)

    @cached_property
    def _number_mentions(self) -> list[tuple[float, bool]]:
        return lx.number_mentions(self.norm)

    @cached_property
    def numbers(self) -> list[float]:
        return [value for value, _ in self._number_mentions]

    @cached_property
    def firm_numbers(self) -> list[float]:
        """The numbers, without the words that are numbers only sometimes ("one", "once")."""
        return [value for value, ambiguous in self._number_mentions if not ambiguous]

    @cached_property
    def type_spans(self) -> list[tuple[int, frozenset[str]]]:
        return lx.type_spans(self.norm, self.types)

    @cached_property
    def mentions(self) -> list[frozenset[str]]:
        """For every object-type mention, the types it can name."""
        return [owners for _, owners in self.type_spans]

    @property
    def _bare(self) -> bool:
        """Whether "on" and "off" alone are states here (the answer of a state query)."""
        return self.side == "answer" and self.bare_states

    @cached_property
    def spans(self) -> dict[str, list[lx.Span]]:
        """The spans of the words of each vocabulary of :data:`WORD_KINDS` but polarity (states as this side
        reads them), of the quantity hedges and of the viewpoint phrases."""
        vocabularies = [k for k in WORD_KINDS if k not in ("polarity", "hedge", "viewpoint")]
        spans = {k: lx.scan_spans("bare_state" if k == "state" and self._bare else k, self.norm) for k in vocabularies}
        return spans | {"hedge": list(lx.hedge_spans(self.norm)), "viewpoint": list(lx.viewpoint_spans(self.norm))}

    @cached_property
    def words(self) -> dict[str, list]:
        """The canonical values of each of :data:`READ_KINDS`, as this side reads them (a state query's answer
        may be a bare "on" / "off")."""
        words = {kind: [canon for _, _, canon in spans] for kind, spans in self.spans.items()}
        return words | {"polarity": lx.scan("polarity", self.norm), "ordinal": lx.scan_ordinals(self.norm)}

    @cached_property
    def named_types(self) -> list[str]:
        """Every type a mention can name."""
        return [t for owners in self.mentions for t in owners]

    def values(self, kind: str) -> list:
        """The canonical values of ``kind`` (one of :data:`READ_KINDS`, or ``type``: :attr:`named_types`)."""
        return self.named_types if kind == "type" else self.words[kind]

    @cached_property
    def relations(self) -> list[Relation]:
        """Each spatial relation with the object it is about: the first object named within
        :data:`RELATION_REACH` words after it, in the same clause ("to the left of the bowl" -> ("left",
        {Bowl})), or the agent ("to your left"). A relation word with no object near ("the one on the left",
        "over the episode") is not one."""
        pairs = []
        known = {kind: spans for kind, spans in self.spans.items() if kind != "state" or not self._bare}
        for _, end, relation, names_agent in lx.relation_spans(self.norm, known):
            target = AGENT if names_agent else _object_after(self.norm, end, self.type_spans)
            if target is not None:
                pairs.append((relation, target))
        return pairs

    @cached_property
    def added_kinds(self) -> frozenset[str]:
        """The kinds of text a rewrite may not add that this text has (:func:`text_checks.kinds_in`)."""
        return kinds_in(self.text)

    @cached_property
    def stems(self) -> Counter[str]:
        """How often each word stem occurs."""
        return lx.stem_counts(self.norm)


@dataclass
class ItemFacts:
    """The facts of one item and, per side, what a paraphrase of that side may mention."""

    facts: list[Fact]
    types: frozenset[str]  # every type the item has (extends the type vocabulary)
    allowed: dict[str, dict[str, set]] = field(default_factory=dict)  # side -> kind -> values
    numbers: dict[str, list[float]] = field(default_factory=dict)  # side -> numbers it may mention
    bare_states: bool = False  # a state query: its answer may be a bare "on" / "off"
    bindings: dict[str, list[Binding]] = field(default_factory=dict)  # side -> temporal relations' objects
    readings: dict[str, Reading] = field(default_factory=dict)  # side -> the template text (``.text``), read

    @property
    def essential(self) -> list[Fact]:
        return [f for f in self.facts if f.sides]


@dataclass(frozen=True)
class Verdict:
    ok: bool
    reasons: tuple[str, ...] = ()

    @property
    def reason(self) -> str:
        return "; ".join(self.reasons)


# ---- facts of the structure: (kind, value, origin) -----------------------------------------------

Structural = list[tuple[str, object, str]]
_TYPE_TOKEN = re.compile(r"\b[A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)*(?:#\d+)?\b")


def _types_in(text: str) -> set[str]:
    found = {t.split("#")[0] for t in _TYPE_TOKEN.findall(text or "")}
    return {t for t in found if t.lower() not in lx.COLORS and t.lower() not in _YES | _NO}


def _arg_types(args: dict) -> set[str]:
    return {v for k, v in args.items() if k in ("type", "object_type", "target_type", "figure") and isinstance(v, str)}


_NAMED_OBJECT_FAMILIES = ("location", "position", "region")
# Answer types whose values are not names of things.
_NOT_NAMES = (*_YES_NO_TYPES, *_NUMBER_TYPES, "color", "material", "utility", "state", "")


def _named_object(family: str, value: str) -> str | None:
    """The object a filter names in plain words: ``wolf`` (position), ``pass bookshelf`` -> ``bookshelf``
    (moment: event kind, then object), ``enter_region dining room`` -> ``dining room``."""
    if family in _NAMED_OBJECT_FAMILIES:
        name = value
    elif family in ("moment", "temporal") and " " in value.strip():
        name = value.strip().split(" ", 1)[1]
    else:
        return None
    name = re.sub(r"\s*(#\d+|\(x=[^)]*\))", "", name).strip()
    return name if name and name.lower() not in ("you", "agent") else None


def _structural_types(record: QARecord) -> Structural:
    prog = record.program
    program = _arg_types(prog.query.args) | _types_in(prog.query.arg)
    program |= {t for v in prog.query.args.values() if isinstance(v, str) for t in _types_in(v)}
    program |= {v for k, v in prog.query.args.items() if k == "subject" and isinstance(v, str)}
    for f in prog.filters:
        program |= _types_in(f.value) | _arg_types(f.args)
        named = _named_object(f.family, f.value)
        if named and not _TYPE_TOKEN.fullmatch(named):
            program.add(named)
    program |= {t for g in record.structured_answer for t in _types_in(g.predicate)}
    answer = {item.type for g in record.structured_answer for item in g.result}
    if record.answer_type not in _NOT_NAMES:  # objects, locations, rooms, biomes: the value names them
        for g in record.structured_answer:
            answer |= {n for n in (_named_object("location", part) for part in g.value.split(",")) if n}
    return [("type", t, "program") for t in sorted(program)] + [("type", t, "answer") for t in sorted(answer - program)]


def _state_of(key: str, value: str) -> str | None:
    canon = lx.STATE_KEYS.get(key.lower().replace(" ", "_"))
    val = value.strip().lower()
    if val in lx.BARE_STATES:
        return lx.BARE_STATES[val]
    if canon and val in _YES:
        return canon
    if canon and val in _NO:
        return lx.STATE_ANTONYMS.get(canon)
    found = lx.scan("state", value) or lx.scan("state", key)
    return found[0] if found else canon


def _structural_words(record: QARecord) -> Structural:
    """States, colors, temporal relations, ordinals and yes/no of the program and the answer."""
    out: Structural = []
    for f in record.program.filters:
        if f.family == "state":
            out.append(("state", _state_of(f.key, f.value), "program"))
        if f.family in ("moment", "temporal"):
            key = f.key.lower().replace(" ", "_")
            known = key if key in set(lx.TEMPORAL.values()) else (lx.scan("temporal", f.key) or [key])[0]
            out.append(("temporal", known, "program"))
        out += [("color", c, "program") for c in lx.scan("color", f.value)]
        out += [("material", m, "program") for m in lx.scan("material", f.value)]
        if f.key == "utility" and lx.content_stems(f.value):
            out.append(("utility", lx.content_stems(f.value), "program"))
        out += [("ordinal", o, "program") for o in lx.scan_ordinals(f.value)]  # "the second time you ..."
    query = record.program.query
    if query.name == "getState" and record.answer_type not in _YES_NO_TYPES and lx.STATE_KEYS.get(query.arg.lower()):
        asked = lx.STATE_KEYS[query.arg.lower()]  # "switched on or off?": both may be named in the question
        out += [("state", asked, "program"), ("state", lx.STATE_ANTONYMS.get(asked, ""), "program")]
    for g in record.structured_answer:
        if query.name == "getState":
            out.append(("state", _state_of(query.arg, g.value), "answer"))
        for kind in ("color", "material"):
            if query.arg == kind or record.answer_type == kind:
                out += _property_answer(kind, g.value)
        if (query.arg == "utility" or record.answer_type == "utility") and lx.content_stems(g.value):
            out.append(("utility", lx.content_stems(g.value), "answer"))
        if record.answer_type in _YES_NO_TYPES and g.value.strip().lower() in _YES | _NO:
            out.append(("polarity", "yes" if g.value.strip().lower() in _YES else "no", "answer"))
    return [fact for fact in out if fact[1]]


def _property_answer(kind: str, value: str) -> Structural:
    """The colors or materials of an answer value; a part the vocabulary does not know ("food",
    "light gray concrete") becomes a phrase fact, so that the answer still has to state it."""
    out: Structural = []
    for part in re.split(r",| and ", value):
        found = lx.scan(kind, part)
        if found:
            out += [(kind, v, "answer") for v in found]
        elif lx.content_stems(part):
            out.append(("value", lx.content_stems(part), "answer"))
    return out


def _structural_numbers(record: QARecord) -> Structural:
    out: Structural = []
    for f in record.program.filters:
        out += [("number", n, "program") for n in lx.scan_numbers(f.value, include_ambiguous=False)]
    if record.answer_type in _NUMBER_TYPES:
        out += [("number", n, "answer") for g in record.structured_answer for n in lx.scan_numbers(g.value)]
    anchor_origin = "program" if record.grounded else "answer"
    for g in record.structured_answer:
        if g.anchor is not None:
            out.append(("coordinate", tuple(float(c) for c in g.anchor), anchor_origin))
        out += [("coordinate", tuple(float(c) for c in item.position), "answer") for item in g.result]
    return out


# ---- where the template text states each fact ----------------------------------------------------


def _near(values: list[float], target: float, tol: float) -> bool:
    return any(abs(v - target) <= tol for v in values)


def _find_triple(numbers: list[float], triple: tuple[float, ...], tol: float) -> tuple[float, ...] | None:
    """The printed numbers matching ``triple`` in order (consecutive), or None."""
    for i in range(len(numbers) - 2):
        window = numbers[i : i + 3]
        if all(abs(a - b) <= tol for a, b in zip(window, triple)):
            return tuple(window)
    return None


def _stated_numeric(kind: str, value: object, readings: dict[str, Reading]) -> list[Fact]:
    """Coordinates and numbers: one fact per side stating it, valued as printed there."""
    facts = []
    for side, reading in readings.items():
        printed = reading.numbers
        if kind == "coordinate":
            found = _find_triple(printed, value, LOCATE_TOL)  # type: ignore[arg-type]
            if found is not None:
                label = "(" + ", ".join(f"{c:g}" for c in found) + ")"
                facts.append(Fact("coordinate", label, found, "", (side,)))
        elif _near(printed, float(value), NUMBER_TOL):  # type: ignore[arg-type]
            facts.append(Fact("number", f"{float(value):g}", float(value), "", (side,)))  # type: ignore[arg-type]
    return facts


def _locate(structural: Structural, readings: dict[str, Reading]) -> list[Fact]:
    facts: list[Fact] = []
    for kind, value, origin in structural:
        if kind in ("number", "coordinate"):
            stated = _stated_numeric(kind, value, readings)
            facts += [Fact(f.kind, f.label, f.value, origin, f.sides) for f in stated]
            if not stated:
                facts.append(Fact(kind, str(value), value, origin))
            continue
        if kind in PHRASE_KINDS:  # an open phrase: stated where all its content words are, in any inflection
            sides = tuple(s for s in SIDES if set(value) <= readings[s].stems.keys())  # type: ignore[call-overload]
            facts.append(Fact(kind, " ".join(value), value, origin, sides))  # type: ignore[arg-type]
            continue
        sides = tuple(s for s in SIDES if value in readings[s].values(kind))
        value = frozenset({value}) if kind == "type" else value
        facts.append(Fact(kind, str(next(iter(value)) if kind == "type" else value), value, origin, sides))
    return facts


def _text_only_facts(facts: list[Fact], readings: dict[str, Reading], types: frozenset[str]) -> list[Fact]:
    """What the template text states that the structure does not name (kept: the text says it)."""
    known = {(f.kind, f.value) for f in facts}
    coordinate_parts = [c for f in facts if f.kind == "coordinate" and f.sides for c in f.value]  # type: ignore[attr-defined]
    out: list[Fact] = []
    for side, reading in readings.items():
        for n in reading.firm_numbers:
            if not _near(coordinate_parts, n, NUMBER_TOL) and ("number", n) not in known:
                out.append(Fact("number", f"{n:g}", n, "text", (side,)))
        for kind in READ_KINDS:
            out += [Fact(kind, str(v), v, "text", (side,)) for v in reading.values(kind) if (kind, v) not in known]
        for owners in reading.mentions:
            if not owners & types:
                out.append(Fact("type", "/".join(sorted(owners)), owners, "text", (side,)))
    return out


def _merge(facts: list[Fact]) -> list[Fact]:
    merged: dict[tuple[str, object], Fact] = {}
    for f in facts:
        old = merged.get((f.kind, f.value))
        if old is None:
            merged[(f.kind, f.value)] = f
            continue
        sides = tuple(s for s in SIDES if s in f.sides or s in old.sides)
        origin = "program" if "program" in (f.origin, old.origin) else old.origin
        merged[(f.kind, f.value)] = Fact(f.kind, old.label, f.value, origin, sides)
    # A fixed order (never set order, which changes with PYTHONHASHSEED): prompts list the facts, and
    # the prompt text is part of the cache key.
    return sorted(merged.values(), key=lambda f: (KINDS.index(f.kind), f.label, f.origin))


def _allowed(
    facts: list[Fact], readings: dict[str, Reading]
) -> tuple[dict[str, dict[str, set]], dict[str, list[float]]]:
    """Per side: the values a paraphrase may mention. The question side may mention what the program
    has and what the template question says; the answer side anything the item has."""
    allowed: dict[str, dict[str, set]] = {s: {} for s in SIDES}
    numbers: dict[str, list[float]] = {s: [] for s in SIDES}
    for f in facts:
        for side in SIDES:
            if side == "answer" or f.origin == "program" or side in f.sides:
                allowed[side].setdefault(f.kind, set()).add(f.value)
                if f.kind == "number":
                    numbers[side].append(float(f.value))  # type: ignore[arg-type]
                elif f.kind == "coordinate":
                    numbers[side] += list(f.value)  # type: ignore[call-overload]
    numbers["question"] += readings["question"].numbers
    numbers["answer"] += [n for reading in readings.values() for n in reading.numbers]
    return allowed, numbers


def derive_facts(record: QARecord) -> ItemFacts:
    """The facts of ``record``: from its structured answer and program, each with the sides of the
    template text that state it, plus anything the template text states beyond the structure."""
    texts = {"question": record.question, "answer": record.answer}
    structural = _structural_types(record) + _structural_words(record) + _structural_numbers(record)
    types = frozenset(str(v) for kind, v, _ in structural if kind == "type")
    bare = record.program.query.name == "getState" or record.answer_type == "state"
    readings = {side: Reading(text, types, side, bare) for side, text in texts.items()}
    facts = _locate(structural, readings)
    facts = _merge(facts + _text_only_facts(facts, readings, types))
    all_types = frozenset(t for f in facts if f.kind == "type" for t in f.value)  # type: ignore[attr-defined]
    if all_types != types:  # the text names types the structure does not: read with those too
        readings = {side: Reading(text, all_types, side, bare) for side, text in texts.items()}
    facts = _merge(facts + _relation_facts(record, readings))
    allowed, numbers = _allowed(facts, readings)
    bindings = {side: [b for b in temporal_bindings(r.norm, all_types) if b[1]] for side, r in readings.items()}
    return ItemFacts(
        facts=facts, types=all_types, allowed=allowed, numbers=numbers, bare_states=bare,
        bindings=bindings, readings=readings,
    )  # fmt: skip


def _relation_facts(record: QARecord, readings: dict[str, Reading]) -> list[Fact]:
    """The spatial relations the template text states, each with its object. A location answer ("Mug.")
    may say the object was on or in what it names: the answer side may mention those too (origin
    answer, stated nowhere, so not essential)."""
    facts = [
        Fact("relation", _relation_label(pair), pair, "text", (side,))
        for side, reading in readings.items()
        for pair in reading.relations
    ]
    if record.program.query.name == "getLocation":
        located = readings["answer"].mentions
        facts += [Fact("relation", _relation_label((r, o)), (r, o), "answer") for o in located for r in CONTAINMENT]
    return facts


# ---- temporal relations and the events they are about -------------------------------------------

_CLAUSE_END = re.compile(r"[,;?.!:]| and | or | but ")


def temporal_bindings(text: str, types: frozenset[str]) -> list[Binding]:
    """Each temporal relation in ``text`` with the objects named in its clause ("after you passed the
    bookshelf and before ..." -> ("after", {bookshelf})), so that a paraphrase that swaps which event
    comes before and which after is caught even though both relations survive."""
    norm = lx.normalize_text(text)
    out = []
    for _, end, relation in lx.scan_spans("temporal", text):
        stop = _CLAUSE_END.search(norm, end)
        clause = norm[end : stop.start() if stop else len(norm)]
        out.append((relation, frozenset(owners for _, owners in lx.type_spans(clause, types))))
    return out


def moved_temporal(item: ItemFacts, side: str, reading: Reading) -> list[str]:
    """A temporal relation bound to another event than the template's."""
    if not item.bindings.get(side):
        return []
    found = temporal_bindings(reading.norm, item.types)
    reasons = []
    for relation, objects in item.bindings.get(side, []):
        present = [mentions for rel, mentions in found if rel == relation]
        if not objects or not present:
            continue  # nothing to bind, or the relation is missing (reported as dropped)
        if not any(all(any(o & m for m in mentions) for o in objects) for mentions in present):
            names = ", ".join(sorted("/".join(sorted(o)) for o in objects))
            reasons.append(f"moved temporal '{relation}' away from {names} in the {side}")
    return reasons


# ---- spatial relations and the objects they are about --------------------------------------------

_REACH_BREAK = re.compile(r"[,;?.!:()]")


def _object_after(norm: str, end: int, objects: list[tuple[int, frozenset[str]]]) -> frozenset[str] | None:
    start, owners = next(((s, o) for s, o in objects if s >= end), (None, None))
    if start is None:
        return None
    between = norm[end:start]
    return owners if len(between.split()) <= RELATION_REACH and not _REACH_BREAK.search(between) else None


def _relation_label(pair: Relation) -> str:
    return f"{pair[0]} {'/'.join(sorted(pair[1]))}"


def _relation_kept(pair: Relation, reading: Reading) -> bool:
    relation, target = pair
    found = reading.relations
    if any(r == relation and t & target for r, t in found):
        return True
    if relation not in CONTAINMENT:
        return False
    named = any(owners & target for owners in reading.mentions)
    return named and not any(t & target for _, t in found)


# ---- checking a paraphrase -----------------------------------------------------------------------

Check = Callable[["ItemFacts", str, Reading], list[str]]  # (item, side, that side's paraphrase, read) -> reasons
_NO_WORD = re.compile(r"\bno\b")
_A_SINGLE = re.compile(r"\ba single\b")


def _states_fact(fact: Fact, reading: Reading) -> bool:
    if fact.kind == "number":
        value = float(fact.value)  # type: ignore[arg-type]
        if value == 0 and _NO_WORD.search(reading.norm):
            return True
        if value == 1 and _A_SINGLE.search(reading.norm):
            return True
        return _near(reading.numbers, value, NUMBER_TOL)
    if fact.kind == "coordinate":
        return _find_triple(reading.numbers, fact.value, NUMBER_TOL) is not None  # type: ignore[arg-type]
    if fact.kind == "type":
        return any(owners & fact.value for owners in reading.mentions)  # type: ignore[operator]
    if fact.kind == "relation":
        return _relation_kept(fact.value, reading)  # type: ignore[arg-type]
    if fact.kind in PHRASE_KINDS:
        return set(fact.value) <= reading.stems.keys()  # type: ignore[call-overload]
    return fact.value in reading.values(fact.kind)


def dropped_facts(item: ItemFacts, side: str, reading: Reading) -> list[str]:
    """Essential facts of this side the paraphrase no longer states."""
    return [
        f"dropped {fact.kind} '{fact.label}' from the {side}"
        for fact in item.essential
        if side in fact.sides and not _states_fact(fact, reading)
    ]


COUNTED_KINDS = ("type", "number", "color", "material", "state", *PHRASE_KINDS)


def fewer_mentions(item: ItemFacts, side: str, reading: Reading) -> list[str]:
    """An object, a count (2 or more), a color, a material, a state or a phrase ("storing things") that
    the template states N times must be stated N times: a list or a group that loses an item keeps
    every fact at least once."""
    template = item.readings[side]
    reasons = []
    for fact in item.essential:
        if side not in fact.sides or fact.kind not in COUNTED_KINDS:
            continue
        if fact.kind == "number" and not _countable(float(fact.value), item):  # type: ignore[arg-type]
            continue
        want, got = _mentions(fact, template), _mentions(fact, reading)
        if got < want:
            reasons.append(f"dropped mention of {fact.kind} '{fact.label}' from the {side} ({got} of {want})")
    return reasons


def _mentions(fact: Fact, reading: Reading) -> int:
    if fact.kind == "type":
        return sum(1 for owners in reading.mentions if owners & fact.value)  # type: ignore[operator]
    if fact.kind == "number":
        return sum(1 for n in reading.numbers if abs(n - float(fact.value)) <= NUMBER_TOL)  # type: ignore[arg-type]
    if fact.kind in PHRASE_KINDS:
        return min(reading.stems[stem] for stem in fact.value)  # type: ignore[attr-defined]
    return reading.values(fact.kind).count(fact.value)


def _countable(number: float, item: ItemFacts) -> bool:
    """Whether mentions of ``number`` can be counted: not 0 or 1 ("a", "an", "no" say those), and not
    equal to a part of a stated coordinate (which is no count)."""
    return number >= 2 and not _near(_coordinate_parts(item), number, NUMBER_TOL)


def _coordinate_parts(item: ItemFacts) -> list[float]:
    """The numbers of the coordinates the template text states."""
    return [c for f in item.essential if f.kind == "coordinate" and isinstance(f.value, tuple) for c in f.value]


def introduced_mentions(item: ItemFacts, side: str, reading: Reading) -> list[str]:
    """Mentions in the text of numbers, words, relations or object types this side of the item does not
    have (a changed number, color, state, relation, direction, hedge, object, ...)."""
    allowed = item.allowed[side]
    reasons = [
        f"introduced number {n:g} in the {side}"
        for n in reading.firm_numbers
        if not _near(item.numbers[side], n, NUMBER_TOL)
    ]
    for kind in WORD_KINDS:
        reasons += [
            f"introduced {kind} '{v}' in the {side}" for v in reading.values(kind) if v not in allowed.get(kind, ())
        ]
    ordinals = allowed.get("ordinal", set())
    reasons += [f"introduced ordinal {v} in the {side}" for v in reading.values("ordinal") if v not in ordinals]
    types = {t for owners in allowed.get("type", ()) for t in owners}
    for owners in reading.mentions:
        if not owners & types:
            reasons.append(f"introduced object '{'/'.join(sorted(owners))}' in the {side}")
    relations = allowed.get("relation", set())
    for relation, target in reading.relations:
        if not any(r == relation and t & target for r, t in relations):
            reasons.append(f"introduced relation '{_relation_label((relation, target))}' in the {side}")
    return reasons


def text_added(item: ItemFacts, side: str, reading: Reading) -> list[str]:
    """Links, markup, instructions or questions the template text of this side does not have."""
    template = item.readings[side]
    return added_text(template.text, reading.text, side, template.added_kinds)


SIDE_CHECKS: tuple[Check, ...] = (dropped_facts, fewer_mentions, moved_temporal, introduced_mentions, text_added)


def check_paraphrase(record: QARecord, question: str, answer: str, item: ItemFacts | None = None) -> Verdict:
    """Accept ``question``/``answer`` only if they keep every essential fact, add none, and add no text
    of another kind (every check of :data:`SIDE_CHECKS`, on each side)."""
    item = item or derive_facts(record)
    question, answer = question or "", answer or ""
    return pair_verdict(
        question, answer, side_reasons(item, "question", question), side_reasons(item, "answer", answer)
    )


def side_reasons(item: ItemFacts, side: str, text: str) -> list[str]:
    """Why ``text`` is no paraphrase of the item's ``side``: the reasons of every check of :data:`SIDE_CHECKS`.
    A side's reasons do not depend on the other side's text, so a caller trying several pairs checks each
    text once."""
    reading = Reading(text, item.types, side, item.bare_states)
    return [reason for check in SIDE_CHECKS for reason in check(item, side, reading)]


def pair_verdict(question: str, answer: str, question_reasons: list[str], answer_reasons: list[str]) -> Verdict:
    """The verdict on a question and an answer, given each side's reasons (:func:`side_reasons`)."""
    reasons = [f"empty {side}" for side, text in (("question", question), ("answer", answer)) if not text.strip()]
    reasons += question_reasons + answer_reasons
    return Verdict(ok=not reasons, reasons=tuple(dict.fromkeys(reasons)))
