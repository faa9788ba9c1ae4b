"""The ``eqagen`` command end to end: real household episodes, the real question engine, Prefect's flow.

The generate runs are subprocesses, as a user runs them; their output is read back with the real
pyarrow, pandas, DuckDB and Hugging Face ``datasets``. A run killed with SIGTERM and then SIGKILL
midway and started again must finish with the same shards as an uninterrupted run, and leave no
Prefect server behind.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import signal
import subprocess
import sys
import time
from collections import defaultdict
from pathlib import Path

import pytest

from eqagen.cli import build_parser, main
from eqagen.outputs.manifest import read_manifest
from tests.processes import prefect_servers

EQAGEN = [sys.executable, "-m", "eqagen.cli"]
# A demo with more, smaller batches so that a run can be interrupted between them.
SMALL = ["--set", "generation.n_episodes=36", "--set", "generation.batch_size=4", "--no-progress"]


def run_eqagen(*args: str, timeout: float = 600, home: Path | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "HOME": str(home)} if home else None
    return subprocess.run([*EQAGEN, *args], capture_output=True, text=True, timeout=timeout, check=False, env=env)


def shard_paths(out: Path) -> list[Path]:
    """The dataset's shards: the Parquet files in questions/ and episodes/ (never the checkpoints in .eqagen)."""
    return sorted(p for table in ("questions", "episodes") for p in (out / table).glob("*.parquet"))


def shard_digests(out: Path) -> dict[str, str]:
    return {p.relative_to(out).as_posix(): hashlib.sha256(p.read_bytes()).hexdigest() for p in shard_paths(out)}


def server_pids(home_under: Path) -> list[int]:
    """Live Prefect server processes whose PREFECT_HOME lies under ``home_under``."""
    return prefect_servers(str(home_under))


@pytest.fixture(scope="module")
def demo_run(tmp_path_factory) -> Path:
    """One uninterrupted Prefect run (the preset's runner: forked worker processes) of the small demo."""
    out = tmp_path_factory.mktemp("demo") / "out"
    home = out.parent / "home"  # a user's home of its own: Prefect must leave it alone
    home.mkdir()
    summary = str(out.parent / "s.json")
    proc = run_eqagen("generate", "demo", "--out", str(out), *SMALL, "--summary-json", summary, home=home)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "questions" in proc.stdout and str(out) in proc.stdout, "the summary says what was made and where"
    (out.parent / "stdout.txt").write_text(proc.stdout)
    return out


def test_version_and_presets(capsys) -> None:
    with pytest.raises(SystemExit) as done:
        main(["--version"])
    assert done.value.code == 0 and capsys.readouterr().out.startswith("eqagen ")
    assert main(["presets"]) == 0
    listing = capsys.readouterr().out
    assert "demo" in listing and "tag-eqa" in listing and "1500 episodes" in listing
    assert main(["presets", "tag-eqa"]) == 0 and "n_episodes: 1500" in capsys.readouterr().out


def test_config_errors_exit_2_naming_the_key(capsys, tmp_path) -> None:
    assert main(["generate", "demo", "--out", str(tmp_path), "--set", "generation.n_epsiodes=3"]) == 2
    err = capsys.readouterr().err
    assert "generation.n_epsiodes" in err and "n_episodes" in err
    assert main(["generate", "nonexistent-preset", "--out", str(tmp_path)]) == 2
    assert "demo" in capsys.readouterr().err
    assert not (tmp_path / "manifest.json").exists()


# Every command of `eqagen`, with the commands under it: a command lost (or added unsaid) fails here.
COMMANDS = {
    "generate": set(),
    "presets": set(),
    "audit": set(),
    "export": set(),
    "resplit": set(),
    "paraphrase": set(),
    "alfred": {"film", "index", "replay"},
    "blockworld": {"inspect"},
    "score": set(),
    "show": set(),
    "baseline": set(),
}


def subcommands(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    """The commands a parser dispatches to, by name (none where it takes no command)."""
    found = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    return dict(found[0].choices) if found else {}


def test_every_command_is_registered_and_its_help_runs(capsys) -> None:
    commands = subcommands(build_parser())
    assert {name: set(subcommands(p)) for name, p in commands.items()} == COMMANDS
    nested = [[name, sub] for name, subs in COMMANDS.items() for sub in sorted(subs)]
    paths = [[], *([name] for name in COMMANDS), *nested]
    for path in paths:
        with pytest.raises(SystemExit) as done:
            main([*path, "--help"])
        usage = capsys.readouterr().out
        assert done.value.code == 0 and usage.startswith(" ".join(["usage: eqagen", *path, ""])), (path, usage[:200])


def test_the_command_line_loads_neither_the_llm_sdk_nor_the_plotting_library() -> None:
    """What a generate run imports before its workers start (the parser, the run): neither the openai SDK
    (0.4 s) nor matplotlib (0.3 s), loaded only by a run with a model and by the unit that draws the plots."""
    probe = (
        "import sys, eqagen.cli, eqagen.flows.run\n"
        "eqagen.cli.build_parser()\n"
        "print(sorted({'openai', 'matplotlib'} & set(sys.modules)))"
    )
    loaded = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "[]"


def test_demo_answers_recompute_from_the_shards(demo_run) -> None:
    from eqagen.outputs.readers import read_episodes, read_questions
    from eqagen.templates.answers import evaluate

    episodes = read_episodes(demo_run)
    records = read_questions(demo_run)
    assert records
    for record in records:
        groups = evaluate(episodes[record.episode_id], record.program)
        if not record.grounded:
            assert groups == record.structured_answer
        else:  # a grounded question keeps the group of the instance it names
            by_predicate = {g.predicate: g for g in groups}
            assert all(by_predicate.get(g.predicate) == g for g in record.structured_answer)


def balance_keys_of(record) -> set[str]:
    """The balance key(s) a record's program words, recomputed from the program alone (never the scene): its
    question text, or for a grounded record its text grounding the anchor, with a placeholder for the
    coordinates (the filter that names the anchor found among the program's)."""
    from eqagen.templates.records import ANCHOR_PLACEHOLDER
    from eqagen.templates.render import program_wording, question_text
    from eqagen.templates.words import coords

    program, wording = record.program, program_wording(record.program)
    if not record.grounded:
        return {question_text(program, wording)}
    anchor = record.structured_answer[0].anchor
    grounded = (question_text(program, wording, {i: anchor}) for i in range(len(program.filters)))
    return {text.replace(coords(anchor), ANCHOR_PLACEHOLDER) for text in grounded}


def test_balance_keys_are_the_programs_text_in_every_scene_and_never_name_one(demo_run) -> None:
    """On a real run's shards: each record's balance key is its program's text recomputed (so the same program
    asked in several scenes, by the ask stage or proposed there, has one key), and no key names a scene or an
    episode (a question naming where it was asked could never be balanced across environments)."""
    from eqagen.outputs.readers import read_questions
    from eqagen.predicates.asking import program_names
    from eqagen.predicates.context import query_key

    records = read_questions(demo_run)
    places = {r.scene_id for r in records} | {r.episode_id for r in records}
    keys, scenes = defaultdict(set), defaultdict(set)
    for r in records:
        assert r.balance_key in balance_keys_of(r), (r.balance_key, r.question)
        assert not [p for p in places if p in r.balance_key], r.balance_key
        # the program as any episode can be asked it (moments by their events' names, not one episode's indices)
        program = (query_key(r.program.query), frozenset(program_names(r.program)), r.grounded)
        keys[program].add(r.balance_key)
        scenes[program].add(r.scene_id)
    assert all(len(k) == 1 for k in keys.values()), [k for k in keys.values() if len(k) > 1][:3]
    in_several = [p for p, s in scenes.items() if len(s) >= 2]
    # ungrounded and grounded questions alike (balancing keeps no question whose key only one scene has, so a
    # key naming its scene would leave none of its kind)
    assert len(in_several) >= 20 and {p[2] for p in in_several} == {False, True}, len(in_several)


def test_inline_runner_gives_the_same_bytes_as_prefect(demo_run, tmp_path) -> None:
    out = tmp_path / "inline"
    assert main(["generate", "demo", "--out", str(out), *SMALL, "--runner", "inline"]) == 0
    assert shard_digests(out) == shard_digests(demo_run)
    assert (out / "manifest.json").read_text() != "" and read_manifest(out)["shards"] == read_manifest(demo_run)[
        "shards"
    ]


@pytest.mark.parametrize("runner", ["dask", pytest.param("local", marks=pytest.mark.slow)])
def test_every_runner_gives_the_bytes_of_the_processes_runner(demo_run, tmp_path, runner) -> None:
    pytest.importorskip("distributed") if runner == "dask" else None
    summary = tmp_path / "s.json"
    proc = run_eqagen("generate", "demo", "--out", str(tmp_path / "p"), *SMALL, "--runner", runner,
                      "--summary-json", str(summary))  # fmt: skip
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert shard_digests(tmp_path / "p") == shard_digests(demo_run)
    units = {stage for stage, _, _, worker in json.loads(summary.read_text())["timeline"]["spans"] if worker != "main"}
    assert "run_batch" in units, f"the batches ran as units of the {runner} runner's workers: {units}"


def _start_and_interrupt(out: Path, sig: int, after_batches: int) -> tuple[int, int]:
    """Start a run, send ``sig`` once ``after_batches`` batches are checkpointed; (exit code, batches done)."""
    proc = subprocess.Popen([*EQAGEN, "generate", "demo", "--out", str(out), *SMALL], stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, text=True)  # fmt: skip
    deadline = time.monotonic() + 240
    while time.monotonic() < deadline and proc.poll() is None:
        if len(list(out.glob(".eqagen/batches/*/*/DONE"))) >= after_batches:
            proc.send_signal(sig)
            break
        time.sleep(0.02)
    code = proc.wait(timeout=60)
    return code, len(list(out.glob(".eqagen/batches/*/*/DONE")))


def _assert_no_server_left(out: Path) -> None:
    deadline = time.monotonic() + 10
    while server_pids(out) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert server_pids(out) == [], "the Prefect server outlived its run"


@pytest.mark.slow  # kills and resumes whole Prefect runs: about 17 s (test_crash_safety covers SIGKILL and rerun)
def test_killed_runs_resume_to_the_same_shards_and_leave_no_server(demo_run, tmp_path) -> None:
    out = tmp_path / "killed"
    code, done = _start_and_interrupt(out, signal.SIGTERM, after_batches=1)
    assert code == 128 + signal.SIGTERM and 1 <= done < 9, (code, done)
    _assert_no_server_left(out)
    code, done_after_kill = _start_and_interrupt(out, signal.SIGKILL, after_batches=done + 2)
    assert code == -signal.SIGKILL and done_after_kill < 9, "killed before the end"
    _assert_no_server_left(out)
    assert not (out / "manifest.json").exists()
    assert not shard_paths(out), "no shard written yet"
    proc = run_eqagen("generate", "demo", "--out", str(out), *SMALL, "--summary-json", str(tmp_path / "s.json"))
    assert proc.returncode == 0, proc.stderr[-3000:]
    summary = json.loads((tmp_path / "s.json").read_text())
    assert summary["batches"]["resumed"] == done_after_kill >= 3
    assert shard_digests(out) == shard_digests(demo_run)
    _assert_no_server_left(out)


def test_prefect_state_stays_under_the_output(demo_run) -> None:
    prefect_home = demo_run / ".eqagen" / "prefect"
    assert (prefect_home / "prefect.db").exists() and (prefect_home / "server.log").exists()
    user_home = demo_run.parent / "home"
    assert not (user_home / ".prefect").exists(), "nothing of Prefect's in the user's home"
    summary = json.loads((demo_run.parent / "s.json").read_text())
    assert summary["runner"] == "processes" and summary["server_seconds"] > 0
    assert summary["counts"]["episodes"] == 36


def test_audit_of_the_demo_recomputes_stats_json_and_passes_every_check(demo_run, tmp_path) -> None:
    """Every count the run wrote into stats.json equals the count recomputed from its shards."""
    from eqagen.commands.audit_run import recomputed_stats
    from eqagen.outputs.dataset import load_dataset_folder

    recorded = json.loads((demo_run / "stats.json").read_text())
    assert recorded["dataset"] == json.loads(json.dumps(recomputed_stats(load_dataset_folder(demo_run))))
    report = tmp_path / "audit.json"
    proc = run_eqagen("audit", str(demo_run), "--json", str(report))
    checks = json.loads(report.read_text())["checks"]
    # a 36-episode run is too small for the method's criteria (the mix needs a pool to choose from): every
    # other check holds, and the exit status says whether a criterion missed
    folder_checks = [c for c in checks if not c["name"].startswith("criterion ")]
    assert folder_checks and all(c["ok"] for c in folder_checks), proc.stdout
    missed = [c for c in checks if c["name"].startswith("criterion ") and not c["ok"]]
    assert proc.returncode == (1 if missed else 0), proc.stdout + proc.stderr
    assert recorded["funnel"]["split"]["out"] == sum(recorded["dataset"]["questions"]["per_split"].values())


def test_audit_rules_reports_each_validity_rule_as_the_checker_counts_it(demo_run, tmp_path) -> None:
    """``eqagen audit --rules`` adds one check per validity rule, failing exactly where the checker of
    ``benchmarks/check_validity.py`` counts violations, and exits 1 when any fails (or a method criterion
    is missed: the rules are judged either way)."""
    from eqagen.commands.validity_audit import REASONS, check_output

    report = tmp_path / "audit.json"
    proc = run_eqagen("audit", str(demo_run), "--rules", "--json", str(report))
    counts = check_output(demo_run).counts("reason")
    checks = {c["name"]: c for c in json.loads(report.read_text())["checks"]}
    for reason in REASONS:
        check = checks[f"validity: {reason}"]
        assert check["ok"] == ((reason,) not in counts), (reason, check)
        assert check["ok"] or check["detail"].startswith(f"{counts[(reason,)]} violations")
    missed = [name for name, c in checks.items() if name.startswith("criterion ") and not c["ok"]]
    assert proc.returncode == (1 if counts or missed else 0), proc.stdout + proc.stderr


def test_demo_card_front_matter_names_every_split_and_column(demo_run) -> None:
    import yaml

    text = (demo_run / "README.md").read_text()
    front = yaml.safe_load(text.split("---\n")[1])
    questions = next(c for c in front["configs"] if c["config_name"] == "questions")
    assert {d["split"] for d in questions["data_files"]} == {"train", "validation", "test"}
    features = next(i for i in front["dataset_info"] if i["config_name"] == "questions")["features"]
    from eqagen.outputs.schemas import QUESTIONS_SCHEMA

    assert [f["name"] for f in features] == QUESTIONS_SCHEMA.names


def test_demo_card_passes_the_hub_card_checks_and_loads_by_split(demo_run, tmp_path) -> None:
    """huggingface_hub's DatasetCard loader, the Hub's value lists that ``datasets`` ships, the configs and
    dataset_info parsed as ``datasets`` parses them, and ``load_dataset`` by split name."""
    import datasets
    from datasets.info import DatasetInfosDict
    from datasets.utils.metadata import MetadataConfigs
    from huggingface_hub import DatasetCard

    from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA

    card = DatasetCard.load(demo_run / "README.md")
    data, rows = card.data, json.loads((demo_run / "manifest.json").read_text())["rows"]
    lists = Path(datasets.utils.__file__).parent / "resources"
    sizes = json.loads((lists / "size_categories.json").read_text())
    creators = json.loads((lists / "creators.json").read_text())
    assert data.license == "mit" and data.language == ["en"] and "en" in (lists / "languages.json").read_text()
    assert data.size_categories == ["1K<n<10K"] and set(data.size_categories) <= set(sizes)
    assert data.annotations_creators == ["machine-generated"] and set(data.annotations_creators) <= set(
        creators["annotations"]
    )
    assert set(data.language_creators) <= set(creators["language"])
    assert data.multilinguality in json.loads((lists / "multilingualities.json").read_text())
    assert data.pretty_name and data.source_datasets == ["original"] and data.task_categories == ["question-answering"]
    configs = MetadataConfigs.from_dataset_card_data(data)
    assert configs.get_default_config_name() == "questions"
    infos = DatasetInfosDict.from_dataset_card_data(data)
    assert set(infos) == {"questions", "episodes"}
    validation = datasets.load_dataset(str(demo_run), split="validation", cache_dir=str(tmp_path / "hf"))
    assert validation.num_rows == rows["questions"]["validation"] and set(validation["split"]) == {"validation"}
    assert validation.features == infos["questions"].features  # what the card declares is what is read
    episodes = datasets.load_dataset(str(demo_run), "episodes", split="full", cache_dir=str(tmp_path / "hf"))
    assert episodes.num_rows == rows["episodes"] and episodes.features == infos["episodes"].features
    everything = datasets.load_dataset(str(demo_run), cache_dir=str(tmp_path / "hf"))
    assert {s: d.num_rows for s, d in everything.items()} == rows["questions"]
    # the body: every column described, every criterion with its verdict, the command that made it
    for name in [*QUESTIONS_SCHEMA.names, *EPISODES_SCHEMA.names]:
        assert re.search(rf"^\| `{name}` \| [^|]+ \| \w", card.text, re.MULTILINE), name
    for name, c in json.loads((demo_run / "stats.json").read_text())["dataset"]["criteria"].items():
        assert f"| {name} | {'passed' if c['ok'] else 'MISSED'} |" in card.text
    assert (
        "eqagen generate demo --out OUT --seed 0 --set 'generation.batch_size=4' --set 'generation.n_episodes=36'"
        in card.text
    )
    assert "## Limitations" in card.text and "## Citation" in card.text and "No real data was used" in card.text


def test_demo_exports_to_openeqa_and_jsonl(demo_run, tmp_path) -> None:
    from eqagen.core import OPENEQA_CATEGORIES

    oe, test_rows = tmp_path / "oe.json", tmp_path / "t.jsonl"
    proc = run_eqagen("export", str(demo_run), "--format", "openeqa", "--out", str(oe))
    assert proc.returncode == 0 and "split test" in proc.stderr  # a benchmark's file is its test split
    items = json.loads(oe.read_text())
    n = json.loads((demo_run / "stats.json").read_text())["dataset"]["questions"]["per_split"]["test"]
    assert len(items) == n and {i["category"] for i in items} <= set(OPENEQA_CATEGORIES)
    proc = run_eqagen("export", str(demo_run), "--format", "jsonl", "--split", "test", "--out", str(test_rows))
    assert proc.returncode == 0
    assert {json.loads(line)["split"] for line in test_rows.read_text().splitlines()} == {"test"}


def test_export_never_replaces_a_file_unasked(demo_run, tmp_path) -> None:
    """A file already at --out is kept (exit 2, one line naming it and the fix) unless --overwrite."""
    out = tmp_path / "notes.txt"
    out.write_text("mine\n")
    proc = run_eqagen("export", str(demo_run), "--format", "jsonl", "--out", str(out))
    assert proc.returncode == 2 and out.read_text() == "mine\n"
    assert str(out) in proc.stderr and "--overwrite" in proc.stderr
    proc = run_eqagen("export", str(demo_run), "--format", "jsonl", "--out", str(out), "--overwrite")
    assert proc.returncode == 0 and out.read_text() != "mine\n"


def test_the_summary_names_the_criteria_the_audit_finds_missed(demo_run, tmp_path) -> None:
    """A dataset that is no benchmark by the method's rules is said to be so when it is made, not only when
    audited: the summary names the criteria that ``eqagen audit`` finds missed (a 36-episode run misses some)."""
    report = tmp_path / "audit.json"
    run_eqagen("audit", str(demo_run), "--json", str(report))
    checks = json.loads(report.read_text())["checks"]
    missed = [
        c["name"].removeprefix("criterion ") for c in checks if c["name"].startswith("criterion ") and not c["ok"]
    ]
    counts = json.loads((demo_run.parent / "s.json").read_text())["counts"]
    assert missed and counts["criteria_missed"] == missed
    printed = " ".join((demo_run.parent / "stdout.txt").read_text().split())
    assert f"method criteria missed: {', '.join(missed)}" in printed


def test_a_real_run_holds_half_of_val_and_test_out_of_train_and_balances_on_content(demo_run, tmp_path) -> None:
    """What the pipeline guarantees by construction, recomputed by ``eqagen audit`` from the shards of a real
    (small) run of the question engine: half of val and of test from scenes no train question uses, and
    every balance group with at least two equally frequent answer contents."""
    report = tmp_path / "audit.json"
    run_eqagen("audit", str(demo_run), "--json", str(report))
    checks = {c["name"]: c for c in json.loads(report.read_text())["checks"]}
    assert checks["criterion unseen_share"]["ok"], checks["criterion unseen_share"]["detail"]
    assert checks["criterion content_balance"]["ok"], checks["criterion content_balance"]["detail"]
