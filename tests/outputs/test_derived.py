"""``eqagen resplit``, ``paraphrase`` and ``export`` on real generated datasets: the input verified before
anything is written, nothing written outside ``--out``, and a killed run simply run again.
"""

from __future__ import annotations

import hashlib
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from eqagen.cli import main
from eqagen.flows.pipeline import generate_inline
from eqagen.outputs.dataset import open_dataset
from eqagen.outputs.manifest import read_manifest
from tests.conftest import REPO_ROOT
from tests.outputs.test_folder import edit_manifest, plant, small_config

DAMAGES = ("delete a shard", "add a shard", "edit a row count", "edit a total", "duplicate rows", "damage stats.json",
           "flip a byte")  # fmt: skip
COMMANDS = {
    # --allow-miss: these inputs hold about 160 questions, where 0.05 of validation's unseen share is one
    # balance group; what is tested here is the command's verification, staging and rerun, not the fraction
    "resplit": ["resplit", "{IN}", "--out", "{OUT}", "--seed", "3", "--no-report", "--allow-miss"],
    "paraphrase": ["paraphrase", "{IN}", "--out", "{OUT}", "--offline"],
    "export": ["export", "{IN}", "--format", "jsonl", "--out", "{OUT}"],
}


def command(name: str, in_dir: Path, out: Path) -> list[str]:
    return [a.replace("{IN}", str(in_dir)).replace("{OUT}", str(out)) for a in COMMANDS[name]]


@pytest.fixture(scope="module")
def demo(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("demo") / "out"
    generate_inline(small_config("generation.n_episodes=12", "output.rows_per_shard=15"), out)
    return out


@pytest.fixture
def copy(demo, tmp_path) -> Path:
    target = tmp_path / "in"
    shutil.copytree(demo, target)
    return target


@pytest.mark.parametrize("name", COMMANDS)
@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_input_is_refused_before_anything_is_written(copy, tmp_path, capsys, name, damage) -> None:
    plant(copy, damage)
    out = tmp_path / "o" / "out"
    assert main(command(name, copy, out)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"eqagen: error: {copy}"), err
    assert not (tmp_path / "o").exists(), "nothing written, not even the output's parent"


@pytest.mark.parametrize("name", COMMANDS)
def test_a_manifest_path_out_of_the_folder_reads_and_writes_nothing_there(copy, tmp_path, capsys, name) -> None:
    """The planted manifest names ``episodes/../../victim``: a file beside the input (whose checksum it
    gives, so only the path is wrong) and, seen from the output, a file beside ``--out``."""
    shard = next((copy / "episodes").iterdir())
    shutil.move(shard, tmp_path / "victim")
    edit_manifest(copy, lambda m: [s.update(path="episodes/../../victim") for s in m["shards"]
                                   if s["path"] == shard.relative_to(copy).as_posix()])  # fmt: skip
    (tmp_path / "o").mkdir()
    precious = tmp_path / "o" / "victim"
    precious.write_text("precious")
    assert main(command(name, copy, tmp_path / "o" / "out")) == 2
    err = capsys.readouterr().err
    assert "manifest.json [shards." in err and "leaves the dataset folder" in err
    assert precious.read_text() == "precious" and sorted(p.name for p in (tmp_path / "o").iterdir()) == ["victim"]


def digests(out: Path) -> dict[str, str]:
    files = [p for t in ("questions", "episodes") for p in (out / t).glob("*.parquet")] + [out / "manifest.json"]
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(files)}


def run_killed(args: list[str], at: int | str) -> subprocess.CompletedProcess[str]:
    cmd = [sys.executable, "-m", "tests.outputs.kill_wrapper", str(at), "eqagen", *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False, cwd=REPO_ROOT)


def kill_and_rerun(demo: Path, tmp_path: Path, name: str, at: int | str, reference: dict[str, str]) -> None:
    out = tmp_path / f"{name}-{at}"
    killed = run_killed(command(name, demo, out), at)
    assert killed.returncode == -signal.SIGKILL, (at, killed.stderr[-2000:])
    assert main(command(name, demo, out)) == 0, f"killed at rename {at}: the rerun failed"
    assert digests(out) == reference, f"killed at rename {at}"
    assert not (out / ".eqagen" / "staging").exists()


@pytest.mark.parametrize("name", ["resplit", "paraphrase"])
def test_a_run_killed_halfway_through_its_swap_is_rerun_to_the_bytes_of_an_uninterrupted_one(demo, tmp_path, name):
    """Killed after the first file moved into ``--out``, before the manifest: the folder mixes nothing
    a reader accepts (no manifest), and the rerun completes it."""
    reference_out = tmp_path / "reference"
    assert main(command(name, demo, reference_out)) == 0
    assert read_manifest(reference_out)["derived"][-1]["stage"] == {"resplit": "split"}.get(name, name)
    kill_and_rerun(demo, tmp_path, name, "swap:2", digests(reference_out))


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resplit", "paraphrase"])
def test_a_run_killed_at_any_rename_is_rerun_to_the_same_bytes(demo, tmp_path, name) -> None:
    reference_out = tmp_path / "reference"
    proc = run_killed(command(name, demo, reference_out), 10**6)
    assert proc.returncode == 0, proc.stderr[-2000:]
    n_points = int(proc.stderr.rsplit("renames=", 1)[1].split()[0])
    for at in range(1, n_points + 1):
        kill_and_rerun(demo, tmp_path, name, at, digests(reference_out))


def test_rerunning_the_same_command_redoes_it_and_another_is_refused(demo, tmp_path, capsys) -> None:
    out = tmp_path / "out"
    assert main(command("resplit", demo, out)) == 0
    first = digests(out)
    assert main(command("resplit", demo, out)) == 0 and digests(out) == first
    assert main([*command("resplit", demo, out), "--seed", "4"]) == 2  # another seed
    assert "another config or command" in capsys.readouterr().err and digests(out) == first
    assert main([*command("resplit", demo, out), "--seed", "4", "--overwrite"]) == 0 and digests(out) != first


INSIDE = {  # a command writing into its input folder, and where
    "resplit --out IN/questions/new": ["resplit", "{IN}", "--out", "{IN}/questions/new", "--seed", "3"],
    "paraphrase --out IN/episodes/p": ["paraphrase", "{IN}", "--out", "{IN}/episodes/p", "--offline"],
    "export --out IN/questions/x.jsonl": ["export", "{IN}", "--format", "jsonl", "--out", "{IN}/questions/x.jsonl"],
    "audit --json IN/questions/s.json": ["audit", "{IN}", "--json", "{IN}/questions/s.json"],
    "audit --report IN/r.html": ["audit", "{IN}", "--report", "{IN}/r.html"],
    "resplit --out IN": ["resplit", "{IN}", "--out", "{IN}", "--seed", "3"],
    "score --json IN/s.json": ["score", "{IN}", "p.jsonl", "--json", "{IN}/s.json"],
    "score --report IN/questions/r.html": ["score", "{IN}", "p.jsonl", "--report", "{IN}/questions/r.html"],
    "show --out IN/episodes/q.png": ["show", "{IN}", "q", "--out", "{IN}/episodes/q.png"],
    "baseline --out IN/questions/p.jsonl": [
        "baseline",
        "blind",
        "{IN}",
        "--model",
        "m",
        "--base-url",
        "http://127.0.0.1:9",
        "--out",
        "{IN}/questions/p.jsonl",
    ],
}


@pytest.mark.parametrize("case", INSIDE)
def test_an_output_inside_the_input_folder_is_refused_and_the_input_left_whole(copy, capsys, case) -> None:
    """Regression: each of these exited 0, and afterwards `audit IN`, `read_questions` and
    `pd.read_parquet('IN/questions')` failed on the file or folder written inside IN."""
    before, paths = digests(copy), sorted(copy.rglob("*"))
    args = [a.replace("{IN}", str(copy)) for a in INSIDE[case]]
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "lies inside the dataset folder" in err[0] and "fix: choose a" in err[0], err
    assert digests(copy) == before and sorted(copy.rglob("*")) == paths
    open_dataset(copy)  # every integrity check of the readers still passes


def test_a_summary_json_inside_the_output_folder_is_refused_before_the_run(tmp_path, capsys) -> None:
    out = tmp_path / "out"
    args = ["generate", "demo", "--out", str(out), "--summary-json", str(out / "questions" / "s.json")]
    assert main([*args, "--runner", "inline"]) == 2
    assert "--summary-json lies inside the dataset folder" in capsys.readouterr().err
    assert not out.exists()


@pytest.mark.parametrize("link", [".eqagen", ".eqagen/staging"])
@pytest.mark.parametrize("name", ["resplit", "paraphrase"])
def test_a_linked_state_folder_is_refused_and_its_target_left_alone(demo, tmp_path, capsys, link, name) -> None:
    """Regression: with OUT/.eqagen a link, a command deleted files in its target (exit 0); `--fresh --clean`
    emptied the target's batches/ and prefect/."""
    victim = tmp_path / "victim"
    for rel in ("staging/manifest.json", "batches/b/DONE", "prefect/prefect.db", "notes.txt"):
        (victim / rel).parent.mkdir(parents=True, exist_ok=True)
        (victim / rel).write_text("the user's")
    out = tmp_path / "out"
    (out / link).parent.mkdir(parents=True, exist_ok=True)
    (out / link).symlink_to(victim / "staging" if link.endswith("staging") else victim)
    assert main(command(name, demo, out)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"{out / link}: is a link" in err[0], err
    kept = {p.relative_to(victim).as_posix(): p.read_text() for p in victim.rglob("*") if p.is_file()}
    assert kept == dict.fromkeys(["staging/manifest.json", "batches/b/DONE", "prefect/prefect.db", "notes.txt"],
                                 "the user's")  # fmt: skip
