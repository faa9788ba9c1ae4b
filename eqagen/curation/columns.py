"""Columnar helpers: dense codes for string columns, run boundaries and ranks over sorted keys.

Everything the curation stages do is a group-by over integer codes; these helpers keep that fast
(hash-based dictionary encoding in Arrow, then sorts and cumulative sums in numpy).
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from eqagen.core import DataFileError, stable_int

# Scenes sit on a ring in the order of a seed-independent hash of their id, cut into this many equal
# blocks. Balancing takes each question's scenes from a window of consecutive blocks; splitting holds
# out an arc of the ring. Any dataset's scenes can be put back on the same ring from their ids alone.
SCENE_BLOCKS = 64


def require_columns(table: pa.Table, names: tuple[str, ...] | list[str], where: str) -> None:
    missing = [n for n in names if n not in table.column_names]
    if missing:
        raise DataFileError(
            where,
            ", ".join(missing),
            f"the questions table lacks column(s) {missing}",
            "pass a table with the columns of QARecord.to_dict()",
        )


def encode(column: pa.ChunkedArray | pa.Array, numeric: bool = False) -> tuple[np.ndarray, list]:
    """Integer codes of a column and its distinct values, the codes ordered like the sorted values
    (numbers numerically with ``numeric``, else Arrow's order). Ordering codes by value, not by first
    appearance, makes results independent of row order."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_dictionary(column.type) and pc.count_distinct(column.dictionary).as_py() < len(column.dictionary):
        column = column.dictionary_decode()  # a dictionary with repeated values: codes must be by value
    if pa.types.is_dictionary(column.type):
        indices, dictionary = _used_dictionary(column)
    else:
        encoded = pc.dictionary_encode(column)
        indices = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
        dictionary = encoded.dictionary
    if numeric:
        values = dictionary.to_pylist()
        order = np.asarray(sorted(range(len(values)), key=lambda i: _sort_key(values[i])), dtype=np.int64)
    else:
        order = pc.sort_indices(dictionary).to_numpy().astype(np.int64)
    remap = np.empty(len(dictionary), dtype=np.int64)
    remap[order] = np.arange(len(dictionary), dtype=np.int64)
    return remap[indices], dictionary.take(pa.array(order)).to_pylist()


def _used_dictionary(column: pa.DictionaryArray) -> tuple[np.ndarray, pa.Array]:
    """A dictionary column's indices into the values it actually uses (as plain encoding would find
    them), without decoding its strings: the key tables of large runs arrive dictionary-encoded."""
    raw = column.indices.to_numpy(zero_copy_only=False).astype(np.int64, copy=False)
    used = np.unique(raw)
    if len(used) == len(column.dictionary):
        return raw, column.dictionary
    return np.searchsorted(used, raw), column.dictionary.take(pa.array(used))


def _sort_key(value: object) -> tuple:
    """Numbers sort numerically (so choices read 1, 2, 10), everything else as text; None first."""
    if value is None:
        return (0, 0.0, "")
    text = str(value)
    try:
        return (1, float(text), text)
    except ValueError:
        return (2, 0.0, text)


def joined_list_column(column: pa.ChunkedArray | pa.Array, sep: str = "+") -> pa.Array:
    """A list<string> column as one string per row, its items sorted and joined (a filter-family
    signature); null or empty lists give ""."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    flat = pc.list_flatten(column)
    parents = pc.list_parent_indices(column)
    order = pc.sort_indices(pa.table({"p": parents, "v": flat}), sort_keys=[("p", "ascending"), ("v", "ascending")])
    lengths = pc.fill_null(pc.list_value_length(column), 0).to_numpy(zero_copy_only=False)
    offsets = np.zeros(len(column) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    lists = pa.ListArray.from_arrays(pa.array(offsets), flat.take(order))
    return pc.fill_null(pc.binary_join(lists, sep), "")


def run_starts(sorted_keys: np.ndarray) -> np.ndarray:
    """Indices where a new run of equal keys begins in a sorted key array."""
    if len(sorted_keys) == 0:
        return np.zeros(0, dtype=np.int64)
    change = np.flatnonzero(sorted_keys[1:] != sorted_keys[:-1]) + 1
    return np.concatenate([[0], change]).astype(np.int64)


def rank_in_runs(sorted_keys: np.ndarray) -> np.ndarray:
    """0-based position of each element inside its run of equal keys."""
    n = len(sorted_keys)
    starts = run_starts(sorted_keys)
    lengths = np.diff(np.append(starts, n))
    return np.arange(n, dtype=np.int64) - np.repeat(starts, lengths)


def scene_ring(scene_values: list) -> np.ndarray:
    """Position of each distinct scene on the ring (0..S-1): the rank of a hash of its id only, the
    same under every seed, so a split finds the arcs that a balancing run used."""
    hashes = np.fromiter(
        (stable_int("scene-ring", v) >> 1 for v in scene_values), dtype=np.int64, count=len(scene_values)
    )
    position = np.empty(len(hashes), dtype=np.int64)
    position[np.argsort(hashes, kind="stable")] = np.arange(len(hashes))
    return position


def scene_blocks(scene_values: list) -> np.ndarray:
    """Block (0..SCENE_BLOCKS-1) of each distinct scene: equal shares of the ring."""
    n = max(len(scene_values), 1)
    return scene_ring(scene_values) * SCENE_BLOCKS // n


def combined_key(*codes: np.ndarray) -> np.ndarray:
    """One dense int64 code per row for a tuple of code columns, ordered like the tuples."""
    key = np.zeros(len(codes[0]), dtype=np.int64)
    for column in codes:
        radix = int(column.max()) + 1 if len(column) else 1
        key = key * radix + column
        _, key = np.unique(key, return_inverse=True)  # re-densify so the radix product never overflows
        key = key.reshape(-1).astype(np.int64)
    return key


# A key column derived from ``episode_id`` and ``program``: records with equal values (a grounded question, its
# ungrounded twin) derive from one episode and program.
TWIN = "twin"


def twin_text(episode_id: pa.ChunkedArray | pa.Array, program: pa.ChunkedArray | pa.Array) -> pa.Array:
    """The :data:`TWIN` column: the episode and its program as one string per row (null without a program)."""
    if isinstance(episode_id, pa.ChunkedArray):
        episode_id = episode_id.combine_chunks()
    return pc.binary_join_element_wise(episode_id, program_text(program), "\x1c")


def struct_text(column: pa.Array) -> pa.Array:
    """A struct column (a program's ``args``) as one string per row: each field's value as text (null: empty),
    joined in the declared order; a string column (older shards' JSON ``args``) as it is."""
    if not pa.types.is_struct(column.type):
        return pc.fill_null(column.cast(pa.string()), "")
    fields = [pc.fill_null(column.field(i).cast(pa.string()), "") for i in range(column.type.num_fields)]
    return pc.binary_join_element_wise(*fields, "\x1c") if fields else pa.array([""] * len(column), pa.string())


def program_text(column: pa.ChunkedArray | pa.Array) -> pa.Array:
    """A ``program`` struct column as one string per row (query, then the filters in their order): two rows
    have the same text exactly when they hold the same program; null where the program is."""
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    query = column.field("query")
    filters = column.field("filters")
    flat = pc.list_flatten(filters)
    parts = [pc.fill_null(flat.field(name), "") for name in ("family", "key", "value")]
    one = pc.binary_join_element_wise(*parts, struct_text(flat.field("args")), "\x1f")
    lengths = pc.fill_null(pc.list_value_length(filters), 0).to_numpy(zero_copy_only=False)
    offsets = np.zeros(len(column) + 1, dtype=np.int32)
    np.cumsum(lengths, out=offsets[1:])
    joined = pc.binary_join(pa.ListArray.from_arrays(pa.array(offsets), one), "\x1e")
    head = [pc.fill_null(query.field(name), "") for name in ("name", "arg")]
    text = pc.binary_join_element_wise(*head, struct_text(query.field("args")), joined, "\x1d")
    return pc.if_else(pc.is_valid(column), text, pa.scalar(None, pa.string()))  # no program: null
