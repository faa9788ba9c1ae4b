"""The question record: a program, its structured answer and its text (../docs/DESIGN.md, "Records").

Everything here is plain data with fixed types, so that the questions table has an explicit schema:
answer values are strings (with ``answer_type`` saying how to read them), never mixed bool/int/str.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, fields
from typing import Any

from eqagen.core.rng import stable_hash

SPLITS = ("train", "validation", "test")  # Hugging Face's split names
SPLIT_SYNONYMS = {"val": "validation"}  # accepted wherever a split is named: commands, split files


def split_name(name: str) -> str:
    """The split a name means: ``val`` is ``validation``; any other name as given."""
    return SPLIT_SYNONYMS.get(name, name)


OPENEQA_CATEGORIES = (
    "object recognition",
    "object localization",
    "attribute recognition",
    "spatial understanding",
    "object state recognition",
    "functional reasoning",
    "world knowledge",
)
EXPRESS_CATEGORIES = ("state", "knowledge", "location", "attribute", "counting", "existence", "object")


@dataclass(frozen=True)
class FilterSpec:
    """One filter predicate: ``family`` (property, location, state, position, moment, region, ...),
    ``key`` (color, on, open, left_of, after, ...), ``value`` (its canonical text: ``green``,
    ``CounterTop``, ``open Fridge #2``) and ``args`` (JSON-able details, e.g. entity indices)."""

    family: str
    key: str
    value: str
    args: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {
            "family": self.family,
            "key": self.key,
            "value": self.value,
            "args": dict(self.args),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> FilterSpec:
        return cls(data["family"], data["key"], data["value"], _args_of(data.get("args")))


@dataclass(frozen=True)
class QuerySpec:
    """The final aggregation: ``name`` (listObjects, count, getState, getProperty, getLocation, exists,
    ...) and its ``arg`` (the state or property asked for, or ``""``)."""

    name: str
    arg: str = ""
    args: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "arg": self.arg, "args": dict(self.args)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> QuerySpec:
        return cls(data["name"], data.get("arg") or "", _args_of(data.get("args")))


def _args_of(value: dict[str, Any] | None) -> dict[str, Any]:
    """Args as stored: a struct whose null fields are args the program does not have (a null struct: none)."""
    return {k: v for k, v in (value or {}).items() if v is not None}


def _args_text(args: dict[str, Any]) -> str:
    """Args take part in a program's identity (a query's subject, a filter's receptacle); empty: ""."""
    return json.dumps(args, sort_keys=True, separators=(",", ":")) if args else ""


@dataclass(frozen=True)
class Program:
    filters: tuple[FilterSpec, ...]
    query: QuerySpec

    @property
    def families(self) -> tuple[str, ...]:
        return tuple(sorted({f.family for f in self.filters}))

    def signature(self) -> str:
        """Canonical text of the program; equal programs have equal signatures."""
        parts = [f"{f.family}:{f.key}={f.value}{_args_text(f.args)}" for f in self.filters]
        return f"{self.query.name}({self.query.arg}{_args_text(self.query.args)})?" + " AND ".join(sorted(parts))

    def to_dict(self) -> dict[str, Any]:
        return {"filters": [f.to_dict() for f in self.filters], "query": self.query.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Program:
        return cls(tuple(FilterSpec.from_dict(f) for f in data["filters"]), QuerySpec.from_dict(data["query"]))


@dataclass(frozen=True)
class ResultItem:
    entity: str  # instance id
    type: str
    position: tuple[float, float, float]
    caption: str = ""
    value: str = ""  # what the query says about this entity (getState: "off"); "" for counts, lists, yes/no

    def to_dict(self) -> dict[str, Any]:
        # written out rather than dataclasses.asdict, which deep-copies field by field (a tenth of a record's
        # cost when every record is converted for its table)
        return {
            "entity": self.entity,
            "type": self.type,
            "position": list(self.position),
            "caption": self.caption,
            "value": self.value,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ResultItem:
        return cls(
            data["entity"], data["type"], _xyz(data["position"]), data.get("caption") or "", data.get("value") or ""
        )


def _xyz(values: Any) -> tuple[float, float, float]:
    x, y, z = (float(c) for c in values)
    return x, y, z


@dataclass(frozen=True)
class AnswerGroup:
    """One group of the structured answer: the grounded predicate value it stands for, the anchor's
    coordinates (episode frame; None when ungrounded), the entities it holds and the answer value."""

    predicate: str
    anchor: tuple[float, float, float] | None
    result: tuple[ResultItem, ...]
    value: str

    def to_dict(self) -> dict[str, Any]:
        return {
            "predicate": self.predicate,
            "anchor": list(self.anchor) if self.anchor is not None else None,
            "result": [r.to_dict() for r in self.result],
            "value": self.value,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> AnswerGroup:
        anchor = data.get("anchor")
        result = tuple(ResultItem.from_dict(r) for r in data.get("result") or ())
        return cls(
            data.get("predicate") or "", None if anchor is None else _xyz(anchor), result, data.get("value") or ""
        )


@dataclass
class Paraphrase:
    """What the paraphrase stage did for one question, as it happened: the text kept (the rewrite when
    ``validated``, else the template text), the model that answered ("offline" for the offline
    paraphraser, "" when no model answered), how many rewrites were checked, and why the template text
    was kept ("" when validated)."""

    question: str
    answer: str
    model: str = ""
    validated: bool = False
    attempts: int = 0
    reason: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "question": self.question,
            "answer": self.answer,
            "model": self.model,
            "validated": self.validated,
            "attempts": self.attempts,
            "reason": self.reason,
        }

    @classmethod
    def from_stored(cls, data: dict[str, Any] | None) -> Paraphrase | None:
        """The stored column back: None where it records nothing (no model, not validated, no reason), as
        :meth:`QARecord.to_dict` writes a record that was never paraphrased."""
        if not data or not (data.get("model") or data.get("validated") or data.get("reason")):
            return None
        return cls(**data)


@dataclass
class QARecord:
    """One row of the questions table."""

    episode_id: str
    scene_id: str
    family: str
    backend: str
    program: Program
    structured_question: str
    structured_answer: list[AnswerGroup]
    answer_type: str  # number, yes/no, color, material, utility, state, object, objects, location, ...
    answer_key: str  # the canonical answer compared across scenes by balancing
    question: str
    answer: str
    grounded: bool
    category: str  # one of OPENEQA_CATEGORIES
    express_category: str  # one of EXPRESS_CATEGORIES
    balance_key: str  # the ungrounded canonical question
    query_type: str
    split: str = ""
    choices: list[str] = field(default_factory=list)
    paraphrase: Paraphrase | None = None
    generator_version: str = ""
    config_hash: str = ""

    @property
    def predicate_families(self) -> list[str]:
        return list(self.program.families)

    @property
    def n_filters(self) -> int:
        return len(self.program.filters)

    @property
    def question_id(self) -> str:
        """Stable: the same episode and program (and grounding) always give the same id."""
        return stable_hash(self.episode_id, self.program.signature(), self.grounded, digest_size=10)

    def to_dict(self) -> dict[str, Any]:
        para = self.paraphrase or Paraphrase(self.question, self.answer, "", False)
        return {
            "question_id": self.question_id,
            "episode_id": self.episode_id,
            "scene_id": self.scene_id,
            "family": self.family,
            "backend": self.backend,
            "split": self.split,
            "program": self.program.to_dict(),
            "structured_question": self.structured_question,
            "structured_answer": [g.to_dict() for g in self.structured_answer],
            "answer_type": self.answer_type,
            "answer_key": self.answer_key,
            "question": self.question,
            "answer": self.answer,
            "paraphrase": para.to_dict(),
            "grounded": self.grounded,
            "category": self.category,
            "express_category": self.express_category,
            "balance_key": self.balance_key,
            "query_type": self.query_type,
            "choices": list(self.choices),
            "predicate_families": self.predicate_families,
            "n_filters": self.n_filters,
            "generator_version": self.generator_version,
            "config_hash": self.config_hash,
        }

    @classmethod
    def from_dict(cls, row: dict[str, Any]) -> QARecord:
        """Inverse of :meth:`to_dict` (the derived fields, ``question_id``, ``predicate_families`` and
        ``n_filters``, are recomputed). Nulls read as the field's empty value."""
        program = Program.from_dict(row["program"])
        return cls(
            **{name: row.get(name) or "" for name in _TEXT_FIELDS},
            program=program,
            structured_answer=[AnswerGroup.from_dict(g) for g in row["structured_answer"]],
            grounded=bool(row.get("grounded")),
            query_type=row.get("query_type") or program.query.name,
            choices=list(row.get("choices") or ()),
            paraphrase=Paraphrase.from_stored(row.get("paraphrase")),
        )


# QARecord's plain text fields: stored as they are, a null read back as "".
_TEXT_FIELDS = tuple(
    f.name for f in fields(QARecord)
    if f.name not in {"program", "structured_answer", "grounded", "query_type", "choices", "paraphrase"}
)  # fmt: skip
