"""The deterministic offline paraphraser: used when no LLM endpoint is configured.

It rewords a record with the phrasing data the templates use (``eqagen/templates/phrasing.yaml``):

- the question in another variant than its template text: another question text and, where a filter has
  several, other filter phrases, rendered from the record's program (and, grounded, its anchor);
- words swapped for synonyms the validator reads alike: object types for their synonyms in
  ``lexicon.TYPE_SYNONYMS`` where the synonym names no other type the item has ("refrigerator" for fridge),
  and the phrasing data's word swaps ("just after" for "right after");
- the answer introduced by one of the data's openings.

Every choice is drawn from the row's own generator, ``derive_rng(seed, "paraphrase", "offline",
question_id)``. The candidates are tried in the drawn order, and the first pair the validator accepts is
used (``model = "offline"``, ``validated = true``); when none passes, the template text is kept, not
validated, with the validator's reason.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache

import numpy as np

from eqagen.core.errors import UnknownNameError
from eqagen.core.records import Paraphrase, Program, QARecord
from eqagen.core.rng import derive_rng
from eqagen.paraphrase import lexicon as lx
from eqagen.paraphrase.config import OFFLINE_MODEL
from eqagen.paraphrase.validator import ItemFacts, derive_facts, pair_verdict, side_reasons
from eqagen.predicates.registry import REGISTRY, world_support
from eqagen.templates.phrasing import Wording, filter_phrases, phrasing, question_variants
from eqagen.templates.render import Point, conjunct, program_wording, question_text
from eqagen.templates.words import label, lower_first, plural

MAX_QUESTIONS = 4  # reworded questions tried per row (each with every answer opening)


@dataclass(frozen=True)
class OfflineOutcome:
    paraphrase: Paraphrase
    reason: str  # "" when validated


def offline_paraphrase(record: QARecord, seed: int, item: ItemFacts | None = None) -> OfflineOutcome:
    """The seeded offline paraphrase of ``record``, validated; the template text if no candidate passes."""
    item = item or derive_facts(record)
    rng = derive_rng(seed, "paraphrase", "offline", record.question_id)
    swaps = type_swaps(item)
    questions = reworded_questions(record, item, swaps, rng)
    answers = reworded_answers(record, item, swaps, rng)
    last_reason, tried = "no offline rewording", 0
    answer_reasons: list[list[str]] = []  # each answer checked once, when first paired
    for question in questions:
        question_reasons = side_reasons(item, "question", question)
        for j, answer in enumerate(answers):
            if j == len(answer_reasons):
                answer_reasons.append(side_reasons(item, "answer", answer))
            verdict = pair_verdict(question, answer, question_reasons, answer_reasons[j])
            tried += 1
            if verdict.ok:
                return OfflineOutcome(Paraphrase(question, answer, OFFLINE_MODEL, True, tried), "")
            last_reason = verdict.reason
    kept = Paraphrase(record.question, record.answer, OFFLINE_MODEL, False, tried, last_reason)
    return OfflineOutcome(kept, last_reason)


# -- questions ----------------------------------------------------------------------------------------
def reworded_questions(record: QARecord, item: ItemFacts, swaps: TypeSwaps, rng: np.random.Generator) -> list[str]:
    """The question in other wordings than its template's (drawn order), each with synonyms swapped in; last,
    the template text with synonyms (the template text itself where none applies)."""
    texts = [question_text(record.program, w, grounded_anchor(record)) for w in other_wordings(record, rng)]
    reworded = [t for t in (swap_words(t, item, swaps, rng) for t in texts) if t != record.question]
    return [*list(dict.fromkeys(reworded))[:MAX_QUESTIONS], swap_words(record.question, item, swaps, rng)]


def other_wordings(record: QARecord, rng: np.random.Generator) -> list[Wording]:
    """Wordings of the record's program other than its template's: every other question text, in drawn order,
    each with filter phrases drawn too. None for a query or filter the phrasing data does not word."""
    program = record.program
    if not worded(record):
        return []
    used = program_wording(program)
    n_questions = len(question_variants(program.query) or ())
    others = [i for i in rng.permutation(n_questions).tolist() if i != used.question] or [used.question]
    return [Wording(i, drawn_filter_variants(program, rng)) for i in others]


def worded(record: QARecord) -> bool:
    """Whether the phrasing data words the record's query and filters (its world family's registered)."""
    try:
        world_support(record.family)  # registers the world family's filters and queries
    except UnknownNameError:
        return False
    program = record.program
    known = all((f.family, f.key) in REGISTRY.filters for f in program.filters)
    return known and question_variants(program.query) is not None and all(filter_phrases(f) for f in program.filters)


def drawn_filter_variants(program: Program, rng: np.random.Generator) -> tuple[int, ...]:
    return tuple(int(rng.integers(len(p.texts) if p else 1)) for p in map(filter_phrases, program.filters))


def grounded_anchor(record: QARecord) -> dict[int, Point]:
    """A grounded record's anchor: which filter names it (the one whose TAG-EQA form is the group's
    predicate) and its coordinates; empty for an ungrounded record."""
    if not record.grounded or len(record.structured_answer) != 1 or record.structured_answer[0].anchor is None:
        return {}
    group = record.structured_answer[0]
    anchor = tuple(group.anchor)
    for i, f in enumerate(record.program.filters):
        if conjunct(f, anchor) == group.predicate:  # type: ignore[arg-type]
            return {i: anchor}  # type: ignore[dict-item]
    return {}


# -- answers ------------------------------------------------------------------------------------------
def reworded_answers(record: QARecord, item: ItemFacts, swaps: TypeSwaps, rng: np.random.Generator) -> list[str]:
    """The answer under each of the data's openings (drawn order), with synonyms swapped in."""
    answer = " ".join(record.answer.split())
    openings = phrasing().answer_openings
    texts = [openings[i].format(answer=answer, answer_lc=lower_first(answer)) for i in rng.permutation(len(openings))]
    return list(dict.fromkeys(swap_words(t, item, swaps, rng) for t in texts))


# -- synonyms -----------------------------------------------------------------------------------------
@cache
def word_swaps() -> tuple[tuple[str, re.Pattern[str], str], ...]:
    """The phrasing data's word swaps: (the word, the word where no other word goes on before or after it,
    its swap)."""
    swaps = phrasing().word_swaps.items()
    return tuple((old, re.compile(rf"(?<![\w-]){re.escape(old)}(?![\w])"), new) for old, new in swaps)


Renaming = tuple[tuple[str, str], ...]  # (a type's name or plural, the synonym's), the longest name first
TypeSwaps = tuple[tuple[str, tuple[Renaming, ...]], ...]  # per type of the item: a renaming per safe synonym


def type_swaps(item: ItemFacts) -> TypeSwaps:
    """The item's object types (sorted), each with a renaming per synonym that names it alone: made once per
    record, for all its texts."""
    return tuple((t, tuple(renaming(t, s) for s in safe_synonyms(t, item))) for t in sorted(item.types))


def swap_words(text: str, item: ItemFacts, swaps: TypeSwaps, rng: np.random.Generator) -> str:
    """``text`` with, each drawn with probability one half, the data's word swaps and the item's object types
    named by a synonym that names that type alone (one synonym drawn per type)."""
    for old, pattern, new in word_swaps():
        if old in text and pattern.search(text) and rng.random() < 0.5:  # most texts lack the word
            text = pattern.sub(new, text)
    for type_name, renamings in swaps:
        if renamings:
            chosen = renamings[int(rng.integers(len(renamings)))]
            if rng.random() < 0.5:
                text = replace_type(text, type_name, chosen, item)
    return text


def safe_synonyms(type_name: str, item: ItemFacts) -> list[str]:
    """The type's synonyms that the validator reads as that type only, given the item's types."""
    return [s for s in lx.TYPE_SYNONYMS.get(type_name, ()) if lx.scan_types(s, item.types) == [frozenset({type_name})]]


def renaming(type_name: str, synonym: str) -> Renaming:
    """The type's name and plural, each with the synonym's, the longest name first."""
    forms = {label(type_name): synonym, plural(label(type_name)): plural(synonym)}
    return tuple((form, forms[form]) for form in sorted(forms, key=len, reverse=True))


def replace_type(text: str, type_name: str, names: Renaming, item: ItemFacts) -> str:
    """Each mention of the type by its name (or plural) that reads as that type alone, renamed by ``names``."""
    norm, lower = lx.normalize_text(text), text.lower()
    if norm != lower:  # mention positions are in the normalised text
        return text
    out, end = [], 0
    for start, owners in lx.type_spans(norm, item.types):
        form, replacement = next(((f, r) for f, r in names if lower.startswith(f, start)), ("", ""))
        if not form or owners != frozenset({type_name}) or lower[start + len(form) : start + len(form) + 1].isalnum():
            continue
        if text[start].isupper():
            replacement = replacement[:1].upper() + replacement[1:]
        out += [text[end:start], replacement]
        end = start + len(form)
    return "".join([*out, text[end:]])
