"""Atomic files: written under a temporary name beside the target, fsynced, then renamed.

A reader (or a rerun after a kill, a full disk or a power cut) sees either the old file or the whole new
one, never a part; a failed write removes its temporary file. Every file eqagen writes into a dataset
folder or next to it (shards, manifest, stats, card, report, exports, checkpoints) goes through here.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path


def temporary_name(path: Path) -> Path:
    """``.<name>.tmp`` beside ``path``: hidden, so directory readers (pyarrow, DuckDB, datasets) skip it."""
    return path.with_name(f".{path.name}.tmp")


def fsync_file(path: Path) -> None:
    with open(path, "rb") as f:
        os.fsync(f.fileno())


def fsync_dir(path: Path) -> None:
    """Make the renames inside ``path`` durable (a directory is fsynced through a read-only descriptor)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """``with atomic_path(target) as tmp: write(tmp)``: on success ``tmp`` is fsynced and renamed to
    ``target``; on any error, Ctrl-C included, ``tmp`` is removed and ``target`` is left as it was."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = temporary_name(path)
    try:
        yield tmp
        fsync_file(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
