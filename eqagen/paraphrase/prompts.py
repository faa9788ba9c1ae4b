"""Prompt rendering (jinja2 templates in ``eqagen/templates/paraphrase``), few-shot selection and
tolerant parsing of the model's JSON reply.

A request is: the system prompt, ``n_shots`` examples drawn seeded from the train split (each a user
turn describing the example and an assistant turn with its reference rewrite), then the item. A retry
after a rejected rewrite appends the rejected reply and the validator's reasons, so the retry is a new,
deterministic request with its own cache entry.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache

import jinja2

from eqagen.core.records import QARecord
from eqagen.core.rng import derive_rng
from eqagen.paraphrase.validator import ItemFacts

Message = dict[str, str]
TEMPLATE_DIR = "templates/paraphrase"
PROMPT_TEMPLATES = ("system.j2", "item.j2", "retry.j2")

JSON_SCHEMA = {
    "name": "paraphrase",
    "strict": True,
    "schema": {
        "type": "object",
        "properties": {"question": {"type": "string"}, "answer": {"type": "string"}},
        "required": ["question", "answer"],
        "additionalProperties": False,
    },
}


@cache
def environment() -> jinja2.Environment:
    return jinja2.Environment(
        loader=jinja2.PackageLoader("eqagen", TEMPLATE_DIR),
        undefined=jinja2.StrictUndefined,
        autoescape=False,  # plain text prompts, never HTML
        keep_trailing_newline=False,
    )


@cache
def template_digest() -> str:
    """Hash of every prompt template's source: editing a template invalidates the cache by itself."""
    env = environment()
    sources = [env.loader.get_source(env, name)[0] for name in PROMPT_TEMPLATES]  # type: ignore[union-attr]
    return hashlib.blake2b("\0".join(sources).encode(), digest_size=8).hexdigest()


def fact_lines(item: ItemFacts) -> list[str]:
    return [f"{f.kind} {f.label} (in the {' and '.join(f.sides)})" for f in item.essential]


def render_item(record: QARecord, item: ItemFacts) -> str:
    return (
        environment()
        .get_template("item.j2")
        .render(
            structured_question=record.structured_question or record.program.signature(),
            facts=fact_lines(item),
            question=record.question,
            answer=record.answer,
        )
    )


def render_reply(question: str, answer: str) -> str:
    return json.dumps({"question": question, "answer": answer}, ensure_ascii=False)


def render_retry(reasons: Sequence[str]) -> str:
    return environment().get_template("retry.j2").render(reasons=list(reasons))


def system_prompt() -> str:
    return environment().get_template("system.j2").render()


def example_pool(records: Sequence[QARecord]) -> list[QARecord]:
    """The train split when the records carry splits, else every record (splits may come later)."""
    train = [r for r in records if r.split == "train"]
    pool = train or list(records)
    return sorted(pool, key=lambda r: r.question_id)


def pick_examples(record: QARecord, pool: Sequence[QARecord], n_shots: int, seed: int) -> list[QARecord]:
    """``n_shots`` examples for ``record``, seeded by (seed, question_id): half of them (rounded up)
    share its query type when the pool has such, the rest are drawn from the others for variety."""
    others = [r for r in pool if r.question_id != record.question_id]
    if n_shots == 0 or not others:
        return []
    rng = derive_rng(seed, "paraphrase", "few-shot", record.question_id)
    same = [r for r in others if r.query_type == record.query_type]
    rest = [r for r in others if r.query_type != record.query_type]
    n_same = min(len(same), (n_shots + 1) // 2)
    chosen = [same[i] for i in rng.choice(len(same), n_same, replace=False)] if n_same else []
    n_rest = min(len(rest), n_shots - n_same)
    chosen += [rest[i] for i in rng.choice(len(rest), n_rest, replace=False)] if n_rest else []
    if len(chosen) < n_shots:  # the pool is short of other query types: top up from the same type
        left = [r for r in same if r not in chosen]
        chosen += left[: n_shots - len(chosen)]
    return chosen


@dataclass(frozen=True)
class Shot:
    record: QARecord
    item: ItemFacts
    question: str
    answer: str


def build_messages(record: QARecord, item: ItemFacts, shots: Sequence[Shot]) -> list[Message]:
    messages: list[Message] = [{"role": "system", "content": system_prompt()}]
    for shot in shots:
        messages.append({"role": "user", "content": render_item(shot.record, shot.item)})
        messages.append({"role": "assistant", "content": render_reply(shot.question, shot.answer)})
    messages.append({"role": "user", "content": render_item(record, item)})
    return messages


def with_retry(messages: list[Message], reply: str, reasons: Sequence[str]) -> list[Message]:
    return [*messages, {"role": "assistant", "content": reply}, {"role": "user", "content": render_retry(reasons)}]


# ---- tolerant parsing ------------------------------------------------------------------------------

_FENCE = re.compile(r"```(?:json)?\s*(.*?)```", re.S)
_LABELLED = re.compile(r"question\W*:\s*(?P<q>.+?)\s*(?:\n|\s)answer\W*:\s*(?P<a>.+)", re.I | re.S)


class ReplyFormatError(ValueError):
    """The model's reply holds no question and answer."""


def _json_objects(text: str) -> list[str]:
    """Balanced ``{...}`` spans of ``text``, outermost first."""
    spans, depth, start, in_str, escaped = [], 0, -1, False, False
    for i, ch in enumerate(text):
        if in_str:
            if escaped:
                escaped = False
            elif ch == "\\":
                escaped = True
            elif ch == '"':
                in_str = False
            continue
        if ch == '"':
            in_str = True
        elif ch == "{":
            depth, start = depth + 1, (i if depth == 0 else start)
        elif ch == "}" and depth:
            depth -= 1
            if depth == 0:
                spans.append(text[start : i + 1])
    return spans


def _from_mapping(data: object) -> tuple[str, str] | None:
    if not isinstance(data, dict):
        return None
    lowered = {str(k).lower(): v for k, v in data.items()}
    q, a = lowered.get("question"), lowered.get("answer")
    if isinstance(q, str) and isinstance(a, (str, int, float)):
        return q.strip(), str(a).strip()
    return None


def parse_reply(text: str) -> tuple[str, str]:
    """(question, answer) from a reply: strict JSON, JSON in a code fence or in prose, or labelled
    ``Question: ... Answer: ...`` lines. Raises :class:`ReplyFormatError` with what was wrong."""
    candidates: list[Callable[[], object]] = [lambda: json.loads(text)]
    candidates += [lambda s=s: json.loads(s) for s in _FENCE.findall(text)]
    candidates += [lambda s=s: json.loads(s) for s in _json_objects(text)]
    for load in candidates:
        try:
            found = _from_mapping(load())
        except (json.JSONDecodeError, ValueError):
            continue
        if found:
            return found
    match = _LABELLED.search(text.strip().strip("{}"))
    if match:
        return match.group("q").strip(), match.group("a").strip()
    raise ReplyFormatError(f"malformed reply: no JSON object with 'question' and 'answer' in {text[:80]!r}")
