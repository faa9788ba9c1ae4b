"""Explicit pyarrow schemas of the two output tables, and the conversion of records to rows.

Never inferred: a schema inferred from the first batch breaks on the first ``None`` or empty list of a
later batch, and two runs could disagree. The questions table follows :meth:`QARecord.to_dict`; the
episodes table follows :meth:`Episode.to_dict`, with every step, entity, event and timeline change
nested in the row, so that any answer can be recomputed from the shards alone
(:mod:`eqagen.outputs.readers` rebuilds the :class:`~eqagen.core.Episode`).

Timeline arrays have a per-field dtype (float32 positions, bool flags, int32 parents); as in
:meth:`Episode.to_dict` they are flattened to ``list<double>`` (exact for all three) with the field's
``dtype`` and ``width``.

Nested values are typed, never JSON text, so pandas, DuckDB and ``datasets`` read them as they are
(docs/pipeline.md, "Nested columns"): a program's ``args``, an episode's ``task`` and ``meta`` are structs
that declare every field any world family writes, each nullable (a family leaves the others null); an
open mapping, whose keys are data (an entity's attribute names, a world's block names), is a list of
``{key, value}`` entries sorted by key, since ``datasets`` has no map type. :func:`to_column` lays a
value out so and refuses a key its type does not declare; :func:`from_column` inverts it (a null field
reads as an absent key).
"""

from __future__ import annotations

from collections.abc import Callable
from itertools import pairwise
from typing import Any

import numpy as np
import pyarrow as pa

from eqagen.core import Episode, Program, QARecord
from eqagen.paraphrase.tables import PARAPHRASE_TYPE

SCHEMA_VERSION = "2"  # 2: nested values typed (program args, task, meta, attributes), no longer JSON text
_STR, _I32, _I64, _F64, _BOOL = pa.string(), pa.int32(), pa.int64(), pa.float64(), pa.bool_()


def _list(t: pa.DataType) -> pa.DataType:
    return pa.list_(t)


def _entries(value: pa.DataType) -> pa.DataType:
    """An open mapping (its keys are data) as ``{key, value}`` entries sorted by key."""
    return _list(pa.struct([("key", _STR), ("value", value)]))


_XYZ = _list(_F64)

# A program's details beyond family, key and value (eqagen.predicates): the events a moment filter names
# (indices into the episode's events), the receptacle type of a location filter, the object type a
# situational filter sees in its configuration (figure), and the event kind or
# the entity type (subject) a query counts or asks about.
FILTER_ARGS_TYPE = pa.struct([("event", _I32), ("event2", _I32), ("receptacle", _STR), ("figure", _STR)])
QUERY_ARGS_TYPE = pa.struct([("kind", _STR), ("subject", _STR)])
FILTER_TYPE = pa.struct([("family", _STR), ("key", _STR), ("value", _STR), ("args", FILTER_ARGS_TYPE)])
QUERY_TYPE = pa.struct([("name", _STR), ("arg", _STR), ("args", QUERY_ARGS_TYPE)])
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

# An ALFRED goal (household tasks, ALFRED's pddl_params, FILM's parse of an instruction).
_GOAL_FIELDS = [
    ("task_type", _STR),
    ("object_target", _STR),
    ("parent_target", _STR),
    ("mrecep_target", _STR),
    ("toggle_target", _STR),
    ("object_sliced", _BOOL),
]
# The agent's task, every family's fields in one struct (the others null).
TASK_TYPE = pa.struct(
    [
        ("type", _STR),  # household: "alfred"; blockworld: "explore"
        *_GOAL_FIELDS,  # household
        ("source", _STR),  # ALFRED episodes: "alfred", the trajectory's task_id and floor_plan
        ("task_id", _STR),
        ("floor_plan", _STR),
        ("policy", _STR),  # navigation: the route's policy, ends, distances and step sizes
        ("start_position", _XYZ),
        ("start_rotation", _list(_F64)),  # quaternion
        ("goal_position", _XYZ),
        ("goal_rotation", _list(_F64)),
        ("final_position", _XYZ),
        ("geodesic_distance", _F64),
        ("euclidean_distance", _F64),
        ("island", _I32),
        ("step_length", _F64),
        ("turn_degrees", _F64),
        ("goal_radius", _F64),
        ("biome", _STR),  # blockworld
    ]
)

_XYZ_STRUCT = pa.struct([("x", _F64), ("y", _F64), ("z", _F64)])  # AI2-THOR's {x, y, z}
_INIT_ACTION_TYPE = pa.struct(  # a TeleportFull
    [("action", _STR), ("x", _F64), ("y", _F64), ("z", _F64), ("rotation", _F64), ("horizon", _F64),
     ("rotateOnTeleport", _BOOL)]
)  # fmt: skip
# ALFRED's own records of a trajectory (eqagen.generators.household.alfred.reader), what a replay restores.
ALFRED_SCENE_TYPE = pa.struct(
    [
        ("floor_plan", _STR),
        ("scene_num", _I32),
        (
            "object_poses",
            _list(pa.struct([("objectName", _STR), ("position", _XYZ_STRUCT), ("rotation", _XYZ_STRUCT)])),
        ),
        ("object_toggles", _list(pa.struct([("objectType", _STR), ("isOn", _BOOL)]))),
        ("dirty_and_empty", _BOOL),
        ("init_action", _INIT_ACTION_TYPE),
        ("random_seed", _I64),
    ]
)
ALFRED_TASK_TYPE = pa.struct([("task_type", _STR), ("pddl_params", pa.struct(_GOAL_FIELDS))])
FILM_PARSE_TYPE = pa.struct(
    [
        ("instruction_key", _STR),
        ("film_task_code", _I32),
        ("task_type", _STR),
        ("object_target", _STR),
        ("parent_target", _STR),
        ("mrecep_target", _STR),
        ("sliced", _BOOL),
    ]
)
_COUNTS = _entries(_I64)
GROUND_TRUTH_TYPE = pa.struct(  # eqagen.generators.blockworld.features.GroundTruth
    [
        ("biome", _STR),
        ("block_counts", _COUNTS),
        ("mobs", _COUNTS),
        ("features", _COUNTS),
        ("structures", _COUNTS),
        ("per_quadrant", _entries(_COUNTS)),
        ("materials", _entries(_STR)),  # structure id -> material
        ("chest_items", _COUNTS),
        ("extra", _entries(_STR)),
    ]
)
# How the episode came about, every backend's fields in one struct (the others null).
META_TYPE = pa.struct(
    [
        ("success", _BOOL),  # every family: the agent's own success, and why it stopped
        ("stop_reason", _STR),
        ("agent", _STR),  # household: the agent, its failures, the room and the simulator's rotation
        ("n_failures", _I32),
        ("room_kind", _STR),
        ("native_rotation", _list(_list(_F64))),
        ("mode", _STR),  # ALFRED episodes: expert replay or FILM mode
        ("simulator", _STR),
        ("trajectory", _STR),
        ("instruction", _STR),
        ("actions_ok", _BOOL),  # expert replay's fidelity
        ("goal_ok", _BOOL),
        ("reason", _STR),
        ("added_cells", _I32),
        ("skipped_types", _list(_STR)),
        ("parent_source", _entries(_STR)),  # objectId -> expert | nearest | none
        ("repeat_idx", _I32),  # FILM mode: the parse, whether it was right, where and why the agent stopped
        ("film_parse", FILM_PARSE_TYPE),
        ("estimated_objects", _list(_STR)),
        ("parse_matches_task", _BOOL),
        ("parse_with_majority", _BOOL),
        ("true_goal_ok", _BOOL),
        ("parsed_goal_ok", _BOOL),
        ("failure_mode", _STR),
        ("phase_at_stop", _STR),
        ("sought_at_stop", _STR),
        ("sought_unplaced", _BOOL),
        ("stopped_before_parse_error", _BOOL),
        ("collisions", _I32),
        ("interaction_failures", _I32),
        ("search_revisits", _I32),
        ("loops", _I32),
        ("alfred_scene", ALFRED_SCENE_TYPE),
        ("alfred_task", ALFRED_TASK_TYPE),
        ("n_actions", _I32),  # navigation: the route and the camera, the policy's sampling statistics
        ("path", _list(_XYZ)),
        ("camera", pa.struct([("hfov", _F64), ("range", _F64)])),
        ("policy_stats", pa.struct([("attempts", _I64), ("accepted", _I64), ("rejected", _COUNTS)])),
        ("ground_truth", GROUND_TRUTH_TYPE),  # blockworld: what the world holds and what the walk saw
        ("blocks_seen", _COUNTS),
        ("goals", _list(_STR)),
        ("coverage", _F64),
        ("world_shape", _list(_I32)),
        ("world_origin", _list(_I32)),
        ("world_source", _STR),
        ("missing_structures", _list(_STR)),
    ]
)
ATTRIBUTES_TYPE = _entries(_STR)  # an entity's static attributes: the names differ by family (nbt_* in blockworld)

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
        ("attributes", _list(ATTRIBUTES_TYPE)),
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
        ("task", TASK_TYPE),
        ("meta", META_TYPE),
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


class UndeclaredFieldError(ValueError):
    """A nested value holds a key its column's type does not declare (pyarrow would drop it silently)."""

    def __init__(self, where: str, key: str):
        super().__init__(where, key)  # the arguments as given, so that it pickles across worker processes

    def __str__(self) -> str:
        where, key = self.args
        return f"{where}.{key}: not a field of the column's declared type; fix: declare it in eqagen/outputs/schemas.py"


def _is_entries(t: pa.DataType) -> bool:
    if not pa.types.is_list(t) or not pa.types.is_struct(t.value_type):
        return False
    return [f.name for f in t.value_type] == ["key", "value"]


def to_column(value: Any, t: pa.DataType, where: str) -> Any:
    """A nested value (dicts, lists, scalars) laid out as type ``t`` holds it: an open mapping as entries
    sorted by key; a struct's keys checked against its fields (``where`` names the value in the error)."""
    if value is None:
        return None
    if _is_entries(t):
        inner = t.value_type.field("value").type
        return [{"key": k, "value": to_column(v, inner, f"{where}.{k}")} for k, v in sorted(value.items())]
    if pa.types.is_struct(t):
        for key in value:
            if t.get_field_index(key) < 0:
                raise UndeclaredFieldError(where, key)
        return {f.name: to_column(value.get(f.name), f.type, f"{where}.{f.name}") for f in t}
    if pa.types.is_list(t):
        return [to_column(v, t.value_type, where) for v in value]
    return value


def from_column(value: Any, t: pa.DataType) -> Any:
    """Inverse of :func:`to_column` on a value read back (``to_pylist``): entries as a dict again, a
    struct's null fields left out."""
    return column_reader(t)(value)


def _same(value: Any) -> Any:
    return value


def column_reader(t: pa.DataType) -> Callable[[Any], Any]:
    """:func:`from_column` for values of type ``t``, as a function that walks the type once, when it is made
    (the ask stage reads every episode of a batch back in each round: deciding the type's shape at every
    nested value took most of the time)."""
    if _is_entries(t):
        inner = column_reader(t.value_type.field("value").type)
        return lambda v: None if v is None else {e["key"]: inner(e["value"]) for e in v}
    if pa.types.is_struct(t):
        fields = [(f.name, column_reader(f.type)) for f in t]

        def read_struct(v: Any) -> Any:
            if v is None:
                return None
            read = ((name, reader(v.get(name))) for name, reader in fields)
            return {name: x for name, x in read if x is not None}

        return read_struct
    if pa.types.is_list(t):
        item = column_reader(t.value_type)
        if item is _same:
            return lambda v: None if v is None else list(v)
        return lambda v: None if v is None else [item(x) for x in v]
    return _same


# The episode columns :func:`to_column` lays out: (column, field inside it or None, type).
_NESTED_EPISODE_COLUMNS = (("task", None, TASK_TYPE), ("meta", None, META_TYPE),
                           ("entities", "attributes", _list(ATTRIBUTES_TYPE)))  # fmt: skip
_EPISODE_READERS = tuple((column, name, column_reader(t)) for column, name, t in _NESTED_EPISODE_COLUMNS)


def episode_row(ep: Episode) -> dict[str, Any]:
    """One episodes-table row: :meth:`Episode.to_dict` plus the step and entity counts, its nested values
    laid out by their declared types."""
    _check_dtypes(ep)
    row = {**ep.to_dict(), "n_steps": ep.n_steps, "n_entities": ep.n_entities}
    for column, name, t in _NESTED_EPISODE_COLUMNS:
        holder, key = (row, column) if name is None else (row[column], name)
        holder[key] = to_column(holder[key], t, f"episode {ep.episode_id}: {column}")
    return row


def episode_dict(row: dict[str, Any]) -> dict[str, Any]:
    """Inverse of :func:`episode_row` on a row read back: :meth:`Episode.from_dict`'s input."""
    row = {**row, "entities": dict(row["entities"])}
    for column, name, read in _EPISODE_READERS:
        holder, key = (row, column) if name is None else (row[column], name)
        holder[key] = read(holder[key])
    return row


# The episode columns whose lists of numbers :meth:`Episode.from_dict` reads with ``np.asarray``.
_ARRAY_COLUMNS = frozenset({"steps", "timeline"})


def episode_rows(table: pa.Table) -> list[dict[str, Any]]:
    """The rows of an episodes table as ``table.to_pylist()`` gives them, except that in ``steps`` and
    ``timeline`` each list of numbers is a numpy array (a list of lists of numbers, the poses, one flat array):
    :func:`episode_dict` and :meth:`Episode.from_dict` read either alike (``np.asarray``, then a reshape).
    The arrays skip a Python object per number: a batch's 50 tag-eqa episodes read back into episodes in 33 ms
    instead of 56 here, and the ask stage reads every batch back in each of its rounds."""
    columns = {}
    for name in table.column_names:
        column = table.column(name)  # the array columns combined into one array; the others read chunk by chunk
        columns[name] = _values_with_arrays(column.combine_chunks()) if name in _ARRAY_COLUMNS else column.to_pylist()
    return [dict(zip(columns, values)) for values in zip(*columns.values())]


def _is_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_boolean(t)


def _values_with_arrays(arr: pa.Array) -> list[Any]:
    """``arr.to_pylist()``, with its lists of numbers (or of lists of numbers) as numpy arrays, at any depth
    of structs and lists of structs."""
    t = arr.type
    if pa.types.is_struct(t):
        names = [f.name for f in t]
        fields = [_values_with_arrays(arr.field(i)) for i in range(t.num_fields)]
        return _nulls_as_none(arr, [dict(zip(names, values)) for values in zip(*fields)])
    if not pa.types.is_list(t):
        return arr.to_pylist()
    inner = t.value_type
    if _is_number(inner) or (pa.types.is_list(inner) and _is_number(inner.value_type)):
        return _number_arrays(arr)
    if pa.types.is_struct(inner):
        items, offsets = _values_with_arrays(arr.values), arr.offsets.to_pylist()  # offsets index .values
        return _nulls_as_none(arr, [items[a:b] for a, b in pairwise(offsets)])
    return arr.to_pylist()


def _number_arrays(arr: pa.ListArray) -> list[Any]:
    """Each list of numbers (a list of lists: flattened) of ``arr`` as a numpy array; all of them as
    ``to_pylist`` gives them where some number is null."""
    offsets, values = arr.offsets.to_numpy(), arr.values
    if pa.types.is_list(values.type):
        if values.null_count:
            return arr.to_pylist()
        offsets, values = values.offsets.to_numpy()[offsets], values.values
    if values.null_count:
        return arr.to_pylist()
    flat = np.array(values.to_numpy(zero_copy_only=False))  # a copy: Arrow's memory is read-only
    return _nulls_as_none(arr, [flat[a:b] for a, b in pairwise(offsets.tolist())])


def _nulls_as_none(arr: pa.Array, values: list[Any]) -> list[Any]:
    if not arr.null_count:
        return values
    return [v if valid else None for v, valid in zip(values, arr.is_valid().to_pylist())]


def episodes_table(episodes: list[Episode]) -> pa.Table:
    return pa.Table.from_pylist([episode_row(ep) for ep in episodes], schema=EPISODES_SCHEMA)


_FILTER_ARGS, _QUERY_ARGS = frozenset(FILTER_ARGS_TYPE.names), frozenset(QUERY_ARGS_TYPE.names)


def _undeclared_arg(program: Program) -> tuple[str, str] | None:
    """The first program arg its type does not declare, as (where, key); a set test per record written."""
    for f in program.filters:
        for key in sorted(f.args.keys() - _FILTER_ARGS):
            return "program.filters.args", key
    for key in sorted(program.query.args.keys() - _QUERY_ARGS):
        return "program.query.args", key
    return None


def questions_table(records: list[QARecord]) -> pa.Table:
    for r in records:
        if (undeclared := _undeclared_arg(r.program)) is not None:
            raise UndeclaredFieldError(f"question {r.question_id}: {undeclared[0]}", undeclared[1])
    return pa.Table.from_pylist([r.to_dict() for r in records], schema=QUESTIONS_SCHEMA)
