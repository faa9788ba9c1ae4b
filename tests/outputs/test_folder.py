"""A dataset folder read and written safely: manifests checked field by field, paths kept inside the
folder, one writer at a time, nothing replaced unasked, the swap completed after a kill.

The datasets are real ones: a small ``eqagen generate demo`` run (the household backend and the real
question engine, inline runner), made once for the module and copied for each test that changes it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from eqagen.config import config_hash, load_config
from eqagen.core import SPLITS, DataFileError
from eqagen.flows.pipeline import generate_inline
from eqagen.outputs.dataset import load_dataset_folder, open_dataset
from eqagen.outputs.folder import (
    JOURNAL_NAME,
    check_destination,
    claim_output,
    files_outside_state,
    finish_interrupted_commit,
    output_lock,
    state_dir,
)
from eqagen.outputs.manifest import read_manifest
from eqagen.outputs.readers import read_questions
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA
from eqagen.outputs.shards import file_schema_sha256, sha256_of

SMALL = ["generation.n_episodes=6", "generation.batch_size=3", "output.rows_per_shard=25", "runner.kind=inline",
         "runner.progress=false"]  # fmt: skip


def small_config(*more: str):
    return load_config("demo", [*SMALL, *more])


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "out"
    generate_inline(small_config(), out)
    return out


@pytest.fixture
def copy(demo, tmp_path) -> Path:
    target = tmp_path / "copy"
    shutil.copytree(demo, target)
    return target


def edit_manifest(out: Path, change) -> None:
    manifest = read_manifest(out)
    change(manifest)
    (out / "manifest.json").write_text(json.dumps(manifest))


# --- manifests and paths ----------------------------------------------------------------------------


def test_the_manifest_records_each_tables_schema_as_every_shard_of_it_has_it(demo) -> None:
    """What `schema_sha256` holds: each table's one schema, which every shard's footer states, and which is this
    version's schema of that table."""
    recorded = read_manifest(demo)["schema_sha256"]
    for table, schema in (("questions", QUESTIONS_SCHEMA), ("episodes", EPISODES_SCHEMA)):
        shards = sorted((demo / table).glob("*.parquet"))
        assert {file_schema_sha256(p) for p in shards} == {recorded[table]}, table
        assert all(pq.read_schema(p).equals(schema, check_metadata=False) for p in shards), table


def test_the_demo_verifies_and_lists_exactly_its_shards(demo) -> None:
    dataset = open_dataset(demo)
    on_disk = sorted(p.relative_to(demo).as_posix() for t in ("questions", "episodes") for p in (demo / t).iterdir())
    assert sorted(dataset.shard_paths) == on_disk
    assert {p.split("/")[1].split("-")[0] for p in on_disk if p.startswith("questions/")} == set(SPLITS)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda m: m.update(rows="many"), "rows"),
        (lambda m: m.update(shards={}), "shards"),
        (lambda m: m["shards"][0].update(rows="12"), "shards.0.rows"),
        (lambda m: m["shards"][0].update(rows=True), "shards.0.rows"),
        (lambda m: m["shards"][0].pop("sha256"), "shards.0.sha256"),
        (lambda m: m.update(format_version=True), "format_version"),
        (lambda m: m.update(format="something-else"), "format"),
        (lambda m: m.update(files=["../../etc/passwd"]), "files.0"),
    ],
)
def test_a_manifest_of_odd_types_is_an_error_naming_the_field(copy, change, field) -> None:
    edit_manifest(copy, change)
    with pytest.raises(DataFileError, match=rf"manifest\.json \[{field}\]"):
        open_dataset(copy)


def test_a_manifest_that_is_not_json_or_not_an_object_is_an_error(copy) -> None:
    (copy / "manifest.json").write_text("[1, 2]")
    with pytest.raises(DataFileError, match="a JSON object expected"):
        open_dataset(copy)
    (copy / "manifest.json").write_bytes(b"\xff\xfe{")
    with pytest.raises(DataFileError, match="not valid JSON"):
        open_dataset(copy)


@pytest.mark.parametrize(
    "path",
    ["episodes/../../victim", "/etc/passwd", "episodes/./x.parquet", "episodes\\..\\x.parquet", "notes/x.parquet",
     "episodes/x.txt", "episodes"],
)  # fmt: skip
def test_a_shard_path_that_could_leave_the_folder_is_refused(copy, path) -> None:
    edit_manifest(copy, lambda m: m["shards"][-1].update(path=path))
    with pytest.raises(DataFileError, match=r"shards\.\d+\.path"):
        load_dataset_folder(copy)


def test_a_shard_reached_through_a_link_out_of_the_folder_is_refused(copy, tmp_path) -> None:
    outside = tmp_path / "elsewhere"
    shutil.move(copy / "episodes", outside)
    (copy / "episodes").symlink_to(outside)
    with pytest.raises(DataFileError, match="through a link"):
        load_dataset_folder(copy)


def test_a_listed_file_that_is_not_parquet_is_an_error_naming_it(copy) -> None:
    shard = sorted((copy / "questions").iterdir())[0]
    shard.write_text("not parquet\n")
    rel = shard.relative_to(copy).as_posix()
    edit_manifest(copy, lambda m: [s.update(sha256=sha256_of(shard)) for s in m["shards"] if s["path"] == rel])
    with pytest.raises(DataFileError, match=rf"{shard.name} \[row counts match the manifest\]: not a Parquet file"):
        open_dataset(copy)


@pytest.mark.parametrize(
    ("damage", "check"),
    [
        ("delete a shard", "no missing shards"),
        ("add a shard", "no unlisted shards"),
        ("edit a row count", "row counts match the manifest"),
        ("edit a total", "row counts match the manifest"),
        ("duplicate rows", "ids unique"),
        ("damage stats.json", "stats.json readable"),
        ("flip a byte", "shard checksums match the manifest"),
    ],
)
def test_every_reader_refuses_a_folder_that_differs_from_its_manifest(copy, damage, check) -> None:
    plant(copy, damage)
    with pytest.raises(DataFileError, match=rf"\[{check}\]"):
        read_questions(copy)


def plant(out: Path, damage: str) -> None:
    """Damage a dataset folder the way a user or a failing disk could."""
    shard = sorted((out / "questions").glob("train-*.parquet"))[0]
    rel = shard.relative_to(out).as_posix()
    if damage == "delete a shard":
        shard.unlink()
    elif damage == "add a shard":
        shutil.copyfile(shard, out / "questions" / "train-00009-of-00009.parquet")
    elif damage == "edit a row count":
        edit_manifest(out, lambda m: [s.update(rows=s["rows"] + 1) for s in m["shards"] if s["path"] == rel])
    elif damage == "edit a total":
        edit_manifest(out, lambda m: m["rows"].update(questions_total=m["rows"]["questions_total"] + 1))
    elif damage == "duplicate rows":  # the shard rewritten with a row twice, and the manifest to match
        table = pq.read_table(shard)
        pq.write_table(pa.concat_tables([table, table.slice(0, 1)]), shard)
        digest, rows = sha256_of(shard), table.num_rows + 1

        def update(m: dict) -> None:
            for s in m["shards"]:
                if s["path"] == rel:
                    s.update(sha256=digest, rows=rows, bytes=shard.stat().st_size)
            m["rows"]["questions"]["train"] += 1
            m["rows"]["questions_total"] += 1

        edit_manifest(out, update)
    elif damage == "damage stats.json":
        (out / "stats.json").write_text('{"funnel": ')
    elif damage == "flip a byte":
        data = bytearray(shard.read_bytes())
        data[len(data) // 2] ^= 0xFF
        shard.write_bytes(bytes(data))


# --- claiming an output folder ----------------------------------------------------------------------


def test_an_empty_or_missing_folder_and_the_same_config_are_claimed(demo, tmp_path) -> None:
    check_destination(tmp_path / "nowhere", "x", overwrite=False)
    check_destination(tmp_path, "x", overwrite=False)
    check_destination(demo, config_hash(small_config()), overwrite=False)  # the same config: resumed


def test_another_configs_dataset_is_refused_unless_overwrite(demo) -> None:
    with pytest.raises(DataFileError, match=r"another config or command.*--overwrite"):
        check_destination(demo, config_hash(small_config("seed=9")), overwrite=False)
    check_destination(demo, config_hash(small_config("seed=9")), overwrite=True)


def test_files_eqagen_did_not_write_are_refused_even_with_overwrite(copy) -> None:
    (copy / "notes.txt").write_text("mine")
    (copy / "questions" / "mine.parquet").write_bytes(b"mine")
    for overwrite in (False, True):
        with pytest.raises(DataFileError, match=r"2 file\(s\) that eqagen did not write \(notes.txt, questions/mine"):
            check_destination(copy, config_hash(small_config()), overwrite=overwrite)


def test_a_folder_without_a_usable_manifest_is_not_eqagen_s(copy) -> None:
    edit_manifest(copy, lambda m: m["shards"][0].update(path="episodes/../../victim"))
    with pytest.raises(DataFileError, match="did not write"):
        check_destination(copy, config_hash(small_config()), overwrite=True)


def test_the_state_directory_is_not_the_dataset(tmp_path) -> None:
    (tmp_path / ".eqagen" / "batches").mkdir(parents=True)
    (tmp_path / ".eqagen" / "batches" / "x").write_text("checkpoint")
    assert files_outside_state(tmp_path) == []
    check_destination(tmp_path, "x", overwrite=False)


def test_a_refused_folder_gets_nothing_written_into_it(tmp_path) -> None:
    (tmp_path / "notes.txt").write_text("mine")
    with pytest.raises(DataFileError), claim_output(tmp_path, "x"):
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.txt"], "not even the lock"


# --- one command at a time --------------------------------------------------------------------------

HOLDER = textwrap.dedent(
    """
    import sys, time
    from eqagen.outputs.folder import output_lock
    with output_lock(sys.argv[1], "generate demo"):
        print("locked", flush=True)
        time.sleep(60)
    """
)


def test_a_second_command_on_a_locked_folder_is_refused_with_the_holder_named(tmp_path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path)], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        in_use = rf"in use by another eqagen command \(pid {holder.pid}: eqagen gen"
        with pytest.raises(DataFileError, match=in_use), output_lock(tmp_path, "resplit"):
            pass
    finally:
        holder.kill()
        holder.wait()
    with output_lock(tmp_path, "resplit"):  # the lock died with its holder, SIGKILL included
        assert (state_dir(tmp_path) / "lock").read_text().startswith(f"{os.getpid()}: eqagen resplit")


# --- the swap ---------------------------------------------------------------------------------------


def test_an_interrupted_swap_is_completed_by_the_next_command(demo, tmp_path) -> None:
    """A journal left by a command killed halfway through the swap: the readers refuse the folder, and
    the next command on it moves the rest in and the old rest out."""
    out = tmp_path / "out"
    generate_inline(small_config("seed=3"), out)  # the older dataset, another seed
    staging = state_dir(out) / "staging"
    shutil.copytree(demo, staging, ignore=shutil.ignore_patterns(".eqagen"))
    new = sorted(p.relative_to(staging).as_posix() for p in staging.rglob("*") if p.is_file())
    old = sorted(p.relative_to(out).as_posix() for p in out.rglob("*") if p.is_file() and ".eqagen" not in p.parts)
    journal = {"move": [p for p in new if p != "manifest.json"], "remove": sorted(set(old) - set(new))}
    (state_dir(out) / JOURNAL_NAME).write_text(json.dumps(journal))
    (out / "manifest.json").unlink()  # killed after the journal, with the first file moved in
    first = journal["move"][0]
    (out / first).parent.mkdir(exist_ok=True)
    shutil.move(staging / first, out / first)
    with pytest.raises(DataFileError, match="no manifest"):
        read_questions(out)
    finish_interrupted_commit(out)
    assert [r.question_id for r in read_questions(out)] == [r.question_id for r in read_questions(demo)]
    assert {p.relative_to(out).as_posix() for p in out.rglob("*") if ".eqagen" not in p.parts and p.is_file()} == set(
        new
    )
    assert not staging.exists() and not (state_dir(out) / JOURNAL_NAME).exists()


def test_a_new_layout_replaces_the_files_of_the_old_one_and_nothing_else(copy, tmp_path) -> None:
    """A dataset in the format-1 layout (questions/split=train/part-00000.parquet) made by an older eqagen:
    the run of the same config moves it to the new layout, removing the old shards and their folders."""
    manifest = read_manifest(copy)
    for shard in manifest["shards"]:
        table, name = shard["path"].split("/")
        split, index = name.split("-")[0], int(name.split("-")[1])
        part = f"part-{index:05d}.parquet"
        old = f"{table}/split={split}/{part}" if table == "questions" else f"{table}/{part}"
        (copy / old).parent.mkdir(parents=True, exist_ok=True)
        (copy / shard["path"]).rename(copy / old)
        shard["path"] = old
    manifest["format_version"] = 1
    (copy / "manifest.json").write_text(json.dumps(manifest))
    assert len(read_questions(copy)) == manifest["rows"]["questions_total"], "format 1 still reads"
    generate_inline(small_config(), copy)
    assert {p.relative_to(copy).as_posix() for p in (copy / "questions").rglob("*")} == {
        s["path"] for s in read_manifest(copy)["shards"] if s["path"].startswith("questions/")
    }
