"""The deterministic offline paraphraser: used when the config names it (``model: offline``).

Each query type has a jinja2 file in ``eqagen/templates/paraphrase/offline`` whose macros
``question_N`` / ``answer_N`` are the variants. The variants are tried in an order drawn from
``derive_rng(seed, "paraphrase", "offline", question_id)``; the first pair the validator accepts is
used, so an offline paraphrase is validated by the same rules as an LLM one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from typing import Any

from eqagen.core.records import Paraphrase, QARecord
from eqagen.core.rng import derive_rng
from eqagen.paraphrase.config import OFFLINE_MODEL
from eqagen.paraphrase.lexicon import NUMBER_WORDS
from eqagen.paraphrase.prompts import environment
from eqagen.paraphrase.validator import ItemFacts, check_paraphrase, derive_facts

_WORD_OF = {v: k for k, v in NUMBER_WORDS.items() if k not in ("twice", "thrice", "once", "none")}
_YES_NO_TYPES = ("yes/no", "yesno", "bool", "boolean")


@dataclass(frozen=True)
class OfflineOutcome:
    paraphrase: Paraphrase
    reason: str  # "" when validated


def variant_family(record: QARecord) -> str:
    """Which offline template file serves ``record``."""
    query = record.program.query.name
    if record.answer_type in _YES_NO_TYPES:
        return "yes_no"
    if query == "count" or record.answer_type in ("number", "count"):
        return "count"
    return {"listObjects": "list", "getLocation": "location", "getProperty": "property", "getState": "property"}.get(
        query, "generic"
    )


@cache
def variants(family: str) -> tuple[tuple[Callable[..., str], ...], tuple[Callable[..., str], ...]]:
    """(question macros, answer macros) of one offline template file, in name order."""
    module = environment().get_template(f"offline/{family}.j2").module
    names = sorted(n for n in dir(module) if n.startswith(("question_", "answer_")))
    questions = tuple(getattr(module, n) for n in names if n.startswith("question_"))
    answers = tuple(getattr(module, n) for n in names if n.startswith("answer_"))
    return questions, answers


def _lower_first(text: str) -> str:
    if len(text) > 1 and text[0].isupper() and (text[1].islower() or text[1] == " "):
        return text[0].lower() + text[1:]
    return text


def variant_context(record: QARecord) -> dict[str, Any]:
    q = " ".join(record.question.split())
    a = " ".join(record.answer.split())
    q_bare, a_bare = q.rstrip("?").rstrip(), a.rstrip(".").rstrip()
    number_word = None
    if a_bare.isdigit() and int(a_bare) in _WORD_OF:
        number_word = _WORD_OF[int(a_bare)]
    values = {g.value.strip().lower() for g in record.structured_answer}
    return {
        "q": q,
        "q_lc": _lower_first(q),
        "q_lc_bare": _lower_first(q_bare),
        "a": a,
        "a_bare": a_bare,
        "a_lc_bare": _lower_first(a_bare),
        "a_number_word": number_word,
        "yes": bool(values & {"yes", "true"}) or a.lower().startswith("yes"),
    }


def offline_paraphrase(record: QARecord, seed: int, item: ItemFacts | None = None) -> OfflineOutcome:
    """The seeded offline paraphrase of ``record``, validated; the template text if no variant passes."""
    item = item or derive_facts(record)
    questions, answers = variants(variant_family(record))
    rng = derive_rng(seed, "paraphrase", "offline", record.question_id)
    q_order, a_order = rng.permutation(len(questions)), rng.permutation(len(answers))
    ctx = variant_context(record)
    last_reason, tried = "no offline variant", 0
    for qi in q_order:
        question = str(questions[qi](ctx)).strip()
        for ai in a_order:
            answer = str(answers[ai](ctx)).strip()
            verdict = check_paraphrase(record, question, answer, item)
            tried += 1
            if verdict.ok:
                return OfflineOutcome(Paraphrase(question, answer, OFFLINE_MODEL, True, tried), "")
            last_reason = verdict.reason
    kept = Paraphrase(record.question, record.answer, OFFLINE_MODEL, False, tried, last_reason)
    return OfflineOutcome(kept, last_reason)
