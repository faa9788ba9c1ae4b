"""The command's messages and exit statuses: every --help describes every argument; bad input of every
kind is exit status 2 with one line, first and alone on stderr, naming the file or key; no traceback.

The table of bad inputs runs through :func:`eqagen.cli.main` in this process, as a user's command line
would; the few cases that need a real pipe or a real Prefect run are subprocesses
(``tests/test_cli_runlog.py`` for the latter).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from eqagen import cli
from eqagen.cli import EXIT_STATUSES, build_parser, main

DOCS = Path(__file__).resolve().parents[1] / "docs"
INLINE = ["--runner", "inline", "--no-progress", "--set", "generation.n_episodes=4"]
SMALL_INLINE = ["--set", "generation.n_episodes=36", "--set", "generation.batch_size=12", "--runner", "inline",
                "--no-progress"]  # fmt: skip


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    """A small household dataset, as `eqagen generate demo` writes it."""
    out = tmp_path_factory.mktemp("demo") / "out"
    assert main(["generate", "demo", "--out", str(out), *SMALL_INLINE]) == 0
    return out


def first_line(err: str) -> str:
    return err.splitlines()[0] if err else ""


def run_main(argv: list[str], capsys) -> tuple[int, str, str]:
    """``main(argv)``'s exit status (argparse's SystemExit included), stdout and stderr."""
    try:
        code = main(argv)
    except SystemExit as done:
        code = int(done.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


# --- help ---------------------------------------------------------------------------------------------


def walk(parser: argparse.ArgumentParser, path: tuple[str, ...] = ("eqagen",)):
    """Every (command path, action) of the parser tree, sub-commands included."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            helps = {choice.dest: choice.help for choice in action._choices_actions}
            for name, sub in action.choices.items():
                yield (*path, name), helps.get(name)
                yield from walk(sub, (*path, name))
        else:
            yield path, action


def test_every_help_describes_every_argument() -> None:
    missing = []
    for path, action in walk(build_parser()):
        if isinstance(action, argparse.Action):
            if not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{' '.join(path)} {'/'.join(action.option_strings) or action.dest}")
        elif not action:  # a sub-command's own help line
            missing.append(" ".join(path))
    assert missing == []


def test_exit_statuses_are_listed_in_help_and_in_the_docs(capsys) -> None:
    code, out, _ = run_main(["--help"], capsys)
    assert code == 0 and "exit statuses:" in out
    section = (DOCS / "pipeline.md").read_text().split("## Exit statuses", 1)[1].split("\n## ", 1)[0]
    for status in EXIT_STATUSES:
        assert re.search(rf"^\s+{status}\s", out, re.M), f"{status} not in --help"
        assert f"| {status} |" in section, f"{status} not in docs/pipeline.md"


def test_export_help_says_express_is_for_navigation_only(capsys) -> None:
    code, out, _ = run_main(["export", "--help"], capsys)
    assert code == 0 and "navigation" in out and "express" in out
    assert "for navigation episodes only" in (DOCS / "audit.md").read_text()


# --- the table of bad inputs -------------------------------------------------------------------------


def _write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data)
    return path


def _alfred_root(tmp: Path, pose_x: float) -> list[str]:
    scene = {
        "floor_plan": "FloorPlan1",
        "object_poses": [{"objectName": "Apple_1", "position": {"x": pose_x, "y": 0.9, "z": 0.0}}],
        "init_action": {"x": 0.0, "y": 0.9, "z": 0.0, "rotation": 0, "horizon": 30},
    }
    plan = {"low_actions": [{"api_action": {"action": "MoveAhead"}}]}
    _write(tmp / "alfred" / "t1" / "traj_data.json", json.dumps({"scene": scene, "plan": plan}))
    (tmp / "layouts").mkdir(exist_ok=True)
    return [str(tmp / "alfred"), "--out", str(tmp / "replayed"), "--layouts", str(tmp / "layouts")]


# Each row: a name, the command line (built in a temporary directory), the exit status, and what the first
# line of stderr must name (the file or the key; "{tmp}" is the temporary directory).
BadInput = tuple[str, Callable[[Path, Path], list[str]], int, str]
BAD_INPUTS: list[BadInput] = [
    ("YAML list with --set", lambda t, d: ["generate", str(_write(t / "list.yaml", "- a\n- b\n")), "--out",
     str(t / "o"), "--set", "seed=1"], 2, "list.yaml: config key '(top level)'"),
    ("non-UTF-8 config", lambda t, d: ["generate", str(_write(t / "latin.yaml", b"name: caf\xe9\n")), "--out",
     str(t / "o")], 2, "latin.yaml: config key '(file)': not UTF-8"),
    ("binary config", lambda t, d: ["generate", str(_write(t / "bin.yaml", bytes(range(256)))), "--out",
     str(t / "o")], 2, "bin.yaml: config key '(file)'"),
    ("YAML alias bomb", lambda t, d: ["generate", str(_write(t / "bomb.yaml", "a: &a [1, 1]\nb: [*a, *a]\n")),
     "--out", str(t / "o")], 2, "bomb.yaml: config key '(file)': not valid YAML"),
    ("n_episodes: true", lambda t, d: ["generate", str(_write(t / "c.yaml", "generation:\n  n_episodes: true\n")),
     "--out", str(t / "o")], 2, "c.yaml: config key 'generation.n_episodes'"),
    ("n_episodes 10^15", lambda t, d: ["generate", "demo", "--out", str(t / "o"), "--set",
     "generation.n_episodes=1000000000000000"], 2, "config key 'generation.n_episodes'"),
    ("NaN in a config", lambda t, d: ["generate", "demo", "--out", str(t / "o"), "--set",
     "questions.grounded_share=.nan"], 2, "config key 'questions.grounded_share'"),
    ("NaN in backend params", lambda t, d: ["generate", "demo", "--out", str(t / "o"), "--set",
     "generation.params.agent.mislocate=.nan"], 2, "config key 'generation.params.agent.mislocate'"),
    ("--workers 0", lambda t, d: ["generate", "demo", "--out", str(t / "o"), "--workers", "0"], 2,
     "eqagen generate: error: argument --workers"),
    ("--workers 100000", lambda t, d: ["generate", "demo", "--out", str(t / "o"), "--workers", "100000"], 2,
     "eqagen generate: error: argument --workers"),
    ("negative seed", lambda t, d: ["generate", "demo", "--out", str(t / "o"), "--seed", "-1"], 2,
     "config key 'seed'"),
    ("missing config file", lambda t, d: ["generate", str(t / "absent.yaml"), "--out", str(t / "o")], 2,
     "no such config file"),
    ("unknown preset", lambda t, d: ["generate", "tag-eqa-typo", "--out", str(t / "o")], 2,
     "unknown preset 'tag-eqa-typo'"),
    ("--out is a file", lambda t, d: ["generate", "demo", "--out", str(_write(t / "afile", "x"))], 2, "{tmp}/afile"),
    ("unknown preset to show", lambda t, d: ["presets", "nonexistent"], 2, "unknown preset 'nonexistent'; known: demo"),
    ("binary split file", lambda t, d: ["resplit", str(d), "--out", str(t / "r"), "--split-file",
     str(_write(t / "split.csv", b"\xff\xfe\x00\x01" * 64))], 2, "split.csv"),
    ("split file with NUL bytes", lambda t, d: ["resplit", str(d), "--out", str(t / "r"), "--split-file",
     str(_write(t / "nul.csv", "scene_id,split\nhome\x00,train\n"))], 2, "nul.csv"),
    ("split file nested 100,000 deep", lambda t, d: ["resplit", str(d), "--out", str(t / "r"), "--split-file",
     str(_write(t / "deep.json", "[" * 100000 + "]" * 100000))], 2, "deep.json: not valid JSON"),
    ("split file rows without split", lambda t, d: ["resplit", str(d), "--out", str(t / "r"), "--split-file",
     str(_write(t / "short.csv", "scene_id,split\nhome-1\n"))], 2, "short.csv [line 2]"),
    ("NaN ratios", lambda t, d: ["resplit", str(d), "--out", str(t / "r"), "--ratios", "nan,0.5,0.5"], 2,
     "option '--ratios'"),
    ("audit of no dataset", lambda t, d: ["audit", str(t)], 2, "manifest.json"),
    ("audit --against binary", lambda t, d: ["audit", str(d), "--against", str(_write(t / "oe.json",
     bytes(range(256))))], 2, "oe.json"),
    ("audit --against odd types", lambda t, d: ["audit", str(d), "--against", str(_write(t / "oe2.json",
     json.dumps([{"question": 3, "answer": "a", "category": "c"}])))], 2, "oe2.json [[0].question]"),
    ("export express of household data", lambda t, d: ["export", str(d), "--format", "express", "--out",
     str(t / "x.json")], 2, "navigation episodes only"),
    ("block list cut short", lambda t, d: ["blockworld", "inspect", str(_write(t / "cut.txt",
     "2 2 2\n0 0 0 minecraft:stone\n1 0 0 minecraf\n"))], 2, "cut.txt [line 3]"),
    ("block list outside its size", lambda t, d: ["blockworld", "inspect", str(_write(t / "far.txt",
     "2 2 2\n0 0 0 minecraft:stone\n0 0 9000 minecraft:stone\n"))], 2, "far.txt [line 3]"),
    ("gzip bomb schematic", lambda t, d: ["blockworld", "inspect", str(_write(t / "bomb.schem",
     gzip.compress(bytes(1 << 20)) * 300))], 2, "bomb.schem [gzip]"),
    ("NaN ALFRED pose", lambda t, d: ["alfred", "replay", *_alfred_root(t, float("nan"))], 2,
     "traj_data.json [scene.object_poses[0].position]"),
    ("1e308 ALFRED pose", lambda t, d: ["alfred", "replay", *_alfred_root(t, 1e308)], 2,
     "traj_data.json [scene.object_poses[0].position]"),
    ("ALFRED --limit 0", lambda t, d: ["alfred", "replay", *_alfred_root(t, 0.0), "--limit", "0"], 2,
     "argument --limit"),
    # found by running the command on odd inputs: each raised a traceback
    ("YAML nested 20,000 deep", lambda t, d: ["generate", str(_write(t / "deep.yaml", "a: " + "[" * 20000 +
     "]" * 20000)), "--out", str(t / "o")], 2, "deep.yaml: config key '(file)': nested too deeply"),
    ("navigation hfov not a number", lambda t, d: ["generate", "demo", "--out", str(t / "o"), *INLINE, "--set",
     "generation.family=navigation", "--set", "generation.params={hfov: abc}"], 2, "'generation.params.hfov'"),
    ("navigation policy step not a number", lambda t, d: ["generate", "demo", "--out", str(t / "o"), *INLINE, "--set",
     "generation.family=navigation", "--set", "generation.params={step: 1e400}"], 2, "'generation.params.step'"),
    ("hm3d scenes not a list", lambda t, d: ["generate", "demo", "--out", str(t / "o"), *INLINE, "--set",
     "generation.family=navigation", "--set", "generation.backend=hm3d-files", "--set",
     "generation.params={scenes: abc}"], 2, "config key 'scenes'"),
    ("blockworld biomes not a list", lambda t, d: ["generate", "demo", "--out", str(t / "o"), *INLINE, "--set",
     "generation.family=blockworld", "--set", "generation.params={biomes: 5}"], 2, "config key 'biomes'"),
    ("audit of a file", lambda t, d: ["audit", str(_write(t / "f.txt", "x"))], 2, "f.txt: no such dataset folder"),
    ("FILM parses not UTF-8", lambda t, d: ["alfred", "film", *_alfred_root(t, 0.0), "--parses",
     str(_write(t / "p.json", b"\xff\xfe"))], 2, "p.json: not valid JSON"),
]  # fmt: skip


@pytest.mark.parametrize(("name", "argv", "status", "names"), BAD_INPUTS, ids=[row[0] for row in BAD_INPUTS])
def test_bad_input_is_one_line_naming_the_file_or_key(
    name: str, argv: Callable, status: int, names: str, demo: Path, tmp_path: Path, capsys
) -> None:
    code, _, err = run_main(argv(tmp_path, demo), capsys)
    assert code == status, err
    line = first_line(err)
    assert names.replace("{tmp}", str(tmp_path)) in line, line
    assert line.startswith(("eqagen: error: ", "eqagen generate: error: ", "eqagen alfred replay: error: ")), line
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err


def test_presets_names_each_and_shows_one(capsys) -> None:
    from eqagen.config import preset_names

    code, out, _ = run_main(["presets"], capsys)
    listed = {line.split()[0] for line in out.splitlines() if line and not line[0].isspace()}
    assert code == 0 and listed == set(preset_names()) and {"demo", "tag-eqa", "pqb-minecraft"} <= listed
    code, out, _ = run_main(["presets", "demo.yaml"], capsys)
    assert code == 0 and "n_episodes" in out


# --- misleading messages, and what replaced them --------------------------------------------------------


def test_a_closed_pipe_ends_quietly_as_other_unix_tools_do() -> None:
    """`eqagen blockworld inspect ... | head` once said "cannot write the output directory: Broken pipe"."""
    world = Path(__file__).parent / "generators" / "blockworld"
    path = next(iter(sorted(world.glob("*.txt"))), None) or _demo_block_list()
    proc = subprocess.Popen([sys.executable, "-m", "eqagen.cli", "blockworld", "inspect", str(path)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)  # fmt: skip
    proc.stdout.close()  # the reader is gone before the first byte
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == cli.EXIT_BROKEN_PIPE and err == ""


def _demo_block_list() -> Path:
    import tempfile

    from eqagen.generators.blockworld.blocklist import write_block_list
    from eqagen.generators.blockworld.embedded import generate_world

    path = Path(tempfile.mkdtemp()) / "plains.txt"
    write_block_list(generate_world("plains", 0), path)
    return path


def test_resplit_with_a_split_file_gives_no_ratio_warning(demo: Path, tmp_path: Path, capsys) -> None:
    import pyarrow.parquet as pq

    scenes = sorted(set(pq.read_table(demo / "episodes", columns=["scene_id"])["scene_id"].to_pylist()))
    mapping = {s: ("test" if i == 0 else "train") for i, s in enumerate(scenes)}  # far from 0.7/0.15/0.15
    split_file = tmp_path / "split.json"
    split_file.write_text(json.dumps(mapping))
    code, out, err = run_main(["resplit", str(demo), "--out", str(tmp_path / "r"), "--split-file", str(split_file),
                               "--no-report"], capsys)  # fmt: skip
    assert code == 0 and "re-split" in out
    assert "warning" not in err and "target" not in err, err


def test_audit_against_openeqa_prints_na_for_what_openeqa_has_not(demo: Path, tmp_path: Path, capsys) -> None:
    items = [
        {"question": "What is on the table?", "answer": "a cup", "category": "object recognition"},
        {"question": "How many chairs are there?", "answer": "two", "category": "attribute recognition"},
    ]
    path = tmp_path / "open-eqa.json"
    path.write_text(json.dumps(items))
    code, out, _ = run_main(["audit", str(demo), "--against", str(path)], capsys)
    failed = [line for line in out.splitlines() if line.startswith("FAILED")]
    assert all(line.startswith("FAILED  criterion ") for line in failed), failed  # the comparison is what counts
    assert code == (1 if failed else 0)
    table = out.split("\n\n", 1)[1]
    rows = {}
    for line in table.splitlines()[1:]:
        key, *values = line.strip().rsplit(None, 2) if not line.strip().endswith(":") else (line.strip(),)
        rows[key] = values
    for key in ("count", "listObjects", "property", "location"):  # query types and filter families
        assert rows[key][-1] == "n/a" and rows[key][0] != "n/a", rows[key]
    for key in ("grounded_share", "blind_baseline"):
        assert rows[key][-1] == "n/a"
    assert rows["object recognition"][-1] == "0.500" and rows["questions"][-1] == "2"


# --- limits ---------------------------------------------------------------------------------------------


def test_workers_are_capped_at_the_cpus_this_process_may_use(capsys) -> None:
    """The machine's own CPU count (this process's affinity mask), not a stand-in."""
    from eqagen.config import load_config

    cpus = len(os.sched_getaffinity(0))
    config = cli.with_usable_workers(load_config("demo", ["runner.workers=4096", "runner.kind=processes"]))
    assert config.runner.workers == cpus
    assert first_line(capsys.readouterr().err) == (
        f"eqagen: note: 4096 workers asked for, but this process may use {cpus} CPUs; using {cpus}"
    )
    remote = load_config("demo", ["runner.workers=64", "runner.kind=dask", "runner.address=tcp://10.0.0.5:8786"])
    assert cli.with_usable_workers(remote).runner.workers == 64, "an existing cluster brings its own workers"
    same = load_config("demo", ["runner.workers=1"])
    assert cli.with_usable_workers(same) is same and capsys.readouterr().err == ""


def test_a_run_that_writes_no_question_fails_with_one_line(tmp_path: Path, capsys) -> None:
    """A 1-episode run wrote 0 questions and exited 0."""
    code, _, err = run_main(["generate", "demo", "--out", str(tmp_path / "one"), "--runner", "inline",
                               "--no-progress", "--set", "generation.n_episodes=1"], capsys)  # fmt: skip
    assert code == cli.EXIT_FAILED, err
    assert err.startswith("eqagen: error: no question survived balancing (") and len(err.splitlines()) == 1
    assert "at least 2 scenes" in err and "fix: generate more episodes" in err
    # raised before the dataset is written: no empty dataset that export or resplit would take, checkpoints kept
    assert not (tmp_path / "one" / "manifest.json").exists() and not list((tmp_path / "one").glob("questions/*"))
    assert list((tmp_path / "one" / ".eqagen" / "batches").rglob("*"))


def test_an_unforeseen_error_is_one_line_and_its_traceback_a_file(monkeypatch, capsys) -> None:
    def broken(args: argparse.Namespace) -> int:
        raise TypeError("unsupported operand")

    monkeypatch.setattr(cli, "run_presets", broken)
    code, _, err = run_main(["presets"], capsys)
    assert code == cli.EXIT_FAILED and len(err.splitlines()) == 1
    match = re.fullmatch(r"eqagen: internal error: TypeError: unsupported operand; .* traceback in (\S+)\n", err)
    assert match, err
    traceback_text = Path(match.group(1)).read_text()
    assert "Traceback" in traceback_text and "broken" in traceback_text
    Path(match.group(1)).unlink()


def test_numpy_is_not_asked_for_a_huge_map(tmp_path: Path) -> None:
    """The header check refuses before numpy allocates what a header states."""
    from eqagen.core import DataFileError
    from eqagen.core.limits import check_npy_size

    path = tmp_path / "m.npy"
    np.save(path, np.zeros((2, 2)))
    check_npy_size(path, "map")
    with pytest.raises(DataFileError, match="more than 3 items"):
        check_npy_size(path, "map", max_items=3)
