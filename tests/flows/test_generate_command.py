"""``eqagen generate`` on a folder that already holds something: another config's dataset, files a user
put there, a second run at the same time, an earlier run's checkpoints; and what it says about them.

Real runs of the ``demo`` preset made small (the household backend and the question engine, inline
runner), through the command's own ``main``.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from eqagen.cli import main
from eqagen.config import load_config
from eqagen.flows import pipeline, progress, stages
from eqagen.outputs.dataset import open_dataset
from tests.test_cli import shard_digests

SMALL = ["--set", "generation.n_episodes=8", "--set", "generation.batch_size=2", "--runner", "inline", "--no-progress"]


def generate(out: Path, *extra: str) -> int:
    return main(["generate", "demo", "--out", str(out), *SMALL, *extra])


def folder_bytes(out: Path) -> dict[str, bytes]:
    return {p.relative_to(out).as_posix(): p.read_bytes() for p in sorted(out.rglob("*"))
            if p.is_file() and ".eqagen" not in p.relative_to(out).parts}  # fmt: skip


def dataset_bytes(out: Path) -> dict[str, bytes]:
    """Everything but stats.json, whose timings differ from run to run."""
    return {k: v for k, v in folder_bytes(out).items() if k != "stats.json"}


@pytest.fixture(scope="module")
def seed_1(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("seed1") / "out"
    assert generate(out, "--seed", "1") == 0
    return out


def test_a_finished_dataset_of_another_config_is_kept_unless_overwrite(seed_1, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert generate(out) == 0
    before = folder_bytes(out)
    capsys.readouterr()
    assert generate(out, "--seed", "1") == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"eqagen: error: {out}: holds a finished dataset made by another config")
    assert "--overwrite" in err[0] and "new --out" in err[0]
    assert folder_bytes(out) == before, "nothing was touched"
    assert generate(out) == 0, "the same config: resumed"
    assert dataset_bytes(out) == {k: v for k, v in before.items() if k != "stats.json"}  # its timings differ
    assert generate(out, "--seed", "1", "--overwrite") == 0
    assert dataset_bytes(out) == dataset_bytes(seed_1), "replaced whole: nothing of the old dataset is left"


def test_files_eqagen_did_not_write_stop_the_run_even_with_overwrite(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    (out / "questions").mkdir(parents=True)
    (out / "questions" / "part-00000.parquet").write_bytes(b"a user's shard")
    (out / "report.html").write_text("a user's report")
    for extra in ((), ("--overwrite",)):
        assert generate(out, *extra) == 2
        err = capsys.readouterr().err
        assert "2 file(s) that eqagen did not write (questions/part-00000.parquet, report.html)" in err
    assert (out / "questions" / "part-00000.parquet").read_bytes() == b"a user's shard"
    assert sorted(p.name for p in out.iterdir()) == ["questions", "report.html"], "nothing written, not even a lock"


@pytest.mark.slow  # two whole runs racing for one folder: about 18 s
def test_two_runs_on_the_same_folder_cannot_interleave(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    more = ["--set", "generation.n_episodes=40"]  # long enough to be caught running
    first = subprocess.Popen([sys.executable, "-m", "eqagen.cli", "generate", "demo", "--out", str(out), *SMALL, *more],
                             stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)  # fmt: skip
    lock = out / ".eqagen" / "lock"
    deadline = time.monotonic() + 120
    while not (lock.exists() and lock.read_text()) and time.monotonic() < deadline and first.poll() is None:
        time.sleep(0.02)
    assert first.poll() is None, "the first run is still running"
    assert main(["generate", "demo", "--out", str(out), *SMALL, *more]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"eqagen: error: {out}: in use by another eqagen command (pid {first.pid}: eqagen generate "
                   "demo); fix: wait for it to finish, or choose a new --out")  # fmt: skip
    _, first_err = first.communicate(timeout=300)
    assert first.returncode == 0, first_err[-2000:]
    open_dataset(out)  # the first run's dataset, whole and verified


def interrupted_run(out: Path, done: int) -> list[str]:
    """A run killed after ``done`` batches: their checkpoints, nothing else."""
    config = load_config("demo", [arg for arg in SMALL if "=" in arg] + ["runner.kind=inline"])
    ctx = pipeline.make_context(config, out)
    batches = stages.plan_batches(config.generation, config.seed)
    for batch in batches[:done]:
        pipeline.run_batch(ctx, batch)
    return [b.name for b in batches]


def test_resume_is_announced_first_and_the_bar_starts_there(tmp_path, capsys, monkeypatch) -> None:
    out = tmp_path / "out"
    names = interrupted_run(out, done=3)
    bars: list[dict] = []

    class Recording(progress.BatchProgress):
        def __init__(self, total: int, completed: int = 0, enabled: bool = True, file=None):
            super().__init__(total, completed, enabled, file)
            shown = self.progress.tasks[0]  # what the bar shows before the first batch of this run
            bars.append({"total": shown.total, "completed": shown.completed, "advanced": 0})

        def advance(self, _=None) -> None:
            bars[-1]["advanced"] += 1
            super().advance()

    monkeypatch.setattr(progress, "BatchProgress", Recording)
    assert generate(out) == 0
    captured = capsys.readouterr()
    assert captured.err.splitlines()[0] == f"resuming: 3 of {len(names)} batches done (checkpoints in {out}/.eqagen)"
    assert bars == [{"total": len(names), "completed": 3, "advanced": len(names) - 3}]
    assert f"{len(names)} batches (3 resumed from checkpoints)" in " ".join(captured.out.split())


def test_clean_removes_the_checkpoints_and_the_summary_says_what_they_weigh(tmp_path, capsys) -> None:
    kept, cleaned = tmp_path / "kept", tmp_path / "cleaned"
    assert generate(kept) == 0
    summary = " ".join(capsys.readouterr().out.split())
    size = sum(p.stat().st_size for p in (kept / ".eqagen" / "batches").rglob("*") if p.is_file())
    assert f"checkpoints: {size / 1e6:.1f} MB in {kept}/.eqagen" in summary and "--clean" in summary
    assert generate(cleaned, "--clean") == 0
    assert " ".join(capsys.readouterr().out.split()).endswith(f"checkpoints: none kept in {cleaned}/.eqagen "
                                                              "(removed by --clean)")  # fmt: skip
    assert sorted(p.name for p in (cleaned / ".eqagen").iterdir()) == ["lock", "logs"]  # the run's log stays
    assert shard_digests(cleaned) == shard_digests(kept)
