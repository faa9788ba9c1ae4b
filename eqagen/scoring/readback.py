"""A structured answer read back from answer text, in the dataset's own answer forms (docs/scoring.md).

What is read: the text is cut into one segment per group at ``"; "``; a segment introduced by a label naming
coordinates (``Below the countertop at (x=1.38, y=-0.05, z=-0.38): one``) gives the group's anchor (the answer
to a grounded question, about the one anchor the question names, has that anchor); and each
segment's value, by the record's answer type:

- ``number``/``count``: the first number (digits, number words, ``once``, ``twice``, ``never`` for 0);
- ``yes/no``: the first ``yes`` or ``no``;
- ``objects``: every object type named, with its count (``an apple and two cups``);
- every other type: the values of that type the dataset knows (:class:`Vocabulary`) said after ``was``/``were``
  (``was made of``, ``were in the``, ...) as the answer sentences put them, else anywhere in the segment; a
  word the phrasing data swaps in (``shut`` for ``closed``) reads as the value it stands for.

What is not read: the result items (their positions, captions and identities are not in the text), nor which
value belongs to which item, nor the predicate's wording, nor the synonyms of object types a paraphrase may use
(``cupboard`` for a cabinet). The read-back is scored by the content it says
(accuracy) and by :func:`eqagen.scoring.structured.group_match` over anchors and values.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc

from eqagen.core import AnswerGroup
from eqagen.scoring.freeform import NUMBER_WORDS
from eqagen.templates.answers import NAMES_TYPES, WHOLE_GROUP_ANSWERS
from eqagen.templates.phrasing import phrasing
from eqagen.templates.words import label, plural

_NUMBER = r"-?\d+(?:\.\d+)?"
_POINT = re.compile(rf"\(x=({_NUMBER}), y=({_NUMBER}), z=({_NUMBER})\)")
Anchor = tuple[float, float, float] | None
_ANCHOR = re.compile(rf"\(x=({_NUMBER}), y=({_NUMBER}), z=({_NUMBER})\)[^:]*:\s*")  # the label ends at its colon
_COUNT_WORDS = {"a": 1, "an": 1, **{w: int(n) for w, n in NUMBER_WORDS.items()}}
_VERB = r"\b(?:was|were|is|are)\s+(?:made of\s+|used for\s+|(?:in|on|inside|next to)\s+the\s+)?"


@dataclass
class Vocabulary:
    """The values each answer type takes in a dataset, as words -> the stored value, and the object types."""

    values: dict[str, dict[str, str]] = field(default_factory=dict)  # answer type -> words -> value
    types: dict[str, str] = field(default_factory=dict)  # singular and plural label -> type

    @classmethod
    def of(cls, questions: pa.Table) -> Vocabulary:
        """From a questions table's ``answer_type`` and ``structured_answer`` columns (read column-wise: a
        dataset's 15,000 records as objects would take seconds)."""
        answers = questions["structured_answer"].combine_chunks()
        groups = pc.list_flatten(answers)
        group_types = pc.take(questions["answer_type"], pc.list_parent_indices(answers)).to_pylist()
        items = pc.list_flatten(groups.field("result"))
        item_types = pc.take(pa.array(group_types, pa.string()), pc.list_parent_indices(groups.field("result")))
        said = set(zip(group_types, groups.field("value").to_pylist()))
        said |= set(zip(item_types.to_pylist(), items.field("value").to_pylist()))
        vocab = cls()
        names = set(items.field("type").to_pylist())
        for answer_type, value in said:
            if answer_type == "objects":
                names.update(value.split(", "))
            elif answer_type not in WHOLE_GROUP_ANSWERS and value:
                for v in value.split(", "):
                    vocab.values.setdefault(answer_type, {})[value_words(answer_type, v)] = v
        for name in sorted(n for n in names if n):  # sorted: where two types read alike, the same one wins
            vocab.types[label(name)] = vocab.types[plural(label(name))] = name
        for words in vocab.values.values():  # the phrasing data's word swaps say a value too ("shut": closed)
            words.update({new: words[old] for old, new in phrasing().word_swaps.items() if old in words})
        return vocab


def value_words(answer_type: str, value: str) -> str:
    """How the answer sentences say a value (``ArmChair`` -> ``arm chair``, ``used_up`` -> ``used up``)."""
    return label(value) if answer_type in NAMES_TYPES else value.replace("_", " ").lower()


def _alternation(words: Iterable[str]) -> str:
    return "|".join(re.escape(w) for w in sorted(words, key=lambda w: (-len(w), w)))


def read_number(segment: str) -> str | None:
    m = re.search(rf"\b({_NUMBER}|{_alternation(NUMBER_WORDS)})\b", segment.lower())
    if m is None:
        return None
    text = NUMBER_WORDS.get(m.group(1), m.group(1))
    return str(int(float(text))) if float(text).is_integer() else text


def read_yes_no(segment: str) -> str | None:
    m = re.search(r"\b(yes|no)\b", segment.lower())
    return m.group(1) if m else None


def read_objects(segment: str, vocab: Vocabulary) -> str | None:
    """``an apple and two cups`` -> ``Apple, Cup, Cup`` (each type as often as counted; sorted)."""
    if not vocab.types:
        return None
    pattern = rf"\b(?:({_alternation(_COUNT_WORDS)}|\d+)\s+)?({_alternation(vocab.types)})\b"
    found = []
    for count, noun in re.findall(pattern, segment.lower()):
        n = int(count) if count.isdigit() else _COUNT_WORDS.get(count, 1)
        found += [vocab.types[noun]] * n
    return ", ".join(sorted(found)) if found else None


def read_values(segment: str, answer_type: str, vocab: Vocabulary) -> str | None:
    """The known values of the type said after the verb (anywhere in the segment where none is); sorted, distinct."""
    words = vocab.values.get(answer_type)
    if not words:
        return None
    text, alternatives = segment.lower(), _alternation(words)
    found = re.findall(rf"{_VERB}({alternatives})\b", text) or re.findall(rf"\b({alternatives})\b", text)
    return ", ".join(sorted({words[w] for w in found})) if found else None


def read_value(segment: str, answer_type: str, vocab: Vocabulary) -> str | None:
    if answer_type in ("number", "count"):
        return read_number(segment)
    if answer_type == "yes/no":
        return read_yes_no(segment)
    if answer_type == "objects":
        return read_objects(segment, vocab)
    return read_values(segment, answer_type, vocab)


def read_anchor(text: str) -> tuple[float, float, float] | None:
    """The first point a text names as ``(x=.., y=.., z=..)``."""
    m = _POINT.search(text)
    return (float(m.group(1)), float(m.group(2)), float(m.group(3))) if m else None


def read_back(text: str, answer_type: str, vocab: Vocabulary, asked: Anchor = None) -> list[AnswerGroup]:
    """The groups a text says: one per ``"; "`` segment whose value could be read, with its anchor if named.
    ``asked``: the point a grounded question names; an answer to it is about that anchor, so a single group
    whose text names none is given it."""
    groups = []
    for segment in text.split("; "):
        m = _ANCHOR.search(segment)
        anchor = (float(m.group(1)), float(m.group(2)), float(m.group(3))) if m else None
        value = read_value(segment[m.end() :] if m else segment, answer_type, vocab)
        if value is not None:
            groups.append(AnswerGroup("", anchor, (), value))
    if asked is not None and len(groups) == 1 and groups[0].anchor is None:
        groups = [AnswerGroup("", asked, (), groups[0].value)]
    return groups
