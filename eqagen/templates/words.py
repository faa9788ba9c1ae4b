"""Words: readable type names, plurals, articles, number words, ordinals, event verbs, lists, coordinates.

Small pure functions the text is assembled with (``render.py``, ``answers.py``) and that the paraphrase
validator reads text with (``eqagen.paraphrase.lexicon``), so both agree on every plural.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

# irregular plurals, also as the end of a word ("bookshelf" -> "bookshelves")
_IRREGULAR = {"knife": "knives", "shelf": "shelves", "loaf": "loaves", "leaf": "leaves", "mouse": "mice",
              "person": "people", "tomato": "tomatoes", "potato": "potatoes", "glass": "glasses", "sheep": "sheep",
              "fish": "fish", "cactus": "cacti", "fungus": "fungi", "wolf": "wolves"}  # fmt: skip
_NUMBER_WORDS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven",
                 "twelve")  # fmt: skip
_ORDINALS = ("zeroth", "first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth",
             "tenth", "eleventh", "twelfth")  # fmt: skip
# event kind -> (base form, past form) of the verb phrase; the object goes after it
EVENT_VERBS = {
    "open": ("open", "opened"),
    "close": ("close", "closed"),
    "pickup": ("pick up", "picked up"),
    "put": ("put down", "put down"),
    "drop": ("drop", "dropped"),
    "throw": ("throw", "threw"),
    "toggle_on": ("switch on", "switched on"),
    "toggle_off": ("switch off", "switched off"),
    "slice": ("slice", "sliced"),
    "break": ("break", "broke"),
    "clean": ("clean", "cleaned"),
    "dirty": ("dirty", "dirtied"),
    "heat": ("heat", "heated"),
    "cool": ("cool", "cooled"),
    "cook": ("cook", "cooked"),
    "fill": ("fill", "filled"),
    "empty": ("empty", "emptied"),
    "use_up": ("use up", "used up"),
    "mine": ("mine", "mined"),
    "craft": ("craft", "crafted"),
    "attack": ("attack", "attacked"),
    "enter_region": ("enter", "entered"),
}


# Readable names that differ from the split type name: "box" alone is vague beside a tissue box, a shoe box or
# any container ("the tissue box was in the box"); AI2-THOR's Box is a cardboard box.
NAMES = {"counter top": "countertop", "box": "cardboard box"}


@lru_cache(maxsize=4096)  # the text's one cache: a few hundred types recur; rendering takes a quarter less with it
def label(type_name: str) -> str:
    """``CounterTop`` -> ``countertop``-style readable name: camel case split, lower case (``SinkBasin`` ->
    ``sink basin``, ``TVStand`` -> ``tv stand``, ``AppleSliced`` -> ``apple slice``)."""
    if not type_name:
        return ""
    words = re.findall(r"[A-Z]+(?=[A-Z][a-z]|\d|\b)|[A-Z]?[a-z]+|[A-Z]+|\d+", type_name.replace("_", " "))
    text = " ".join(w.lower() for w in words) if words else type_name.lower()
    if text.endswith(" sliced"):
        text = text[: -len("sliced")] + "slice"
    return NAMES.get(text, text)


def plural(noun: str) -> str:
    """English plural of the last word of ``noun``."""
    head, _, last = noun.rpartition(" ")
    ending = next((w for w in _IRREGULAR if last.endswith(w)), None)
    if ending is not None:
        out = last[: -len(ending)] + _IRREGULAR[ending]
    elif re.search(r"(s|x|z|ch|sh)$", last):
        out = last + "es"
    elif re.search(r"[^aeiou]y$", last):
        out = last[:-1] + "ies"
    else:
        out = last + "s"
    return f"{head} {out}" if head else out


def article(phrase: str) -> str:
    """``a`` or ``an`` before ``phrase``."""
    return "an" if phrase[:1].lower() in "aeiou" else "a"


def with_article(phrase: str) -> str:
    return f"{article(phrase)} {phrase}"


def ordinal(n: int) -> str:
    return _ORDINALS[n] if 0 <= n < len(_ORDINALS) else f"{n}th"


def verb(kind: str, past: bool = False) -> str:
    """The verb phrase of an event kind (``pickup`` -> ``pick up`` / ``picked up``)."""
    base, done = EVENT_VERBS.get(kind, (kind.replace("_", " "), kind.replace("_", " ") + "ed"))
    return done if past else base


def number_word(n: int) -> str:
    """``2`` -> ``two`` up to twelve, digits above."""
    return _NUMBER_WORDS[n] if 0 <= n < len(_NUMBER_WORDS) else str(n)


def count_phrase(n: int, noun: str) -> str:
    """``an apple``, ``two cups``."""
    return with_article(noun) if n == 1 else f"{number_word(n)} {plural(noun)}"


def join_and(parts: list[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def list_phrase(type_names: list[str]) -> str:
    """``["Apple", "Cup", "Cup"]`` -> ``an apple and two cups`` (types in sorted order)."""
    counts = Counter(label(t) for t in type_names)
    return join_and([count_phrase(n, noun) for noun, n in sorted(counts.items())]) if counts else ""


def upper_first(text: str) -> str:
    return text[:1].upper() + text[1:]


def lower_first(text: str) -> str:
    """The first letter in lower case, unless the first word is an acronym ("TV")."""
    return text if text[1:2].isupper() else text[:1].lower() + text[1:]


def coords(xyz: tuple[float, float, float]) -> str:
    """How a text names a point of the episode frame, in metres: ``(x=1.00, y=0.90, z=-2.00)``."""
    return f"(x={xyz[0]:.2f}, y={xyz[1]:.2f}, z={xyz[2]:.2f})"
