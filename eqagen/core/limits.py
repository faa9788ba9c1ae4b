"""Stated maxima: the largest sizes an input may ask for, checked before anything is allocated from them.

A config or a data file can state any number. These bound what eqagen attempts, so that a typo or a
damaged file fails at once with a message naming it, instead of allocating memory without end. The
table in docs/robustness.md ("Inputs, messages and limits") lists them with the reason for each.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import stat
from collections.abc import Callable
from typing import Any

import numpy as np

from eqagen.core.errors import ConfigError, DataFileError

# Config: counts of a run.
MAX_EPISODES = 10_000_000  # generation.n_episodes: the plan holds one spec per episode (~0.4 KB, 3.5 GB at most)
MAX_SCENES = MAX_EPISODES  # n_scenes of a backend's params: one id per scene is planned
MAX_STEPS = 10_000  # generation.max_steps: per-step buffers are allocated for the whole limit per episode
MAX_BATCH_SIZE = 10_000  # generation.batch_size: a batch's episodes are in memory at once
MAX_ROWS_PER_SHARD = 10_000_000  # output.rows_per_shard
MAX_WORKERS = 4096  # runner.workers as written; a run uses at most the CPUs it may run on (available_cpus)
MAX_SEED = 2**63 - 1
MAX_CONFIG_BYTES = 1 << 20  # a YAML config file: configs are a few KB
MAX_QUESTIONS_PER_EPISODE = 5_000  # questions.questions_per_episode: records sampled per episode
MAX_ATTEMPTS = 1_000  # questions.attempts_per_question, max_stalled_attempts: programs tried per question

# Data files.
MAX_COORDINATE = 1e5  # |x|, |y|, |z| of a position in an input file, in metres (one Minecraft block = 1 m)
MAX_GRID_CELLS = 2**26  # cells of a grid built over a file's extent (64 Mi cells: 512 MB of int64)
MAX_INFLATED_BYTES = 2**28  # decompressed bytes of one file, all its gzip/zlib streams together (256 MiB)

# A dataset folder's own files (manifest.json, stats.json, shards): what a reader attempts at most.
MAX_JSON_BYTES = 1 << 26  # manifest.json, stats.json (64 MiB; tag-eqa's stats.json is under 1 MB)
MAX_JSON_DEPTH = 64  # nesting of JSON objects and arrays (eqagen writes at most 8)
MAX_JSON_INT_DIGITS = 40  # digits of a JSON integer (a 64-bit integer has at most 20)
MAX_SHARD_BYTES = 1 << 32  # one Parquet shard's file (4 GiB)
MAX_SHARD_ROW_GROUPS = 10_000  # row groups of one shard
MAX_SHARD_ROWS = MAX_ROWS_PER_SHARD  # rows of one shard
MAX_COLUMN_CHUNK_BYTES = 1 << 30  # decompressed bytes of one column in one row group, as its footer states (1 GiB)
MAX_SHARD_DECOMPRESSED_BYTES = 1 << 32  # decompressed bytes of one shard, all columns together (4 GiB)


def regular_file_bytes(path: object, limit: int, fix: str | None = None) -> bytes:
    """The bytes of ``path``, which must be a regular file of at most ``limit`` bytes: a FIFO, a device
    (a link to ``/dev/zero``), a socket or a directory is a DataFileError, never a read that hangs or
    never ends. Opened without blocking, so a FIFO with no writer is refused at once."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # type: ignore[arg-type]
    except OSError as err:
        raise DataFileError(path, None, f"cannot read: {err.strerror or err}", fix) from None
    try:
        check_regular_size(path, os.fstat(fd), limit, fix)
    except DataFileError:
        os.close(fd)
        raise
    with os.fdopen(fd, "rb") as f:
        data = f.read(limit + 1)
    if len(data) > limit:  # grew while read
        raise DataFileError(path, None, f"is larger than {limit:,} bytes", fix)
    return data


def check_regular_file(path: object, limit: int, fix: str | None = None) -> None:
    """A DataFileError unless ``path`` (links followed) is a regular file of at most ``limit`` bytes."""
    try:
        info = os.stat(path)  # type: ignore[arg-type]
    except OSError as err:
        raise DataFileError(path, None, f"cannot read: {err.strerror or err}", fix) from None
    check_regular_size(path, info, limit, fix)


def check_regular_size(path: object, info: os.stat_result, limit: int, fix: str | None) -> None:
    if not stat.S_ISREG(info.st_mode):
        kinds = ((stat.S_ISFIFO, "a FIFO"), (stat.S_ISDIR, "a directory"), (stat.S_ISSOCK, "a socket"))
        kind = next((name for test, name in kinds if test(info.st_mode)), "a device")
        raise DataFileError(path, None, f"is {kind}, not a regular file", fix)
    if info.st_size > limit:
        raise DataFileError(path, None, f"is {info.st_size:,} bytes, more than {limit:,}", fix)


def bounded_int(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse type: an integer from ``low`` to ``high`` (None: no upper bound); else a usage error."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"'{text}' is not an integer") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(
                f"{value} is not between {low} and {high:,}" if high is not None else f"{value} is less than {low}"
            )
        return value

    return parse


def available_cpus() -> int:
    """The CPUs this process may run on (its affinity mask, or cgroup-aware where Python knows it)."""
    count = getattr(os, "process_cpu_count", None)  # Python 3.13+
    if count is not None:
        return count() or 1
    try:
        return len(os.sched_getaffinity(0)) or 1
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def checked_count(params: dict, key: str, default: int, maximum: int) -> int:
    """``params[key]`` (``default`` when absent or null) as a count from 1 to ``maximum``; a ConfigError
    naming ``generation.params.<key>`` otherwise (``true`` is no count)."""
    value = params.get(key)
    value = default if value is None else value
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= maximum:
        raise ConfigError(f"generation.params.{key}", f"{value!r} is not an integer from 1 to {maximum:,}")
    return value


def checked_number(params: dict, key: str, default: float, maximum: float) -> float:
    """``params[key]`` (``default`` when absent) as a finite number from 0 to ``maximum``, an integer where
    ``default`` is one; a ConfigError naming ``generation.params.<key>`` otherwise."""
    value = params.get(key, default)
    kinds = (int,) if isinstance(default, int) else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not 0 <= value <= maximum:  # NaN fails 0 <= v
        kind = "an integer" if isinstance(default, int) else "a number"
        raise ConfigError(f"generation.params.{key}", f"{value!r} is not {kind} from 0 to {maximum:g}")
    return value


def checked_coordinates(values: object, path: object, field: str, fix: str | None = None) -> np.ndarray:
    """``values`` as a float64 array; a DataFileError naming ``path`` and ``field`` when one is NaN,
    infinite or farther than :data:`MAX_COORDINATE` from the origin."""
    arr = np.asarray(values, dtype=np.float64)
    bad = ~np.isfinite(arr) | (np.abs(arr) > MAX_COORDINATE)
    if bad.any():
        first = float(arr.reshape(-1)[int(np.flatnonzero(bad.reshape(-1))[0])])
        problem = "is not a finite number" if not math.isfinite(first) else f"lies beyond {MAX_COORDINATE:g} m"
        raise DataFileError(
            path,
            field,
            f"coordinate {first!r} {problem}",
            fix or f"coordinates are finite metres within ±{MAX_COORDINATE:g}",
        )
    return arr


def checked_grid_cells(shape: tuple[int, ...], path: object, field: str, fix: str | None = None) -> None:
    """A DataFileError when a grid of ``shape`` (built over a file's extent) would exceed :data:`MAX_GRID_CELLS`."""
    cells = math.prod(int(v) for v in shape)
    if cells > MAX_GRID_CELLS:
        raise DataFileError(
            path,
            field,
            f"spans a grid of {' x '.join(str(int(v)) for v in shape)} cells, more than {MAX_GRID_CELLS:,}",
            fix or "the coordinates are damaged or in the wrong unit",
        )


def check_npy_size(path: object, field: str | None, max_items: int = MAX_GRID_CELLS) -> None:
    """Before ``np.load``: a DataFileError when the ``.npy`` header at ``path`` states more than ``max_items``
    items, or more bytes than the file holds (numpy would allocate the stated size first). A header numpy
    cannot read is left to ``np.load``'s own error."""
    fmt = np.lib.format
    try:
        with open(path, "rb") as f:  # type: ignore[call-overload]
            version = fmt.read_magic(f)
            read = fmt.read_array_header_1_0 if version == (1, 0) else fmt.read_array_header_2_0
            shape, _, dtype = read(f)
            data_bytes = os.fstat(f.fileno()).st_size - f.tell()
    except Exception:  # numpy's header parser raises many types (ValueError, TokenError, ...): np.load says it
        return
    items = math.prod(int(v) for v in shape)
    if items > max_items:
        raise DataFileError(path, field, f"states an array of shape {shape}, more than {max_items:,} items", None)
    if dtype.itemsize and items * dtype.itemsize > data_bytes:
        raise DataFileError(
            path,
            field,
            f"states an array of shape {shape} but holds {data_bytes:,} bytes of data",
            "the file is cut off",
        )


_JSON_NESTING = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]')  # strings (skipped) and brackets


class _LongInteger(ValueError):
    pass


def _bounded_json_int(text: str) -> int:
    if len(text.lstrip("-")) > MAX_JSON_INT_DIGITS:
        raise _LongInteger(f"an integer of {len(text.lstrip('-')):,} digits, more than {MAX_JSON_INT_DIGITS}")
    return int(text)


def json_depth_over(text: str, limit: int = MAX_JSON_DEPTH) -> int | None:
    """The nesting depth reached once it passes ``limit`` (the scan stops there), or None within it."""
    depth = 0
    for m in _JSON_NESTING.finditer(text):
        bracket = m.group(0)
        if bracket in "[{":
            depth += 1
            if depth > limit:
                return depth
        elif bracket in "]}":
            depth -= 1
    return None


def load_json(path: object, fix: str | None = None, limit: int = MAX_JSON_BYTES) -> Any:
    """A JSON file read within bounds: a regular file of at most ``limit`` bytes (:func:`regular_file_bytes`),
    UTF-8, nested at most :data:`MAX_JSON_DEPTH` deep, integers of at most :data:`MAX_JSON_INT_DIGITS` digits;
    each a DataFileError naming the file and the bound (never a RecursionError or a bare ValueError)."""
    data = regular_file_bytes(path, limit, fix)
    try:
        text = data.decode("utf-8")
        if json_depth_over(text) is not None:
            raise DataFileError(path, None, f"nests objects and arrays more than {MAX_JSON_DEPTH} deep", fix)
        return json.loads(text, parse_int=_bounded_json_int)
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise DataFileError(path, None, f"not valid JSON ({err})", fix) from None
    except _LongInteger as err:
        raise DataFileError(path, None, f"holds {err}", fix) from None
