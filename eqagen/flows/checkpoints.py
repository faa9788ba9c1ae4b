"""Per-batch checkpoints: what makes a rerun resume.

A finished batch leaves ``<work>/<batch>/episodes.parquet``, ``questions.parquet`` and
``stats.json``, each written under a temporary name and renamed, and then, last of all, the marker
``DONE``. A batch counts as finished only when its marker exists, so a batch killed halfway is simply
redone; its stale files are overwritten. The work directory is named by the hash of what the
batches depend on (seed, generation, questions), so a changed generation never reuses batches made
under another one, while a run that only changes balancing, paraphrase or splits reuses them all.
"""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from eqagen.outputs.atomic import write_text_atomic
from eqagen.outputs.folder import STATE_DIR
from eqagen.outputs.manifest import write_json_atomic
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA
from eqagen.outputs.shards import write_parquet_atomic

MARKER = "DONE"
# What a finished run leaves in OUT/.eqagen that a rerun can use: the batches, Prefect's home (run history).
RUN_STATE = ("batches", "prefect")


def work_dir(out_dir: Path, batches_hash: str) -> Path:
    return Path(out_dir) / STATE_DIR / "batches" / batches_hash


def run_state_bytes(out_dir: Path) -> int:
    """Bytes of the checkpoints and Prefect's home in ``OUT/.eqagen``."""
    roots = [Path(out_dir) / STATE_DIR / name for name in RUN_STATE]
    return sum(p.stat().st_size for root in roots for p in root.rglob("*") if p.is_file() and not p.is_symlink())


def remove_run_state(out_dir: Path) -> None:
    """``--clean``: the checkpoints and Prefect's home go; the lock (and any logs) stay."""
    for name in RUN_STATE:
        shutil.rmtree(Path(out_dir) / STATE_DIR / name, ignore_errors=True)


class BatchStore:
    def __init__(self, root: Path):
        self.root = Path(root)

    def path(self, batch_name: str) -> Path:
        return self.root / batch_name

    def is_done(self, batch_name: str) -> bool:
        return (self.path(batch_name) / MARKER).exists()

    def done(self, batch_names: list[str]) -> set[str]:
        return {n for n in batch_names if self.is_done(n)}

    def write(self, batch_name: str, tables: dict[str, pa.Table], stats: dict[str, Any]) -> None:
        """A finished unit: its tables (``<name>.parquet`` each), its stats, then, last, the marker."""
        d = self.path(batch_name)
        d.mkdir(parents=True, exist_ok=True)
        for name, table in tables.items():
            write_parquet_atomic(table, d / f"{name}.parquet")
        write_json_atomic(stats, d / "stats.json")
        write_text_atomic(d / MARKER, "ok\n")

    def iter_tables(
        self, batch_names: list[str], name: str, schema: pa.Schema, columns: list[str] | None = None
    ) -> Iterator[pa.Table]:
        """One table of each batch in turn, in batch order, with all columns or those asked for."""
        for n in batch_names:
            yield pq.read_table(self.path(n) / f"{name}.parquet", schema=schema, columns=columns)

    def read_table(self, batch_names: list[str], name: str, schema: pa.Schema) -> pa.Table:
        """One table of every batch, concatenated in batch order (deterministic)."""
        tables = list(self.iter_tables(batch_names, name, schema))
        return pa.concat_tables(tables) if tables else schema.empty_table()

    def read_questions(self, batch_names: list[str]) -> pa.Table:
        return self.read_table(batch_names, "questions", QUESTIONS_SCHEMA)

    def read_episodes(self, batch_names: list[str]) -> pa.Table:
        return self.read_table(batch_names, "episodes", EPISODES_SCHEMA)

    def read_stats(self, batch_names: list[str]) -> list[dict[str, Any]]:
        return [json.loads((self.path(n) / "stats.json").read_text()) for n in batch_names]

    def clear(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)
