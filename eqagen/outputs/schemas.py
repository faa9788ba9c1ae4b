"""Explicit pyarrow schemas of the two output tables, and the conversion of records to rows.

Never inferred: a schema inferred from the first batch breaks on the first ``None`` or empty list of a
later batch, and two runs could disagree. The questions table follows :meth:`QARecord.to_dict`; the
episodes table follows :meth:`Episode.to_dict`, with every step, entity, event and timeline change
nested in the row, so that any answer can be recomputed from the shards alone
(:mod:`eqagen.outputs.readers` rebuilds the :class:`~eqagen.core.Episode`).

Timeline arrays have a per-field dtype (float32 positions, bool flags, int32 parents); as in
:meth:`Episode.to_dict` they are flattened to ``list<double>`` (exact for all three) with the field's
``dtype`` and ``width``.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from eqagen.core import Episode, QARecord
from eqagen.paraphrase.tables import PARAPHRASE_TYPE

SCHEMA_VERSION = "1"
_STR, _I32, _F64 = pa.string(), pa.int32(), pa.float64()


def _list(t: pa.DataType) -> pa.DataType:
    return pa.list_(t)


FILTER_TYPE = pa.struct([("family", _STR), ("key", _STR), ("value", _STR), ("args", _STR)])
QUERY_TYPE = pa.struct([("name", _STR), ("arg", _STR), ("args", _STR)])
PROGRAM_TYPE = pa.struct([("filters", _list(FILTER_TYPE)), ("query", QUERY_TYPE)])
RESULT_ITEM_TYPE = pa.struct(
    [("entity", _STR), ("type", _STR), ("position", _list(_F64)), ("caption", _STR), ("value", _STR)]
)
ANSWER_GROUP_TYPE = pa.struct(
    [("predicate", _STR), ("anchor", _list(_F64)), ("result", _list(RESULT_ITEM_TYPE)), ("value", _STR)]
)

QUESTIONS_SCHEMA = pa.schema(
    [
        pa.field("question_id", _STR, nullable=False),
        pa.field("episode_id", _STR, nullable=False),
        pa.field("scene_id", _STR, nullable=False),
        ("family", _STR),
        ("backend", _STR),
        ("split", _STR),
        ("program", PROGRAM_TYPE),
        ("structured_question", _STR),
        ("structured_answer", _list(ANSWER_GROUP_TYPE)),
        ("answer_type", _STR),
        ("answer_key", _STR),
        ("question", _STR),
        ("answer", _STR),
        ("paraphrase", PARAPHRASE_TYPE),
        ("grounded", pa.bool_()),
        ("category", _STR),
        ("express_category", _STR),
        ("balance_key", _STR),
        ("query_type", _STR),
        ("choices", _list(_STR)),
        ("predicate_families", _list(_STR)),
        ("n_filters", _I32),
        ("generator_version", _STR),
        ("config_hash", _STR),
    ],
    metadata={"eqagen.table": "questions", "eqagen.schema_version": SCHEMA_VERSION},
)

FRAME_TYPE = pa.struct([("native", _STR), ("origin", _list(_F64)), ("yaw0", _F64)])
STEPS_TYPE = pa.struct(
    [
        ("action", _list(_STR)),
        ("target", _list(_I32)),
        ("receptacle", _list(_I32)),
        ("args", _list(_STR)),  # JSON per step
        ("success", _list(pa.bool_())),
        ("error", _list(_STR)),
        ("pose", _list(_list(pa.float32()))),  # [T][x, y, z, yaw, pitch]
        ("held", _list(_I32)),
    ]
)
ENTITIES_TYPE = pa.struct(
    [
        ("instance_id", _list(_STR)),
        ("type", _list(_STR)),
        ("native_id", _list(_STR)),
        ("attributes", _list(_STR)),  # JSON object per entity
        ("capabilities", _list(_list(_STR))),
    ]
)
TIMELINE_FIELD_TYPE = pa.struct(
    [
        ("name", _STR),
        ("dtype", _STR),
        ("width", _I32),  # values per entity: 1 for flags, 3 for position
        ("initial", _list(_F64)),  # [N * width] flattened
        ("t", _list(_I32)),
        ("entity", _list(_I32)),
        ("value", _list(_F64)),  # [K * width] flattened
    ]
)
TIMELINE_TYPE = pa.struct([("n_steps", _I32), ("fields", _list(TIMELINE_FIELD_TYPE))])
EVENT_TYPE = pa.struct([("t", _I32), ("kind", _STR), ("entity", _I32), ("target", _I32), ("ordinal", _I32)])
REGION_TYPE = pa.struct([("region_id", _STR), ("category", _STR), ("footprint", _list(_F64)), ("name", _STR)])

EPISODES_SCHEMA = pa.schema(
    [
        pa.field("episode_id", _STR, nullable=False),
        ("family", _STR),
        ("backend", _STR),
        pa.field("scene_id", _STR, nullable=False),
        ("seed", pa.int64()),
        ("n_steps", _I32),
        ("n_entities", _I32),
        ("task", _STR),  # JSON
        ("meta", _STR),  # JSON
        ("frame", FRAME_TYPE),
        ("steps", STEPS_TYPE),
        ("entities", ENTITIES_TYPE),
        ("timeline", TIMELINE_TYPE),
        ("events", _list(EVENT_TYPE)),
        ("regions", _list(REGION_TYPE)),
    ],
    metadata={"eqagen.table": "episodes", "eqagen.schema_version": SCHEMA_VERSION},
)

# Timeline dtypes that list<double> holds exactly.
EXACT_IN_FLOAT64 = frozenset(
    {"bool", "int8", "int16", "int32", "uint8", "uint16", "uint32", "float16", "float32", "float64"}
)


def _check_dtypes(ep: Episode) -> None:
    for name, initial in ep.timeline.initial.items():
        if str(initial.dtype) not in EXACT_IN_FLOAT64:
            raise TypeError(f"timeline field '{name}' has dtype {initial.dtype}, not storable exactly as float64")


def episode_row(ep: Episode) -> dict[str, Any]:
    """One episodes-table row: :meth:`Episode.to_dict` plus the step and entity counts."""
    _check_dtypes(ep)
    return {**ep.to_dict(), "n_steps": ep.n_steps, "n_entities": ep.n_entities}


def episodes_table(episodes: list[Episode]) -> pa.Table:
    return pa.Table.from_pylist([episode_row(ep) for ep in episodes], schema=EPISODES_SCHEMA)


def questions_table(records: list[QARecord]) -> pa.Table:
    return pa.Table.from_pylist([r.to_dict() for r in records], schema=QUESTIONS_SCHEMA)
