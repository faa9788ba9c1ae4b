"""Prompt rendering (jinja2 templates in ``eqagen/templates/paraphrase``), few-shot selection and
tolerant parsing of the model's JSON reply.

A request is: the system prompt, ``n_shots`` examples drawn seeded from the train split (each a user
turn describing the example and an assistant turn with its reference rewrite), then the item. A retry
after a rejected rewrite appends the rejected reply and the validator's reasons, so the retry is a new,
deterministic request with its own cache entry.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import cache

import jinja2
import numpy as np

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


class ExamplePool:
    """The few-shot pool: the train split when the records carry splits, else every record (the
    pipeline paraphrases before it splits). Records are ordered by (query type, question id), so each
    query type is one contiguous block and a draw costs O(n_shots), not O(pool)."""

    def __init__(self, records: Sequence[QARecord]):
        train = [r for r in records if r.split == "train"]
        keyed = sorted(((r.query_type, r.question_id, r) for r in (train or records)), key=lambda t: t[:2])
        self.records = [r for _, _, r in keyed]
        self.ids = [qid for _, qid, _ in keyed]
        self.blocks: dict[str, tuple[int, int]] = {}
        for i, (query_type, _, _) in enumerate(keyed):
            start, _ = self.blocks.get(query_type, (i, i))
            self.blocks[query_type] = (start, i + 1)

    def __len__(self) -> int:
        return len(self.records)

    def pick(self, question_id: str, query_type: str, n_shots: int, seed: int) -> list[QARecord]:
        """``n_shots`` examples for one item, seeded by (seed, question_id), never the item itself:
        half of them (rounded up) of its query type where the pool has such, the rest of other types."""
        rng = derive_rng(seed, "paraphrase", "few-shot", question_id)
        start, stop = self.blocks.get(query_type, (0, 0))
        same, rest = range(start, stop), _OutsideBlock(start, stop, len(self))
        chosen = _draw(rng, same, (n_shots + 1) // 2, self.ids, question_id)
        chosen += _draw(rng, rest, n_shots - len(chosen), self.ids, question_id)
        if len(chosen) < n_shots:  # too few of other types: top up from the same type
            chosen += _draw(rng, same, n_shots - len(chosen), self.ids, question_id, taken=set(chosen))
        return [self.records[i] for i in chosen]


class _OutsideBlock:
    """The positions of ``range(total)`` outside ``[start, stop)``, as a sequence not built in memory."""

    def __init__(self, start: int, stop: int, total: int):
        self.start, self.width, self.size = start, stop - start, total - (stop - start)

    def __len__(self) -> int:
        return self.size

    def __getitem__(self, u: int) -> int:
        return u if u < self.start else u + self.width

    def __iter__(self):
        return (self[u] for u in range(self.size))


def _draw(
    rng: np.random.Generator, positions: Sequence[int], k: int, ids: list[str], exclude: str,
    taken: set[int] | None = None,
) -> list[int]:  # fmt: skip
    """Up to ``k`` distinct positions drawn uniformly, never the item itself nor one ``taken``."""
    taken = taken or set()
    if k <= 0 or len(positions) == 0:
        return []
    if len(positions) <= 4 * (k + len(taken) + 1):  # small: draw exactly from the free positions
        free = [p for p in positions if p not in taken and ids[p] != exclude]
        return [free[i] for i in rng.choice(len(free), min(k, len(free)), replace=False)]
    out, seen = [], set(taken)
    while len(out) < k:  # large: rejection sampling, at least 3 in 4 positions are free
        pos = positions[int(rng.integers(len(positions)))]
        if pos not in seen and ids[pos] != exclude:
            seen.add(pos)
            out.append(pos)
    return out


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

_LABELLED = re.compile(r"question\W*:\s*(?P<q>.+?)\s*(?:\n|\s)answer\W*:\s*(?P<a>.+)", re.I | re.S)


class ReplyFormatError(ValueError):
    """The model's reply holds no question and answer."""


def _json_objects(text: str, limit: int = 64) -> list[object]:
    """Every JSON object that starts at a ``{`` of ``text`` (the first ``limit`` of them). Decoding from
    each brace, rather than matching braces, is not fooled by quotes or braces in the prose around."""
    decoder = json.JSONDecoder()
    found = []
    for match in itertools.islice(re.finditer(r"\{", text), limit):
        try:
            found.append(decoder.raw_decode(text, match.start())[0])
        except json.JSONDecodeError:
            continue
    return found


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
    for data in _json_objects(text):
        found = _from_mapping(data)
        if found:
            return found
    match = _LABELLED.search(text.strip().strip("{}"))
    if match:
        return match.group("q").strip(), match.group("a").strip()
    raise ReplyFormatError(f"malformed reply: no JSON object with 'question' and 'answer' in {text[:80]!r}")
