"""Writing a dataset folder: one command at a time, nothing replaced unasked, never a mixed folder.

Every command that writes a dataset folder (``generate``, ``resplit``, ``paraphrase``) does so in
three steps:

1. :func:`claim_output` -- before anything is written. It takes an exclusive lock on
   ``OUT/.eqagen/lock`` (``fcntl.flock``: a second command on the same folder is refused at once with
   one line; the lock dies with its process, even on SIGKILL), completes a replacement that a killed
   command had begun (below), and refuses a folder that holds files eqagen did not write (even with
   ``--overwrite``: eqagen never deletes them) or a finished dataset that another config or command made
   (unless ``--overwrite``). A folder holding the same config's dataset is resumed without asking.
2. :class:`DatasetWriter` writes the new dataset whole -- shards, ``stats.json``, card, report and,
   last, the manifest -- into ``OUT/.eqagen/staging/``, where no reader looks.
3. :meth:`DatasetWriter.commit` swaps it in. It first writes a journal (``OUT/.eqagen/commit.json``:
   the files to move in and the old dataset's files to remove), then removes the old manifest (so from
   here on every eqagen reader refuses the folder as incomplete), moves the new files in, removes the
   old dataset's other files, and puts the new manifest in place last. A command killed before the
   journal leaves the old dataset whole; one killed after it leaves a journal that the next command on
   the folder completes. Only the files an eqagen manifest lists are ever removed.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import shutil
from collections.abc import Iterable, Iterator
from concurrent.futures import Executor
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from eqagen.core import SPLITS, DataFileError
from eqagen.core.stages import StageLog
from eqagen.outputs.atomic import atomic_path, fsync_dir
from eqagen.outputs.audit_files import ShardPartial, write_audit_files
from eqagen.outputs.dataset import TABLES, load_dataset_folder
from eqagen.outputs.manifest import (
    DATASET_FILES,
    MANIFEST_NAME,
    DatasetIdentity,
    build_manifest,
    write_json_atomic,
    write_manifest,
)
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA
from eqagen.outputs.shards import ShardInfo, ShardWriter, shard_name, sort_rows

STATE_DIR = ".eqagen"  # a run's own state in the folder: lock, checkpoints, staging, Prefect's home
LOCK_NAME, STAGING_NAME, JOURNAL_NAME = "lock", "staging", "commit.json"
NEW_FOLDER = "choose a new --out"


def state_dir(out_dir: Path) -> Path:
    return Path(out_dir) / STATE_DIR


def refuse_state_link(out_dir: Path) -> None:
    """A DataFileError if ``OUT/.eqagen`` or an entry in it is a link: eqagen removes files under it (staging,
    checkpoints, Prefect's home), and through a link it would remove the files of the link's target."""
    state = state_dir(out_dir)
    entries = [state, *state.iterdir()] if state.is_dir() and not state.is_symlink() else [state]
    linked = next((p for p in entries if p.is_symlink()), None)
    if linked is not None:
        raise DataFileError(
            linked, None, f"is a link (to {os.readlink(linked)}): eqagen keeps and removes its run state there",
            f"remove the link (its target is left alone) or {NEW_FOLDER}",
        )  # fmt: skip


def refuse_inside_inputs(path: Path | None, inputs: Iterable[Path], option: str) -> None:
    """A DataFileError if ``path`` (what ``option`` names) is one of the dataset folders ``inputs`` or lies
    inside one: writing there would change that dataset (a shard or file its manifest does not list)."""
    if path is None:
        return
    target = Path(os.path.abspath(path)).resolve()
    for folder in inputs:
        root = Path(os.path.abspath(folder)).resolve()
        if target == root or root in target.parents:
            raise DataFileError(
                path, None, f"{option} lies inside the dataset folder {folder}, which writing there would damage",
                f"choose a {option} outside {folder}",
            )  # fmt: skip


# --- one command at a time --------------------------------------------------------------------------


@contextlib.contextmanager
def output_lock(out_dir: Path, command: str) -> Iterator[None]:
    """Hold ``OUT/.eqagen/lock`` exclusively for the block; a DataFileError if another process holds it."""
    state = state_dir(out_dir)
    state.mkdir(parents=True, exist_ok=True)
    fd = os.open(state / LOCK_NAME, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 200, 0).decode(errors="replace").strip() or "unknown"
            raise DataFileError(
                out_dir, None, f"in use by another eqagen command (pid {holder})",
                f"wait for it to finish, or {NEW_FOLDER}",
            ) from None  # fmt: skip
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}: eqagen {command}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


# --- what may be replaced ---------------------------------------------------------------------------


def files_outside_state(out_dir: Path) -> list[str]:
    """Every file and link in the folder except under ``.eqagen/``, relative, links not followed."""
    found = []
    for top, dirs, files in os.walk(out_dir):
        rel_top = Path(top).relative_to(out_dir)
        if rel_top == Path("."):
            dirs[:] = [d for d in dirs if d != STATE_DIR]
        links = [d for d in dirs if (Path(top) / d).is_symlink()]
        found += [(rel_top / name).as_posix() for name in [*files, *links]]
    return sorted(found)


def owned_files(out_dir: Path) -> set[str] | None:
    """The files the folder's eqagen manifest lists (itself included); None if it has no usable one."""
    try:
        dataset = load_dataset_folder(out_dir)
    except DataFileError:
        return None
    return {MANIFEST_NAME, *dataset.manifest.files, *dataset.shard_paths}


def check_destination(out_dir: Path, fingerprint: str, overwrite: bool) -> None:
    """Refuse a folder holding files eqagen did not write, or another config's dataset unless ``overwrite``."""
    out_dir = Path(out_dir)
    present = files_outside_state(out_dir) if out_dir.is_dir() else []
    if not present:
        return
    owned = owned_files(out_dir) or set()
    foreign = [p for p in present if p not in owned]
    if foreign:
        shown = ", ".join(foreign[:5]) + (f" and {len(foreign) - 5} more" if len(foreign) > 5 else "")
        raise DataFileError(
            out_dir, None, f"holds {len(foreign)} file(s) that eqagen did not write ({shown})",
            f"move them out of the folder or {NEW_FOLDER} (eqagen never deletes them, not even with --overwrite)",
        )  # fmt: skip
    made_by = load_dataset_folder(out_dir).manifest.made_by
    if made_by != fingerprint and not overwrite:
        raise DataFileError(
            out_dir, None,
            f"holds a finished dataset made by another config or command (fingerprint {made_by}, this run's "
            f"{fingerprint})", f"pass --overwrite to replace it (only the files its manifest lists), or {NEW_FOLDER}",
        )  # fmt: skip


@contextlib.contextmanager
def claim_output(out_dir: Path, fingerprint: str, overwrite: bool = False, command: str = "generate") -> Iterator[None]:
    """The output folder for one command: refused early if it may not be written (nothing created then),
    else locked for the block, an interrupted replacement completed, and checked again under the lock."""
    out_dir = Path(out_dir)
    refuse_state_link(out_dir)
    if not (state_dir(out_dir) / JOURNAL_NAME).exists():
        check_destination(out_dir, fingerprint, overwrite)
    with output_lock(out_dir, command):
        finish_interrupted_commit(out_dir)
        shutil.rmtree(state_dir(out_dir) / STAGING_NAME, ignore_errors=True)  # a failed run's (a full disk's)
        check_destination(out_dir, fingerprint, overwrite)
        yield


# --- writing into staging ---------------------------------------------------------------------------


def split_names(values: Iterable[str]) -> list[str]:
    """The splits a questions table is written as: train, validation and test always (an empty split gets an empty
    shard, so the layout and the dataset card never miss one), then any other value, sorted."""
    return [*SPLITS, *sorted(set(values) - set(SPLITS))]


def split_tables(table: pa.Table) -> dict[str, pa.Table]:
    """The questions table per split (:func:`split_names`)."""
    return {v: table.filter(pc.equal(table["split"], v)) for v in split_names(table["split"].to_pylist())}


class DatasetWriter:
    """A new dataset written into ``OUT/.eqagen/staging/`` (emptied first), then swapped in by :meth:`commit`.

    Questions go to ``questions/<split>-NNNNN-of-MMMMM.parquet`` (train, validation and test always), episodes
    to ``episodes/episodes-NNNNN-of-MMMMM.parquet``; rows keep the order they are added in."""

    def __init__(self, out_dir: Path, rows_per_shard: int):
        self.out_dir = Path(out_dir)
        self.staging = state_dir(self.out_dir) / STAGING_NAME
        shutil.rmtree(self.staging, ignore_errors=True)
        self.staging.mkdir(parents=True)
        self.rows_per_shard = rows_per_shard
        self.questions: dict[str, ShardWriter] = {}
        self.episodes = ShardWriter(self.staging, "episodes", "episodes", rows_per_shard, EPISODES_SCHEMA)
        self.copied: list[ShardInfo] = []
        self.staged: list[ShardInfo] = []  # shards written into staging by others (:meth:`add_staged`)
        self.partials: dict[str, ShardPartial] = {}  # their partial statistics, by path
        self.shards: list[ShardInfo] = []  # every shard, once closed

    def add_questions(self, table: pa.Table) -> None:
        for split, part in split_tables(table).items():
            if split not in self.questions:
                self.questions[split] = ShardWriter(self.staging, "questions", split, self.rows_per_shard,
                                                    QUESTIONS_SCHEMA)  # fmt: skip
            self.questions[split].add(part)

    def add_episodes(self, table: pa.Table) -> None:
        self.episodes.add(table)

    def copy_episode_shards(self, sources: list[tuple[Path, ShardInfo]]) -> None:
        """Episode shards of a verified input copied byte for byte (instead of :meth:`add_episodes`)."""
        for index, (path, info) in enumerate(sources):
            rel = f"episodes/{shard_name('episodes', index, len(sources))}"
            with atomic_path(self.staging / rel) as tmp:
                shutil.copyfile(path, tmp)
            self.copied.append(ShardInfo(rel, info.rows, info.sha256, info.bytes))

    def add_staged(self, info: ShardInfo, partial: ShardPartial) -> None:
        """A shard that a unit wrote into :attr:`staging` under its final name, with its partial statistics
        (``generate`` plans every shard up front and writes each on a worker)."""
        self.staged.append(info)
        self.partials[info.path] = partial

    def close(self) -> list[ShardInfo]:
        """Every shard written, with its final name; call once, before the audit files and the manifest."""
        staged = {table: [s for s in self.staged if s.path.split("/")[0] == table] for table in TABLES}
        if not self.questions and not staged["questions"]:
            self.add_questions(QUESTIONS_SCHEMA.empty_table())
        shards = [info for writer in self.questions.values() for info in writer.close()] + staged["questions"]
        self.shards = shards + (self.copied or staged["episodes"] or self.episodes.close())
        return self.shards

    def seal(
        self, identity: DatasetIdentity, log: StageLog, report: bool = True, executor: Executor | None = None
    ) -> tuple[dict[str, Any], dict]:
        """Close the shards, then write the manifest, ``stats.json`` (``log``'s funnel and stage statistics,
        the rest from the staged shards: :func:`~eqagen.outputs.audit_files.write_audit_files`, its units on
        ``executor`` when given), the card and (``report``) the report, and swap the dataset in; returns the
        manifest and the statistics."""
        files = DATASET_FILES if report else ("README.md", "stats.json")
        manifest = identity.manifest(self.close(), files)
        stats = write_audit_files(
            self.staging, self.shards, log.funnel, log.stages, manifest, report, self.partials, executor
        )
        self.commit(manifest)
        return manifest, stats

    def commit(self, manifest: dict[str, Any]) -> None:
        """Write the manifest into staging, then swap the staged dataset into the output folder."""
        missing = [f for f in manifest["files"] if not (self.staging / f).is_file()]
        if missing:
            raise ValueError(f"the manifest lists files the writer did not stage: {missing}")
        write_manifest(manifest, self.staging)
        commit_staging(self.out_dir)


# --- the swap ---------------------------------------------------------------------------------------


def commit_staging(out_dir: Path) -> None:
    """Journal what moves in and what goes, then apply it (:func:`apply_journal`)."""
    staging = state_dir(out_dir) / STAGING_NAME
    new = owned_files(staging)
    if new is None:
        raise ValueError(f"{staging} holds no complete dataset to commit")
    old = owned_files(out_dir) or set()
    journal = {"move": sorted(new - {MANIFEST_NAME}), "remove": sorted(old - new)}
    write_json_atomic(journal, state_dir(out_dir) / JOURNAL_NAME)
    apply_journal(out_dir, journal)


def apply_journal(out_dir: Path, journal: dict[str, list[str]]) -> None:
    """Old manifest out, new files in, old files out, new manifest in, journal and staging gone.
    Every step can be repeated, so a command killed halfway is completed by the next one."""
    out_dir, state = Path(out_dir), state_dir(out_dir)
    staging = state / STAGING_NAME
    (out_dir / MANIFEST_NAME).unlink(missing_ok=True)
    fsync_dir(out_dir)
    for rel in journal["move"]:
        if (staging / rel).exists():
            (out_dir / rel).parent.mkdir(parents=True, exist_ok=True)
            os.replace(staging / rel, out_dir / rel)
    for rel in journal["remove"]:
        (out_dir / rel).unlink(missing_ok=True)
        prune_empty_dirs(out_dir, rel)
    for table in TABLES:
        if (out_dir / table).is_dir():
            fsync_dir(out_dir / table)
    if (staging / MANIFEST_NAME).exists():
        os.replace(staging / MANIFEST_NAME, out_dir / MANIFEST_NAME)
    fsync_dir(out_dir)
    (state / JOURNAL_NAME).unlink(missing_ok=True)
    shutil.rmtree(staging, ignore_errors=True)


def prune_empty_dirs(out_dir: Path, rel: str) -> None:
    """Remove the directories that held ``rel`` inside its table directory, if they are now empty."""
    parent = (Path(out_dir) / rel).parent
    while parent != Path(out_dir) and parent.parent != Path(out_dir):
        with contextlib.suppress(OSError):
            parent.rmdir()
        parent = parent.parent


def finish_interrupted_commit(out_dir: Path) -> None:
    path = state_dir(out_dir) / JOURNAL_NAME
    if path.exists():
        apply_journal(out_dir, json.loads(path.read_text(encoding="utf-8")))


def write_dataset(
    out_dir: Path, questions: pa.Table, episodes: pa.Table, manifest_fields: dict[str, Any], rows_per_shard: int
) -> dict[str, Any]:
    """A whole dataset from tables in memory (sorted by id), without audit files; for small tools and tests.

    ``manifest_fields`` are :func:`~eqagen.outputs.manifest.build_manifest`'s ``config``, ``seed`` and
    ``config_hash`` (and optionally ``fingerprint``)."""
    writer = DatasetWriter(out_dir, rows_per_shard)
    writer.add_questions(sort_rows(questions, "question_id"))
    writer.add_episodes(sort_rows(episodes, "episode_id"))
    manifest = build_manifest(shards=writer.close(), files=(), **manifest_fields)
    writer.commit(manifest)
    return manifest
