"""Stated maxima: the largest sizes an input may ask for, checked before anything is allocated from them.

A config or a data file can state any number. These bound what eqagen attempts, so that a typo or a
damaged file fails at once with a message naming it, instead of allocating memory without end. The
table in docs/robustness.md ("Inputs, messages and limits") lists them with the reason for each.
"""

from __future__ import annotations

import argparse
import math
import os
from collections.abc import Callable

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

# Data files.
MAX_COORDINATE = 1e5  # |x|, |y|, |z| of a position in an input file, in metres (one Minecraft block = 1 m)
MAX_GRID_CELLS = 2**26  # cells of a grid built over a file's extent (64 Mi cells: 512 MB of int64)
MAX_INFLATED_BYTES = 2**28  # decompressed bytes of one file, all its gzip/zlib streams together (256 MiB)


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
