"""Crash safety of ``eqagen generate``: SIGKILL at three different stages (sampling episodes, sampling
questions, writing shards) and again while a batch is checkpointed, then a rerun: the same shards as an
uninterrupted run, nothing duplicated, no Prefect server left. Ctrl-C stops cleanly keeping finished
batches. A full disk (a small tmpfs) and a read-only output (a read-only tmpfs) give a clear message
and no partial shard under a final name.

The kills are exact: the run is the real command in a subprocess, started through a small wrapper
that makes the chosen stage kill its own process with SIGKILL at the chosen batch or shard; the code
under test is unchanged. (The end-to-end SIGTERM-then-SIGKILL test with Prefect lives in tests/test_cli.py.)
"""

from __future__ import annotations

import contextlib
import json
import shutil
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from tests.test_cli import server_pids, shard_digests, shard_paths

CONFIG = ["--set", "generation.n_episodes=12", "--set", "generation.batch_size=3", "--set", "output.rows_per_shard=40",
          "--no-progress"]  # fmt: skip
N_BATCHES = 4

# Runs eqagen's command with one stage patched to SIGKILL its own process at a given call.
WRAPPER = textwrap.dedent(
    """
    import os, signal, sys
    stage, at = sys.argv[1], int(sys.argv[2])
    calls = {"n": 0}

    def killer(module, name):
        original = getattr(module, name)
        def patched(*args, **kwargs):
            calls["n"] += 1
            if calls["n"] == at:
                os.kill(os.getpid(), signal.SIGKILL)
            return original(*args, **kwargs)
        setattr(module, name, patched)

    import eqagen.flows.checkpoints as checkpoints
    import eqagen.flows.stages as stages
    import eqagen.outputs.shards as shards

    if stage == "shards":
        import eqagen.outputs.atomic as atomic
        import eqagen.outputs.folder as folder

        class KillingOs:  # the N-th rename of the dataset's writer kills the run (checkpoints not counted)
            def __getattr__(self, name):
                return getattr(os, name)

            def replace(self, src, dst):
                if os.sep + "batches" + os.sep not in str(dst):
                    calls["n"] += 1
                    if calls["n"] == at:
                        os.kill(os.getpid(), signal.SIGKILL)
                return os.replace(src, dst)

        shards.os = atomic.os = folder.os = KillingOs()
    elif stage == "checkpoint":
        killer(checkpoints, "write_json_atomic")  # the batch's stats.json, written just before DONE
    else:
        killer(stages, {"episodes": "sample_episodes", "programs": "sample_programs"}[stage])
    import atexit
    atexit.register(lambda: print(f"calls={calls['n']}", file=sys.stderr))  # how many kill points a run has
    from eqagen.cli import main
    sys.exit(main(sys.argv[3:]))
    """
)


def run_killed(out: Path, stage: str, at: int, runner: str, *extra: str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-c", WRAPPER, stage, str(at), "generate", "demo", "--out", str(out), "--runner", runner]
    return subprocess.run([*cmd, *CONFIG, *extra], capture_output=True, text=True, timeout=600, check=False)


def run(out: Path, *extra: str, runner: str = "inline") -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", "demo", "--out", str(out), "--runner", runner, *CONFIG]
    return subprocess.run([*cmd, *extra], capture_output=True, text=True, timeout=600, check=False)


def done_batches(out: Path) -> int:
    return len(list(out.glob(".eqagen/batches/*/*/DONE")))


def final_files(out: Path) -> list[Path]:
    return sorted(p for p in out.rglob("*") if p.is_file() and ".eqagen" not in p.relative_to(out).parts)


def assert_no_server_left(out: Path) -> None:
    deadline = time.monotonic() + 15
    while server_pids(out) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert server_pids(out) == [], "a Prefect server outlived its run"


def assert_complete_and_unique(out: Path) -> None:
    manifest = json.loads((out / "manifest.json").read_text())
    ids = [i for p in out.glob("questions/*.parquet") for i in pq.read_table(p)["question_id"].to_pylist()]
    eps = [i for p in out.glob("episodes/*.parquet") for i in pq.read_table(p)["episode_id"].to_pylist()]
    assert len(ids) == len(set(ids)) == manifest["rows"]["questions_total"], "questions duplicated or lost"
    assert len(eps) == len(set(eps)) == 12, "episodes duplicated or lost"
    assert not [p for p in final_files(out) if p.name.endswith(".tmp")], "a temporary file was left"


@pytest.fixture(scope="module")
def reference(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("ref") / "out"
    proc = run(out)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


@pytest.mark.parametrize(
    ("stage", "at", "runner", "done_before"),
    [
        # the third batch's episodes (Prefect's thread pool: up to two batches are finished)
        pytest.param("episodes", 3, "local", None, marks=pytest.mark.slow),
        # the second batch's questions: its episodes are made, not checkpointed
        pytest.param("programs", 2, "inline", 1, marks=pytest.mark.slow),
        # inside the third batch's checkpoint, before its DONE marker
        pytest.param("checkpoint", 3, "inline", 2, marks=pytest.mark.slow),
        ("shards", 3, "inline", N_BATCHES),  # the third rename of the dataset writer (in staging)
    ],
)
def test_sigkill_then_rerun_gives_the_same_shards(reference: Path, tmp_path: Path, stage, at, runner, done_before):
    out = tmp_path / "out"
    killed = run_killed(out, stage, at, runner)
    assert killed.returncode == -signal.SIGKILL, (killed.returncode, killed.stderr[-2000:])
    if done_before is not None:
        assert done_batches(out) == done_before
    assert not (out / "manifest.json").exists(), "a killed run has no manifest"
    assert not shard_paths(out), "no shard in the dataset folder before the run's swap"
    kept = done_batches(out)
    assert_no_server_left(out)
    rerun = run(out, "--summary-json", str(tmp_path / "s.json"))
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert json.loads((tmp_path / "s.json").read_text())["batches"]["resumed"] == kept, "finished batches reused"
    assert shard_digests(out) == shard_digests(reference)
    assert_complete_and_unique(out)


@pytest.mark.slow
def test_ctrl_c_stops_cleanly_and_keeps_finished_batches(reference: Path, tmp_path: Path) -> None:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", "demo", "--out", str(out), "--runner", "local", *CONFIG]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 300
    while done_batches(out) < 1 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=120)
    kept = done_batches(out)
    if proc.returncode == 0:
        pytest.skip("the run finished before Ctrl-C arrived (machine too fast for this timing)")
    assert proc.returncode == 130, err[-2000:]
    assert "interrupted" in err and "resume" in err and "Traceback" not in err, err[-2000:]
    assert kept >= 1, "finished batches are kept"
    assert_no_server_left(out)
    rerun = run(out, "--summary-json", str(tmp_path / "s.json"))
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert json.loads((tmp_path / "s.json").read_text())["batches"]["resumed"] >= kept
    assert shard_digests(out) == shard_digests(reference)


@contextlib.contextmanager
def tmpfs(where: Path, size_kb: int, readonly: bool = False) -> Iterator[Path]:
    where.mkdir(parents=True, exist_ok=True)
    opts = f"size={size_kb}k" + (",ro" if readonly else "")
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(where)], capture_output=True, check=False
    )
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({mounted.stderr.decode().strip()}); needs root")
    try:
        yield where
    finally:
        subprocess.run(["umount", "-l", str(where)], check=False)


@pytest.mark.slow
def test_full_disk_gives_a_clear_message_and_no_partial_shard(reference: Path, tmp_path: Path) -> None:
    with tmpfs(tmp_path / "disk", 2048) as disk:
        out = disk / "out"
        assert run(out).returncode == 0  # checkpoints and shards fit
        for p in final_files(out):
            p.unlink()  # the shards must be written again ...
        filler = disk / "filler"
        with contextlib.suppress(OSError), open(filler, "wb") as f:  # ... onto a full disk
            while True:
                f.write(b"\0" * 4096)
                f.flush()
        proc = run(out)
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert "No space left on device" in proc.stderr and "fix:" in proc.stderr and "Traceback" not in proc.stderr
        assert str(out) in proc.stderr, "the message names the file"
        assert not shard_paths(out), "no shard in the dataset folder"
        assert not list(out.rglob("*.tmp")), "no temporary file left"
        filler.unlink()
        proc = run(out)  # space again: the rerun finishes from the checkpoints
        assert proc.returncode == 0, proc.stderr[-2000:]
        assert shard_digests(out) == shard_digests(reference)


@pytest.mark.slow
def test_a_full_disk_under_prefect_is_exit_2_and_its_staging_is_cleaned_by_the_rerun(tmp_path: Path) -> None:
    """Regression: with the default runner a full disk was `internal error: PrefectHTTPStatusError ... this is
    a bug` (exit 1; Prefect's server failed to write its database, its client reported a 500) and partial
    files stayed in .eqagen/staging."""
    with tmpfs(tmp_path / "disk", 2560) as disk:
        out = disk / "out"
        proc = run(out, runner="processes")
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert "No space left on device" in proc.stderr and "internal error" not in proc.stderr, proc.stderr
        assert proc.stderr.startswith(f"eqagen: error: cannot write {out}: No space left on device; fix: free")
        subprocess.run(["mount", "-o", "remount,size=200m", str(disk)], check=True)
        staging = out / ".eqagen" / "staging"
        rerun = run(out, runner="processes")
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        assert not staging.exists() and shard_paths(out)


def test_read_only_output_gives_a_clear_message(tmp_path: Path) -> None:
    with tmpfs(tmp_path / "ro", 512, readonly=True) as ro:
        proc = run(ro / "out")
        assert proc.returncode == 2, proc.stderr[-2000:]
        assert "Read-only file system" in proc.stderr and "Traceback" not in proc.stderr, proc.stderr[-2000:]
        assert "choose another --out" in proc.stderr


# --- a kill while writing over an older dataset ------------------------------------------------------

OLDER, NEWER = ["--seed", "1"], ["--seed", "2", "--overwrite"]  # another config: replacing it needs --overwrite


@pytest.fixture(scope="module")
def older_and_newer(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """Two finished datasets of the small config, seeds 1 and 2, each in a fresh folder."""
    base = tmp_path_factory.mktemp("older-newer")
    for name, args in (("older", OLDER), ("newer", NEWER)):
        proc = run(base / name, *args)
        assert proc.returncode == 0, proc.stderr[-3000:]
    return base / "older", base / "newer"


def assert_whole_dataset_or_refused(out: Path, older: Path, newer: Path) -> str:
    """The folder after a kill is the older dataset whole, the newer one whole, or refused by every eqagen
    reader (no manifest, a journal the next command completes); returns which."""
    from eqagen.core import DataFileError
    from eqagen.outputs.dataset import open_dataset
    from eqagen.outputs.readers import read_questions

    if (out / "manifest.json").exists():
        open_dataset(out)  # verified: listed shards only, checksums, row counts, ids
        for name, reference in (("older", older), ("newer", newer)):
            if shard_digests(out) == shard_digests(reference):
                assert (out / "manifest.json").read_bytes() == (reference / "manifest.json").read_bytes()
                return name
        raise AssertionError(f"a mixed folder: {sorted(shard_digests(out))}")
    assert (out / ".eqagen" / "commit.json").exists(), "no manifest and nothing to complete the swap"
    with pytest.raises(DataFileError, match="no manifest"):
        read_questions(out)
    return "refused"


def kill_over_older_and_rerun(tmp_path: Path, older: Path, newer: Path, at: int) -> tuple[str, int]:
    """Copy the older dataset, run the newer config over it killed at the ``at``-th rename of the writer,
    check the folder, rerun; returns (state after the kill, kill points of an unkilled run)."""
    out = tmp_path / f"out-{at}"
    shutil.copytree(older, out)
    killed = run_killed(out, "shards", at, "inline", *NEWER)
    if killed.returncode == 0:
        return "finished", int(killed.stderr.rsplit("calls=", 1)[1].split()[0])
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    state = assert_whole_dataset_or_refused(out, older, newer)
    rerun = run(out, *NEWER)
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert assert_whole_dataset_or_refused(out, older, newer) == "newer"
    assert not (out / ".eqagen" / "staging").exists() and not (out / ".eqagen" / "commit.json").exists()
    shutil.rmtree(out)
    return state, 0


@pytest.mark.slow  # about a minute: three killed runs and their reruns (tests/outputs/test_folder.py swaps quickly)
def test_a_kill_while_writing_over_an_older_dataset_never_leaves_a_mixed_folder(older_and_newer, tmp_path):
    """Three kill points: while shards are staged, right after the swap's journal, and halfway through the
    swap. Each leaves the older dataset whole or a folder every reader refuses; the rerun gives the newer."""
    older, newer = older_and_newer
    _, n_points = kill_over_older_and_rerun(tmp_path, older, newer, 10**6)
    journal = n_points - len(shard_digests(newer)) - 4  # the swap: journal, shards, 3 audit files, manifest
    states = [kill_over_older_and_rerun(tmp_path, older, newer, at)[0] for at in (2, journal + 1, journal + 3)]
    assert states == ["older", "refused", "refused"]


@pytest.mark.slow
def test_a_kill_at_every_rename_over_an_older_dataset_then_a_rerun_gives_the_newer_bytes(older_and_newer, tmp_path):
    older, newer = older_and_newer
    _, n_points = kill_over_older_and_rerun(tmp_path, older, newer, 10**6)
    states = [kill_over_older_and_rerun(tmp_path, older, newer, at)[0] for at in range(1, n_points + 1)]
    assert set(states) == {"older", "refused"} and states[-1] == "refused", states


# The run killed while it copies the template of Prefect's database into the output (half the bytes written).
KILL_IN_DB_COPY = textwrap.dedent(
    """
    import os, shutil, signal, sys
    from pathlib import Path
    import eqagen.flows.server as server

    def half_copy(src, dst, *args, **kwargs):
        data = Path(src).read_bytes()
        Path(dst).write_bytes(data[: len(data) // 2])
        os.kill(os.getpid(), signal.SIGKILL)

    server.shutil = type("KillingShutil", (), {"copyfile": staticmethod(half_copy)})
    from eqagen.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.slow
def test_a_kill_during_the_copy_of_prefects_database_does_not_break_the_reruns(reference, tmp_path) -> None:
    from eqagen.flows.server import template_path

    warm = run(tmp_path / "warm", runner="local")  # makes the template if this machine has none yet
    assert warm.returncode == 0 and template_path().exists(), warm.stderr[-2000:]
    out = tmp_path / "out"
    cmd = [sys.executable, "-c", KILL_IN_DB_COPY, "generate", "demo", "--out", str(out), "--runner", "local", *CONFIG]
    killed = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert killed.returncode == -signal.SIGKILL, killed.stderr[-2000:]
    assert not (out / ".eqagen" / "prefect" / "prefect.db").exists()
    assert_no_server_left(out)
    for extra in ((), ("--fresh",)):
        rerun = run(out, *extra, runner="local")
        assert rerun.returncode == 0, rerun.stderr[-2000:]
        assert shard_digests(out) == shard_digests(reference)
