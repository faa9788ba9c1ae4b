"""Closed vocabularies the validator reads text with: numbers, colors, states, temporal and spatial
relations, compass directions, quantity hedges, viewpoints, ordinals, yes/no and object types with their
synonyms.

Each vocabulary maps surface forms to a canonical id. Scanning is longest-match-first and
non-overlapping, so "right after" is read as one relation and never also as "after".
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from functools import cache, cached_property, lru_cache

# The validator must recognise exactly the plurals the question templates write ("cacti", "mice").
from eqagen.templates.words import label, plural

NUMBER_WORDS = {
    "zero": 0, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8,
    "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90, "hundred": 100,
    "twice": 2, "thrice": 3, "once": 1, "none": 0,
}  # fmt: skip
# Words that are numbers only sometimes ("the one on the left", "once you opened"): they may express a
# required number but never count as a number the paraphrase introduced.
AMBIGUOUS_NUMBER_WORDS = frozenset({"one", "once", "none"})

ORDINALS = {
    "first": 1, "second": 2, "third": 3, "fourth": 4, "fifth": 5, "sixth": 6, "seventh": 7, "eighth": 8,
    "ninth": 9, "tenth": 10, "eleventh": 11, "twelfth": 12,
}  # fmt: skip

COLORS = {
    "red": "red", "green": "green", "blue": "blue", "yellow": "yellow", "orange": "orange",
    "purple": "purple", "violet": "purple", "pink": "pink", "brown": "brown", "black": "black",
    "white": "white", "gray": "gray", "grey": "gray", "silver": "silver", "gold": "gold",
    "golden": "gold", "beige": "beige", "tan": "tan", "cyan": "cyan", "teal": "teal",
    "magenta": "magenta", "maroon": "maroon", "navy": "navy", "cream": "cream",
}  # fmt: skip

STATES = {
    "open": "open", "opened": "open", "opening": "open", "closed": "closed", "shut": "closed",
    "closing": "closed", "toggled on": "on", "switched on": "on", "turned on": "on", "turning on": "on",
    "switching on": "on", "toggled off": "off", "switched off": "off", "turned off": "off",
    "turning off": "off", "switching off": "off",
    "broken": "broken", "smashed": "broken", "intact": "intact", "unbroken": "intact",
    "sliced": "sliced", "unsliced": "unsliced", "whole": "unsliced",
    "filled": "filled", "full": "filled", "empty": "empty",
    "dirty": "dirty", "clean": "clean", "cooked": "cooked", "raw": "raw", "uncooked": "raw",
    "used up": "used_up",
}  # fmt: skip
# Answers to "switched on or off?" are a bare "On." / "Off.": read only on the answer side of state queries,
# where "on" cannot be the preposition.
BARE_STATES = STATES | {"on": "on", "off": "off"}
# Materials (AI2-THOR's salientMaterials and Minecraft's). "food" and "organic" are left out: too common
# as ordinary words to be read as a material.
MATERIALS = {
    "wood": "wood", "wooden": "wood", "metal": "metal", "metallic": "metal", "plastic": "plastic",
    "glass": "glass", "ceramic": "ceramic", "porcelain": "ceramic", "stone": "stone", "fabric": "fabric",
    "cloth": "fabric", "rubber": "rubber", "paper": "paper", "leather": "leather", "wax": "wax",
    "sponge": "sponge", "soap": "soap",
    # Minecraft wood kinds and building blocks
    "oak": "oak", "dark oak": "dark_oak", "spruce": "spruce", "birch": "birch", "jungle": "jungle",
    "acacia": "acacia", "mangrove": "mangrove", "cherry": "cherry", "crimson": "crimson", "warped": "warped",
    "cobblestone": "cobblestone", "brick": "brick", "bricks": "brick", "stone brick": "stone_brick",
    "stone bricks": "stone_brick", "sandstone": "sandstone", "planks": "planks",
}  # fmt: skip
STATE_ANTONYMS = {
    "open": "closed", "on": "off", "broken": "intact", "sliced": "unsliced", "filled": "empty",
    "dirty": "clean", "cooked": "raw",
}  # fmt: skip
STATE_ANTONYMS |= {v: k for k, v in STATE_ANTONYMS.items()}
# Canonical state for a state-family filter key (as the question engine names them).
STATE_KEYS = {
    "open": "open", "isopen": "open", "opened": "open", "toggled": "on", "istoggled": "on", "on": "on",
    "broken": "broken", "isbroken": "broken", "sliced": "sliced", "issliced": "sliced",
    "filled": "filled", "isfilledwithliquid": "filled", "filled_with_liquid": "filled",
    "dirty": "dirty", "isdirty": "dirty", "cooked": "cooked", "iscooked": "cooked", "state": "",
}  # fmt: skip

TEMPORAL = {
    "before": "before", "prior to": "before", "earlier than": "before",
    "right before": "right_before", "just before": "right_before", "immediately before": "right_before",
    "right after": "right_after", "just after": "right_after", "immediately after": "right_after",
    "after": "after", "following": "after", "later than": "after",
    "between": "between",
}  # fmt: skip

# Spatial relations (TAG-EQA's location and position filters). A form naming "you" binds the agent.
# Bare "left"/"right"/"on"/"in" count only where an object follows (see validator.Reading.relations).
RELATIONS = {
    "left": "left", "left of": "left", "to the left of": "left", "on the left of": "left",
    "on the left side of": "left", "to the left side of": "left", "to your left": "left", "on your left": "left",
    "on your left hand side": "left", "to the left of you": "left",
    "right": "right", "right of": "right", "to the right of": "right", "on the right of": "right",
    "on the right side of": "right", "to the right side of": "right", "to your right": "right",
    "on your right": "right", "on your right hand side": "right", "to the right of you": "right",
    "in front of": "front", "in front": "front", "ahead of": "front", "in front of you": "front",
    "ahead of you": "front",
    "behind": "behind", "in back of": "behind", "at the back of": "behind", "behind you": "behind",
    "above": "above", "over": "above", "higher than": "above",
    "under": "below", "underneath": "below", "below": "below", "beneath": "below", "lower than": "below",
    "on": "on", "onto": "on", "upon": "on", "on top of": "on", "atop": "on",
    "inside": "inside", "inside of": "inside", "in": "inside", "into": "inside", "within": "inside",
}  # fmt: skip
DIRECTIONS = {
    "north": "north", "south": "south", "east": "east", "west": "west", "northeast": "northeast",
    "north east": "northeast", "northwest": "northwest", "north west": "northwest", "southeast": "southeast",
    "south east": "southeast", "southwest": "southwest", "south west": "southwest",
}  # fmt: skip
# Quantity hedges: a word that turns an exact number into a range or a guess. Those before a number count
# only there ("over 3", not "over the table"); vague quantities count anywhere ("several", "a few").
HEDGES_BEFORE_NUMBER = {
    "more than": "more than", "over": "more than", "above": "more than", "greater than": "more than",
    "in excess of": "more than", "upwards of": "more than", "just over": "more than",
    "fewer than": "fewer than", "less than": "fewer than", "under": "fewer than", "below": "fewer than",
    "just under": "fewer than",
    "at least": "at least", "no fewer than": "at least", "no less than": "at least", "a minimum of": "at least",
    "at most": "at most", "up to": "at most", "no more than": "at most", "a maximum of": "at most",
    "as many as": "at most",
    "about": "about", "around": "about", "approximately": "about", "roughly": "about", "circa": "about",
    "some": "about", "close to": "about", "almost": "about", "nearly": "about", "an estimated": "about",
    "give or take": "about", "plus or minus": "about",
}  # fmt: skip
HEDGES_AFTER_NUMBER = {"or more": "at least", "or so": "about", "or fewer": "at most", "or less": "at most"}
VAGUE_QUANTITIES = {
    "several": "several", "a few": "several", "few": "several", "a couple": "several", "a couple of": "several",
    "many": "several", "multiple": "several", "numerous": "several", "a handful": "several",
    "a handful of": "several", "a number of": "several", "lots of": "several", "a lot of": "several",
    "plenty of": "several", "a bunch of": "several", "dozens": "several", "various": "several",
    "countless": "several",
}  # fmt: skip

POLARITY = {
    "yes": "yes", "yeah": "yes", "yep": "yes", "correct": "yes", "indeed": "yes",
    "no": "no", "nope": "no", "not": "no", "n't": "no", "never": "no",
}  # fmt: skip

# Object types (AI2-THOR, HM3D categories, Minecraft) and synonyms a paraphrase may use instead. Bare
# head nouns ("table" for DiningTable) are deliberately absent: they can name a different object. So are
# words that are mostly something else ("water", "stone", "dish"): they would flag ordinary verbs and
# materials as invented objects. An item's own types are always added to what is read.
TYPE_SYNONYMS: dict[str, tuple[str, ...]] = {
    "CounterTop": ("counter", "kitchen counter", "worktop"),
    "Fridge": ("refrigerator",),
    "Sofa": ("couch",),
    "Television": ("tv",),
    "TVStand": ("tv stand", "television stand"),
    "GarbageCan": ("trash can", "garbage bin", "trash bin", "bin", "wastebasket"),
    "CellPhone": ("phone", "mobile phone", "cellphone"),
    "SinkBasin": ("sink",),
    "Sink": ("sink basin",),
    "StoveBurner": ("burner", "stove burner", "hob"),
    "StoveKnob": ("stove knob", "knob"),
    "CoffeeMachine": ("coffee maker",),
    "Microwave": ("microwave oven",),
    "DiningTable": (),
    "CoffeeTable": (),
    "SideTable": ("end table",),
    "Desk": ("writing desk",),
    "Bed": (),
    "Chair": (),
    "ArmChair": ("armchair",),
    "Cabinet": ("cupboard",),
    "Drawer": (),
    "Shelf": (),
    "Mug": ("coffee mug",),
    "Cup": (),
    "Bowl": (),
    "Plate": (),
    "Pot": ("cooking pot",),
    "Pan": ("frying pan", "skillet"),
    "Kettle": ("teakettle",),
    "Knife": (),
    "ButterKnife": (),
    "Fork": (),
    "Spoon": (),
    "Spatula": (),
    "Ladle": (),
    "Apple": (),
    "Bread": ("loaf",),
    "Egg": (),
    "Lettuce": (),
    "Potato": (),
    "Tomato": (),
    "Bottle": (),
    "WineBottle": ("wine bottle",),
    "SoapBottle": ("soap dispenser",),
    "DishSponge": ("sponge",),
    "Book": (),
    "Laptop": ("notebook computer",),
    "Pen": (),
    "Pencil": (),
    "Pillow": ("cushion",),
    "Lamp": (),
    "FloorLamp": ("standing lamp",),
    "DeskLamp": ("desk lamp",),
    "RemoteControl": ("remote", "tv remote"),
    "Toaster": (),
    "Toilet": (),
    "Towel": (),
    "Window": (),
    "Door": (),
    "Vase": (),
    "Statue": ("sculpture", "figurine"),
    "HousePlant": ("plant", "houseplant", "potted plant"),
    "Painting": ("picture",),
    "Mirror": (),
    "Dresser": ("chest of drawers",),
    "Bathtub": ("tub", "bath"),
    "Kitchen": (),
    "Bedroom": (),
    "Bathroom": (),
    "LivingRoom": ("lounge",),
    "Hallway": ("corridor",),
    "Tree": (),
    "Cow": (),
    "Sheep": (),
    "Pig": (),
    "Chicken": (),
    "Zombie": (),
    "Creeper": (),
    "Log": ("wood log",),
    "Chest": (),
    "Village": (),
}

_VOCABULARY_TYPES = frozenset(TYPE_SYNONYMS)
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")


_SPACES = re.compile(r"\s+")
_LETTERS = re.compile(r"[a-z]+")


class Normalized(str):
    """A text :func:`normalize_text` made: given to a scan, it is read as it is, not normalised again (a
    reader that scans one text for many vocabularies normalises it once)."""

    @cached_property
    def letter_runs(self) -> frozenset[str]:
        """Its maximal runs of the letters a-z. A word of a vocabulary can be in the text only where the
        first run of the word is one of them (:func:`first_runs`): most texts have no color, no number word,
        no ordinal, so most scans need not run."""
        return frozenset(_LETTERS.findall(self))


def first_runs(words: Iterable[str]) -> frozenset[str] | None:
    """The first runs of letters a-z of ``words``; None where a word does not start with one (a text
    without them may still have it)."""
    runs = [_LETTERS.match(w) for w in words]
    return frozenset(m.group(0) for m in runs if m) if all(runs) else None


def normalize_text(text: str) -> Normalized:
    """Lower case, typographic minus and apostrophes made ASCII, whitespace collapsed."""
    if isinstance(text, Normalized):
        return text
    text = text.replace("\u2212", "-").replace("\u2019", "'").lower()
    return Normalized(_SPACES.sub(" ", text).strip())


def type_forms(type_name: str) -> set[str]:
    """Surface forms of an object type: 'CounterTop' -> counter top, countertop, counter, ... (+ plurals)."""
    base = type_name.split("#")[0]
    spaced = _CAMEL.sub(" ", base).replace("_", " ").lower().strip()
    # label() is the phrase the templates write ("apple slice" for AppleSliced): always a surface form.
    forms = {spaced, spaced.replace(" ", ""), label(base)} | set(TYPE_SYNONYMS.get(base, ()))
    return forms | {plural(f) for f in forms}


def _alternation(forms: list[str]) -> re.Pattern[str]:
    """Any of ``forms`` as a whole word, a space in a form matching a hyphen too; at each position the
    longest form that matches. Forms have no hyphen (a match is looked up with its hyphens read as spaces)."""
    return re.compile(rf"(?<![\w-])(?:{_trie_pattern(_trie(forms))})(?![\w-])")


Trie = dict[str, "Trie"]  # next character -> the rest; the key "" marks the end of a form


def _trie(forms: list[str]) -> Trie:
    root: Trie = {}
    for form in forms:
        node = root
        for char in form:
            node = node.setdefault(char, {})
        node[""] = {}
    return root


def _trie_pattern(node: Trie) -> str:
    """The forms below ``node`` as one branch per next character, ending a form only after its longer
    continuations failed. The regex engine then follows the one branch the text's next character picks
    (the forms have distinct characters at each step), instead of trying every form in turn: 3.5 times
    faster than a flat longest-first alternation on the type vocabulary, with the same matches."""
    branches = [
        ("[ -]" if char == " " else re.escape(char)) + _trie_pattern(rest)
        for char, rest in sorted(node.items())
        if char
    ]
    if not branches:
        return ""
    body = "|".join(branches)
    if "" in node:
        return f"(?:{body})?"
    return body if len(branches) == 1 else f"(?:{body})"


@cache
def _vocabulary_pattern(kind: str) -> tuple[re.Pattern[str], dict[str, str], frozenset[str] | None]:
    """A vocabulary's pattern, its table and its words' first runs of letters (:func:`first_runs`)."""
    tables = {"color": COLORS, "state": STATES, "bare_state": BARE_STATES, "material": MATERIALS,
              "temporal": TEMPORAL, "polarity": POLARITY, "relation": RELATIONS, "direction": DIRECTIONS}  # fmt: skip
    table = tables[kind]
    return _alternation(list(table)), table, first_runs(table)


def scan(kind: str, text: str) -> list[str]:
    """Canonical ids of every ``kind`` word in ``text`` (normalised), longest match first."""
    norm = normalize_text(text)
    if kind == "polarity" and "n't" in norm:  # "don't" is read as "do n't"
        norm = Normalized(norm.replace("n't", " n't"))
    return [canon for _, _, canon in scan_spans(kind, norm)]


def _form_owners(type_names: object) -> dict[str, frozenset[str]]:
    owners: dict[str, set[str]] = {}
    for type_name in type_names:  # type: ignore[attr-defined]
        for form in type_forms(type_name):
            owners.setdefault(form, set()).add(type_name.split("#")[0])
    return {f: frozenset(t) for f, t in owners.items()}


@cache
def _vocabulary_types() -> tuple[re.Pattern[str], dict[str, frozenset[str]]]:
    """The curated type vocabulary: one pattern, compiled once."""
    owners = _form_owners(sorted(TYPE_SYNONYMS))
    return _alternation(list(owners)), owners


@lru_cache(maxsize=1 << 14)
def _item_type(type_name: str) -> tuple[re.Pattern[str], dict[str, frozenset[str]]]:
    """One type the vocabulary lacks (a navigation or blockworld name): its own small pattern."""
    owners = _form_owners([type_name])
    return _alternation(list(owners)), owners


def _type_matches(text: str, extra_types: frozenset[str]) -> tuple[tuple[int, frozenset[str]], ...]:
    """(start, owners) of every type mention, longest first and non-overlapping, across the vocabulary
    and the item's own types (the same span named by both owns both)."""
    norm = normalize_text(text)
    extra = sorted({t.split("#")[0] for t in extra_types} - _VOCABULARY_TYPES)
    vocabulary, owned = _vocabulary_types()
    if not extra:  # one pattern: its matches are already the longest first and do not overlap
        return tuple((m.start(), owned[m.group(0).replace("-", " ")]) for m in vocabulary.finditer(norm))
    spans: dict[tuple[int, int], frozenset[str]] = {}
    for pattern, owners in [(vocabulary, owned), *(_item_type(t) for t in extra)]:
        for m in pattern.finditer(norm):
            key = (m.start(), m.end())
            spans[key] = spans.get(key, frozenset()) | owners[m.group(0).replace("-", " ")]
    out, taken_until = [], -1
    for (start, end), owners in sorted(spans.items(), key=lambda kv: (kv[0][0], -kv[0][1])):
        if start >= taken_until:
            out.append((start, owners))
            taken_until = end
    return tuple(out)


def scan_spans(kind: str, text: str) -> list[tuple[int, int, str]]:
    """(start, end, canonical id) of every ``kind`` word in the normalised ``text``."""
    pattern, table, firsts = _vocabulary_pattern(kind)
    norm = normalize_text(text)
    if firsts is not None and norm.letter_runs.isdisjoint(firsts):
        return []
    return [(m.start(), m.end(), table[m.group(0).replace("-", " ")]) for m in pattern.finditer(norm)]


def type_spans(text: str, extra_types: frozenset[str] = frozenset()) -> list[tuple[int, frozenset[str]]]:
    """(start, types that form can name) of every object-type mention in the normalised ``text``."""
    return list(_type_matches(text, extra_types))


def scan_types(text: str, extra_types: frozenset[str] = frozenset()) -> list[frozenset[str]]:
    """For every object-type mention in ``text``, the set of types that form can name."""
    return [owners for _, owners in _type_matches(text, extra_types)]


_NUMERAL = re.compile(r"(?<![\w.])-?\d+(?:\.\d+)?(?![\w])|(?<![\w.])-?\.\d+(?![\w])")
_WORD = re.compile(r"[a-z]+(?:-[a-z]+)?")
_ORDINAL_NUMERAL = re.compile(r"(?<![\w.])(\d+)(?:st|nd|rd|th)(?![\w])")


def scan_numbers(text: str, include_ambiguous: bool = True) -> list[float]:
    """Every number in ``text``, in order of appearance: numerals and number words (twenty-one)."""
    return [value for value, ambiguous in number_mentions(text) if include_ambiguous or not ambiguous]


def number_mentions(text: str) -> list[tuple[float, bool]]:
    """Every number in ``text`` in order of appearance, each with whether it is an ambiguous word
    (:data:`AMBIGUOUS_NUMBER_WORDS`)."""
    norm = normalize_text(text)
    found: list[tuple[int, float, bool]] = [(m.start(), float(m.group(0)), False) for m in _NUMERAL.finditer(norm)]
    words = _WORD.finditer(norm) if not norm.letter_runs.isdisjoint(NUMBER_WORDS) else ()
    for m in words:
        parts = m.group(0).split("-")
        if all(p in NUMBER_WORDS for p in parts):
            ambiguous = len(parts) == 1 and parts[0] in AMBIGUOUS_NUMBER_WORDS
            found.append((m.start(), float(sum(NUMBER_WORDS[p] for p in parts)), ambiguous))
    return [(value, ambiguous) for _, value, ambiguous in sorted(found, key=lambda f: f[:2])]


def scan_ordinals(text: str) -> list[int]:
    norm = normalize_text(text)
    found = [(m.start(), int(m.group(1))) for m in _ORDINAL_NUMERAL.finditer(norm)]
    if not norm.letter_runs.isdisjoint(ORDINALS):
        found += [(m.start(), ORDINALS[m.group(0)]) for m in _WORD.finditer(norm) if m.group(0) in ORDINALS]
    return [value for _, value in sorted(found)]


# Not "on": in an open phrase it is content ("putting things on" is not "putting things inside"), the
# one short word that is (content words are otherwise longer than two letters).
_SHORT_CONTENT_WORDS = frozenset({"on"})
_STOP_WORDS = frozenset(
    {
        "the", "a", "an", "and", "or", "of", "for", "to", "in", "at", "with", "by", "from", "used", "use",
        "using", "things", "thing", "something", "it", "its", "them", "they", "you", "your",
    }
)  # fmt: skip


def _stem(word: str) -> str:
    """A crude stem: watering -> water, plants -> plant, sitting -> sit, cutting -> cut."""
    for suffix in ("ing", "ed", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    if len(word) > 3 and word[-1] == word[-2] and word[-1] not in "aeiou":
        word = word[:-1]  # sitt -> sit
    return word


def content_stems(phrase: str) -> tuple[str, ...]:
    """The stems of a phrase's content words ("used for watering plants" -> ("water", "plant"))."""
    words = re.findall(r"[a-z]+", normalize_text(phrase))
    kept = (w for w in words if w not in _STOP_WORDS and (len(w) > 2 or w in _SHORT_CONTENT_WORDS))
    return tuple(dict.fromkeys(_stem(w) for w in kept))


def stem_counts(text: str) -> Counter[str]:
    """How often each word stem occurs in ``text``."""
    return Counter(_stem(w) for w in re.findall(r"[a-z]+", normalize_text(text)))


# ---- quantity hedges and spatial relations ---------------------------------------------------------

_NUMBER_FORM = "(?:-?\\d+(?:\\.\\d+)?|(?:{w})(?:-(?:{w}))?)".format(
    w="|".join(sorted((w for w in NUMBER_WORDS if w not in ("once", "twice", "thrice")), key=len, reverse=True))
)


def _phrases(table: dict[str, str]) -> str:
    return "|".join(re.escape(f).replace(r"\ ", r"[ -]") for f in sorted(table, key=lambda f: (-len(f), f)))


_HEDGE = re.compile(
    rf"(?<![\w-])(?P<before>{_phrases(HEDGES_BEFORE_NUMBER)}) (?={_NUMBER_FORM}(?!\w|\.\d))"
    rf"|(?<=\w)(?P<after> (?:{_phrases(HEDGES_AFTER_NUMBER)})|\+)(?![\w-])"
    rf"|(?<![\w-])(?<!how )(?P<vague>{_phrases(VAGUE_QUANTITIES)})(?![\w-])"
)


Span = tuple[int, int, str]  # start, end and canonical id of a word in the normalised text


def hedge_spans(text: str) -> tuple[Span, ...]:
    """(start, end, canonical id) of every quantity hedge in the normalised ``text``."""
    norm = normalize_text(text)
    out = []
    for m in _HEDGE.finditer(norm):
        group = m.lastgroup or ""
        surface = m.group(group).strip().replace("-", " ")
        if group == "after" and not _NUMERAL_BEFORE.search(norm[: m.start()]):
            continue  # "or more" after a word that is no number
        table = {"before": HEDGES_BEFORE_NUMBER, "after": HEDGES_AFTER_NUMBER, "vague": VAGUE_QUANTITIES}[group]
        out.append((m.start(), m.end(), table.get(surface, "at least")))  # "+" is the only form not in a table
    return tuple(out)


_NUMERAL_BEFORE = re.compile(rf"{_NUMBER_FORM}$")


def scan_hedges(text: str) -> list[str]:
    """Canonical ids of the quantity hedges in ``text``: "more than 3" -> "more than", "several"."""
    return [canon for _, _, canon in hedge_spans(text)]


# Viewpoints: whose left, right, front and behind a situated relation means. The templates state the
# agent's ("as seen from where you stood", "from your point of view"); any other ("from the opposite side",
# "from the object's own point of view", "as seen from behind the object") reverses or changes the
# relation, so a viewpoint phrase is a fact: "agent", or "other" for every viewpoint that is not the agent's.
_VIEWPOINT = re.compile(
    r"(?<![\w-])(?:(?:as )?(?:seen|viewed|looked at|looking) from (?P<seen>[^,;:.!?()]*)"
    r"|from (?P<owner>[\w' -]{1,40}?)(?: own)? (?:point of view|perspective|viewpoint|vantage point|standpoint)"
    r"|from (?P<place>where you (?:stood|were standing|were|stand|are)|the (?:opposite|other|far|reverse|back) side"
    r"|behind))(?![\w-])"
)
_AGENT_VIEW = re.compile(r"(?:where )?(?:you|your|yourself|the agent's|the agent)(?![\w-])")


def viewpoint_spans(text: str) -> tuple[Span, ...]:
    """(start, end, "agent" or "other") of every viewpoint phrase in the normalised ``text``."""
    norm = normalize_text(text)
    if "from" not in norm.letter_runs:
        return ()
    out = []
    for m in _VIEWPOINT.finditer(norm):
        whose = next(g for g in (m.group("seen"), m.group("owner"), m.group("place")) if g is not None).strip()
        out.append((m.start(), m.end(), "agent" if _AGENT_VIEW.match(whose) else "other"))
    return tuple(out)


def _spans(kind: str, norm: Normalized) -> Sequence[Span]:
    if kind == "viewpoint":
        return viewpoint_spans(norm)
    return hedge_spans(norm) if kind == "hedge" else scan_spans(kind, norm)


def _blank(text: str, spans: list[tuple[int, int]]) -> str:
    chars = list(text)
    for start, end in spans:
        chars[start:end] = " " * (end - start)
    return "".join(chars)


# the words a relation word may be part of ("behind" in "as seen from behind the bowl" is a viewpoint)
NOT_RELATIONS = ("state", "temporal", "hedge", "viewpoint")


def relation_spans(
    text: str, known: Mapping[str, Sequence[Span]] | None = None
) -> tuple[tuple[int, int, str, bool], ...]:
    """(start, end, relation, names the agent) of every spatial relation word in the normalised ``text``,
    not counting words that are part of a state ("switched on"), a temporal relation ("right after"), a
    quantity hedge ("under 3") or a viewpoint ("seen from behind it"). ``known``: the text's spans of some
    of :data:`NOT_RELATIONS` (``scan_spans``, ``hedge_spans``), where the caller has them."""
    norm = normalize_text(text)
    known = known or {}
    spans = {kind: known[kind] if kind in known else _spans(kind, norm) for kind in NOT_RELATIONS}
    taken = [(a, b) for kind in NOT_RELATIONS for a, b, _ in spans[kind]]
    pattern, table, _ = _vocabulary_pattern("relation")
    found = []
    for m in pattern.finditer(_blank(norm, taken)):
        surface = m.group(0).replace("-", " ")
        found.append((m.start(), m.end(), table[surface], bool({"you", "your"} & set(surface.split()))))
    return tuple(found)
