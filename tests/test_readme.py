"""The README tells the truth: the numbers it gives are the ones a fresh run makes, its "Reading it" code
runs as written on a fresh output, and its fresh-machine commands are the ones CI runs.

The numbers are read from the README, not written here, so a change to the engine that changes them
fails this test until the README says the new ones.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT

README = (REPO_ROOT / "README.md").read_text(encoding="utf-8")
COUNTS = r"([\d,]+) questions \(train ([\d,]+), validation ([\d,]+), test ([\d,]+)\)"


def number(text: str) -> int:
    return int(text.replace(",", ""))


def promised(pattern: str) -> dict[str, int]:
    """The episodes and question counts the README gives in the sentence matching ``pattern``."""
    match = re.search(pattern + COUNTS, " ".join(README.split()))
    assert match, f"the README no longer says {pattern!r} ... N questions (train N, val N, test N)"
    episodes, total, train, val, test = (number(g) for g in match.groups())
    return {"episodes": episodes, "questions_total": total, "train": train, "validation": val, "test": test}


def made(out: Path) -> dict[str, int]:
    rows = json.loads((out / "manifest.json").read_text())["rows"]
    return {"episodes": rows["episodes"], "questions_total": rows["questions_total"], **rows["questions"]}


def generate(preset: str, out: Path) -> None:
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", preset, "--out", str(out), "--no-progress"]
    proc = subprocess.run([*cmd, "--runner", "inline"], capture_output=True, text=True, timeout=1800, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = " ".join(proc.stdout.split())
    counts = made(out)
    assert f"-> {counts['questions_total']:,} questions" in summary, "the summary prints what the README promises"


@pytest.fixture(scope="module")
def fresh_demo(tmp_path_factory) -> Path:
    """``eqagen generate demo --out out/demo`` in a fresh folder (the inline runner: the same bytes as any)."""
    root = tmp_path_factory.mktemp("readme")
    generate("demo", root / "out" / "demo")
    return root


def test_the_demo_numbers_in_the_readme_are_those_of_a_fresh_run(fresh_demo) -> None:
    assert made(fresh_demo / "out" / "demo") == promised(r"in `out/demo`[^:]*: ([\d,]+) episodes and ")


@pytest.mark.slow
def test_the_tag_eqa_numbers_in_the_readme_are_those_of_a_fresh_run(tmp_path) -> None:
    generate("tag-eqa", tmp_path / "tag-eqa")
    sentence = r"out/tag-eqa` makes[^:]*: ([\d,]+) episodes of at most 250 steps and "
    assert made(tmp_path / "tag-eqa") == promised(sentence)


def reading_blocks() -> list[str]:
    section = README.split("## Reading it", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```python\n(.*?)```", section, flags=re.S)


# Runs the README's blocks one after the other in one namespace, then reports what they read.
DRIVER = textwrap.dedent(
    """
    import contextlib, io, json, sys
    blocks = json.loads(sys.stdin.read())
    ns, printed = {}, io.StringIO()
    with contextlib.redirect_stdout(printed):
        for block in blocks:
            exec(block, ns)
    print(json.dumps({
        "pyarrow": ns["questions"].num_rows, "pandas": len(ns["df"]), "polars": ns["frame"].height,
        "datasets": {split: ns["qa"][split].num_rows for split in ns["qa"]}, "hf_episodes": ns["episode_rows"].num_rows,
        "eqagen": len(ns["records"]), "eqagen_episodes": len(ns["episodes_by_id"]),
        "duckdb": printed.getvalue(),
    }))
    """
)


def test_every_read_in_the_readme_runs_as_written_on_a_fresh_output(fresh_demo, tmp_path) -> None:
    """pyarrow, pandas, polars, DuckDB, Hugging Face ``datasets`` and eqagen's own readers, called exactly
    as the README shows them (no extra argument), from the folder where ``out/demo`` was made."""
    blocks = reading_blocks()
    assert len(blocks) >= 6
    env = {**os.environ, "HF_HOME": str(tmp_path / "hf"), "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1"}
    proc = subprocess.run([sys.executable, "-c", DRIVER], input=json.dumps(blocks), capture_output=True, text=True,
                          cwd=fresh_demo, env=env, timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    got = json.loads(proc.stdout.strip().splitlines()[-1])
    counts = made(fresh_demo / "out" / "demo")
    total = counts["questions_total"]
    assert got["pyarrow"] == got["pandas"] == got["polars"] == total
    assert got["datasets"] == {split: counts[split] for split in ("train", "validation", "test")}
    assert got["hf_episodes"] == got["eqagen_episodes"] == counts["episodes"]
    assert got["eqagen"] == counts["test"], "read_questions(DIR, 'test')"
    for split in ("train", "validation", "test"):  # DuckDB's table printed the count of each split's categories
        assert split in got["duckdb"]


def test_the_fresh_machine_commands_are_those_ci_runs() -> None:
    quick = README.split("## Quick start (fresh machine)", 1)[1].split("```bash\n", 1)[1].split("```", 1)[0]
    setup = 'python3 -m venv .venv && .venv/bin/pip install -e ".[test,dask]"'
    assert quick.splitlines() == [f"{setup} && .venv/bin/eqagen generate demo --out out/demo",
                                  f"{setup} && .venv/bin/python -m pytest"]  # fmt: skip
    assert quick.splitlines()[1] in (REPO_ROOT / ".ci" / "run").read_text()


def test_the_readme_reads_the_folder_the_plain_way_of_each_library() -> None:
    """The issue's reads, with no extra argument: pandas and polars on the questions folder, DuckDB on a
    recursive glob, ``load_dataset`` on the dataset folder (the reads themselves run in the test above)."""
    code = "\n".join(reading_blocks())
    for call in ('pd.read_parquet("out/demo/questions")', 'pl.read_parquet("out/demo/questions")',
                 "read_parquet('out/demo/questions/**/*.parquet')", 'load_dataset("out/demo")'):  # fmt: skip
        assert call in code, call
