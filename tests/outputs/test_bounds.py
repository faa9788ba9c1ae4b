"""Crafted dataset folders: every file a reader opens is a regular file of bounded size, JSON is bounded in
nesting and integer size, and a shard's footer must state a bounded read. Each is refused with one line
naming the file and the bound, at once (never a hang, never gigabytes of memory, never an internal error).

Regressions (the red team's): ``stats.json`` linked to ``/dev/zero`` took 3 GB in 3 s; a FIFO in place of
``stats.json`` or a shard hung past 60 s (and ``audit`` passed the FIFO shard's checksum, dropping its split);
a 34 KB shard that decompressed without bound drove every reader past 4 GB; a manifest nested 100,000 deep
or holding a 5,000-digit integer was "internal error: this is a bug".
"""

from __future__ import annotations

import os
import threading
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from eqagen.cli import main
from eqagen.core import DataFileError
from eqagen.outputs import dataset as dataset_module
from eqagen.outputs.readers import read_questions
from eqagen.outputs.shards import sha256_of
from tests.outputs.test_folder import copy, demo, edit_manifest  # noqa: F401 (fixtures)


def finishes(call, timeout_s: float = 20.0):
    """``call()``'s exception (or None), failing the test if it has not returned within ``timeout_s``."""
    outcome: list = []

    def target() -> None:
        try:
            call()
            outcome.append(None)
        except Exception as err:  # the outcome is what is checked
            outcome.append(err)

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(timeout_s)
    assert outcome, f"still running after {timeout_s} s"
    return outcome[0]


def first_shard(out: Path) -> Path:
    return sorted((out / "questions").glob("train-*.parquet"))[0]


@pytest.mark.parametrize(
    ("where", "kind"), [("stats.json", "fifo"), ("stats.json", "link to /dev/zero"), ("shard", "fifo")]
)  # a shard linked to /dev/zero was already refused: it leads out of the folder through a link
def test_a_fifo_or_a_device_in_place_of_a_file_is_refused_at_once(copy, capsys, where, kind) -> None:  # noqa: F811
    target = copy / "stats.json" if where == "stats.json" else first_shard(copy)
    target.unlink()
    os.mkfifo(target) if kind == "fifo" else target.symlink_to("/dev/zero")
    err = finishes(lambda: read_questions(copy))
    assert isinstance(err, DataFileError) and "not a regular file" in str(err), err
    assert finishes(lambda: main(["audit", str(copy)]) == 1) is None  # every check reported, no hang
    out = capsys.readouterr().out
    failed = "stats.json readable" if where == "stats.json" else "shards are regular files within bounds"
    assert f"FAILED  {failed}" in out


@pytest.mark.parametrize(
    ("file", "content", "problem"),
    [
        ("manifest.json", "[" * 100_000 + "]" * 100_000, "nests objects and arrays more than 64 deep"),
        ("stats.json", '{"a": ' * 100_000 + "1" + "}" * 100_000, "nests objects and arrays more than 64 deep"),
        ("manifest.json", '{"seed": ' + "9" * 5000 + "}", "holds an integer of 5,000 digits, more than 40"),
        ("stats.json", '{"n": -' + "7" * 5000 + "}", "holds an integer of 5,000 digits, more than 40"),
    ],
)
def test_deep_or_huge_json_is_one_line_of_bad_input(copy, capsys, file, content, problem) -> None:  # noqa: F811
    (copy / file).write_text(content)
    for command in (["resplit", str(copy), "--out", str(copy.parent / "r")], ["export", str(copy), "--format",
                    "jsonl", "--out", str(copy.parent / "x.jsonl")]):  # fmt: skip
        assert main(command) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and problem in err[0] and "internal error" not in err[0], err
    with pytest.raises(DataFileError, match=problem):
        read_questions(copy)


def test_a_shard_whose_footer_states_an_unbounded_read_is_refused_before_decompressing(
    copy,  # noqa: F811
    monkeypatch,
) -> None:
    """A real compressible shard (one column of 8 MiB of one letter, zstd: a few KB on disk), checked against
    bounds lowered to 4 MiB per column chunk: the real bounds (1 GiB, 4 GiB) would need that much memory to
    plant. The shard's checksum and rows are put in the manifest, so only the bound can refuse it."""
    monkeypatch.setattr(dataset_module, "MAX_COLUMN_CHUNK_BYTES", 4 << 20)
    shard = first_shard(copy)
    rel = shard.relative_to(copy).as_posix()
    pq.write_table(pa.table({"question_id": ["x" * (8 << 20)]}), shard, compression="zstd")
    assert shard.stat().st_size < 64 << 10

    def update(m: dict) -> None:
        for s in m["shards"]:
            if s["path"] == rel:
                m["rows"]["questions"]["train"] += 1 - s["rows"]
                m["rows"]["questions_total"] += 1 - s["rows"]
                s.update(sha256=sha256_of(shard), rows=1, bytes=shard.stat().st_size)

    edit_manifest(copy, update)
    with pytest.raises(DataFileError, match=r"decompresses to 8,388,[0-9]+ bytes .* more than .*\(4,194,304\)"):
        read_questions(copy)


def retyped(shard: Path) -> None:
    """``shard`` rewritten with another schema (the `answer` column retyped, a column added), same rows."""
    table = pq.read_table(shard)
    table = table.set_column(table.schema.get_field_index("answer"), "answer", pa.array([1] * table.num_rows))
    pq.write_table(table.append_column("note", pa.array(["x"] * table.num_rows)), shard)


def retype_with_checksums(folder: Path, which: str) -> dict[str, Path]:
    """Retype the last questions shard (``which`` "one shard") or every one, and fix their checksums and sizes
    in the manifest, as a careful tamperer would; returns the retyped shards by manifest path."""
    shards = sorted((folder / "questions").glob("*.parquet"))
    tampered = shards[-1:] if which == "one shard" else shards
    for shard in tampered:
        retyped(shard)
    fixed = {s.relative_to(folder).as_posix(): s for s in tampered}
    edit_manifest(folder, lambda m: [s.update(sha256=sha256_of(fixed[s["path"]]), bytes=fixed[s["path"]].stat().st_size)
                                   for s in m["shards"] if s["path"] in fixed])  # fmt: skip
    return fixed


@pytest.mark.parametrize("which", ["one shard", "every shard"])
@pytest.mark.parametrize("fmt", ["openeqa", "jsonl"])
def test_export_refuses_a_shard_of_another_schema_whose_checksum_was_fixed(copy, capsys, fmt, which) -> None:  # noqa: F811
    """Regression: `export openeqa|jsonl` wrote a shard whose schema differs from the manifest's, once its
    checksum in the manifest was fixed to match. With every questions shard retyped alike, the shards agree
    with one another: only the schema the manifest records (`schema_sha256`) tells them from the dataset's."""
    fixed = retype_with_checksums(copy, which)
    dest = copy.parent / "x"
    dest.write_text("the user's own file\n")
    assert main(["export", str(copy), "--format", fmt, "--out", str(dest), "--overwrite"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    first = sorted(fixed)[0]
    assert len(err) == 1 and err[0].startswith(f"eqagen: error: {copy / first} [shard schemas match the manifest]: "
                                               "its schema (sha256 "), err  # fmt: skip
    assert "differs from the one manifest.json records for questions" in err[0] and "; fix: " in err[0], err
    assert dest.read_text() == "the user's own file\n", "the user's file was touched"
    assert sorted(p.name for p in copy.parent.iterdir()) == ["copy", "x"], "something was written beside it"


def test_a_manifest_from_before_schemas_were_recorded_still_has_one_schema_per_table(copy) -> None:  # noqa: F811
    """A manifest without `schema_sha256` (written before eqagen recorded it) is read, and its table's first
    shard stands in for the schema: a later shard of another schema is refused."""
    shard = sorted((copy / "questions").glob("*.parquet"))[-1]
    rel = shard.relative_to(copy).as_posix()
    edit_manifest(copy, lambda m: m.pop("schema_sha256"))
    assert len(read_questions(copy)) > 0
    retyped(shard)
    edit_manifest(copy, lambda m: [s.update(sha256=sha256_of(shard), bytes=shard.stat().st_size)
                                   for s in m["shards"] if s["path"] == rel])  # fmt: skip
    with pytest.raises(DataFileError, match=f"{rel} .*: its schema differs from that of questions/.*, another shard"):
        read_questions(copy)


@pytest.mark.parametrize("which", [pytest.param("one shard", marks=pytest.mark.slow), "every shard"])  # 1.2 s, 0.4 s
def test_audit_reports_a_shard_of_another_schema_and_reads_the_others(copy, capsys, which) -> None:  # noqa: F811
    """Regression: `audit` of a folder whose `answer` column was retyped in a shard (checksum fixed) was an
    internal error (its statistics read that column as text); now the check fails and the statistics are
    recomputed from the shards that can be trusted."""
    fixed = retype_with_checksums(copy, which)
    assert main(["audit", str(copy)]) == 1
    captured = capsys.readouterr()
    assert "internal error" not in captured.err, captured.err
    assert f"FAILED  shard schemas match the manifest: {sorted(fixed)[0]}: its schema" in captured.out
    kept = [s for s in (copy / "questions").glob("*.parquet") if s not in fixed.values()]
    untouched = sum(pq.read_metadata(s).num_rows for s in kept)
    assert f"\n{untouched} questions " in captured.out
