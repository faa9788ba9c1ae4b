"""Errors first, once, in real Prefect runs: the cause is the first and only line on stderr, Prefect's
tracebacks are in the run's log (whose path the line names); a Prefect server that dies is started again,
or the run ends at once with one line; SIGTERM stops a run and its capped worker processes.

Every run is the real command in a subprocess, as a user runs it.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from eqagen.cli import EXIT_FAILED, EXIT_TERMINATED, main
from tests.processes import alive, prefect_servers
from tests.test_cli import EQAGEN, SMALL, shard_digests

LINE = re.compile(r"eqagen: error: (?P<cause>.+) \(log: (?P<log>\S+\.log)\)")


def start(out: Path, *args: str, command: list[str] = EQAGEN, env: dict | None = None,
          stdout: bool = False) -> subprocess.Popen[str]:  # fmt: skip
    argv = [*command, "generate", "demo", "--out", str(out), *SMALL, *args]
    return subprocess.Popen(argv, stdout=subprocess.PIPE if stdout else subprocess.DEVNULL, stderr=subprocess.PIPE,
                            text=True, env=env)  # fmt: skip


def wait_for_batches(proc: subprocess.Popen, out: Path, n: int, timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while len(list(out.glob(".eqagen/batches/*/*/DONE"))) < n:
        assert proc.poll() is None and time.monotonic() < deadline, "the run ended or stalled before the batch"
        time.sleep(0.05)


def kill_servers(out: Path) -> list[int]:
    pids = prefect_servers(str(out))
    for pid in pids:
        os.kill(pid, signal.SIGKILL)
    return pids


@pytest.fixture(scope="module")
def reference(tmp_path_factory) -> dict[str, str]:
    """The small demo's shards from an uninterrupted inline run."""
    out = tmp_path_factory.mktemp("reference") / "out"
    assert main(["generate", "demo", "--out", str(out), *SMALL, "--runner", "inline"]) == 0
    return shard_digests(out)


def test_a_failed_run_says_its_cause_first_and_alone_and_names_the_log(tmp_path: Path) -> None:
    """Without EQAGEN_REALDATA the right one-line fix once came after 80 lines of Prefect tracebacks."""
    out = tmp_path / "alfred"
    env = {k: v for k, v in os.environ.items() if k != "EQAGEN_REALDATA"} | {"HOME": str(tmp_path)}
    proc = subprocess.run([*EQAGEN, "generate", "tag-eqa-alfred", "--out", str(out)], capture_output=True,
                          text=True, env=env, timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 2
    lines = proc.stderr.splitlines()
    assert len(lines) == 1, proc.stderr
    match = LINE.fullmatch(lines[0])
    assert match and match["cause"].startswith("$EQAGEN_REALDATA [alfred/json_2.1.0/tests_seen]: not set"), lines[0]
    assert "fix: set EQAGEN_REALDATA" in match["cause"]
    log = Path(match["log"])
    assert log.parent == out / ".eqagen" / "logs" and log.name.startswith("generate-")
    text = log.read_text()
    assert "Traceback (most recent call last)" in text and "DataFileError" in text


def test_a_successful_run_leaves_no_empty_log_and_prints_nothing_but_its_summary(tmp_path: Path) -> None:
    out = tmp_path / "ok"
    proc = subprocess.run([*EQAGEN, "generate", "demo", "--out", str(out), *SMALL], capture_output=True, text=True,
                          timeout=600, check=False)  # fmt: skip
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert "questions" in proc.stdout
    assert all(p.stat().st_size > 0 for p in (out / ".eqagen" / "logs").glob("*.log"))


def test_a_killed_prefect_server_is_restarted_and_the_run_gives_the_same_shards(tmp_path, reference) -> None:
    """A run whose server died once logged errors every 7 s for 231 s and exited 1 with no summary."""
    out = tmp_path / "restarted"
    proc = start(out)
    wait_for_batches(proc, out, 1)
    assert kill_servers(out)
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    assert re.match(r"eqagen: note: Prefect's API server exited with code -9; restarting it \(see .*server\.log\)\n",
                    err), err  # fmt: skip
    assert len(err.splitlines()) == 1
    assert shard_digests(out) == reference
    assert prefect_servers(str(out)) == []


# Runs eqagen's command; a restarted Prefect server exits at once, as one that cannot start would.
NO_RESTART = textwrap.dedent(
    """
    import sys
    from eqagen.flows import server

    launch = server.LocalPrefectServer.launch

    def failing_restart(self):
        if self.process is not None:
            self._command = lambda: [sys.executable, "-c", "raise SystemExit(3)"]
        launch(self)

    server.LocalPrefectServer.launch = failing_restart
    from eqagen.cli import main
    sys.exit(main(sys.argv[1:]))
    """
)


@pytest.mark.slow
def test_a_server_that_cannot_come_back_ends_the_run_at_once_with_one_line(tmp_path, reference) -> None:
    out = tmp_path / "dead"
    proc = start(out, command=[sys.executable, "-c", NO_RESTART])
    wait_for_batches(proc, out, 1)
    assert kill_servers(out)
    killed_at = time.monotonic()
    _, err = proc.communicate(timeout=600)
    assert proc.returncode == EXIT_FAILED and time.monotonic() - killed_at < 30, err
    note, line = err.splitlines()
    assert note.startswith("eqagen: note: Prefect's API server exited with code -9; restarting it")
    match = LINE.fullmatch(line)
    assert match and match["cause"].startswith("Prefect's API server could not be restarted"), line
    assert "finished batches are kept: run the same command again to resume" in match["cause"]
    done = len(list(out.glob(".eqagen/batches/*/*/DONE")))
    summary = tmp_path / "s.json"
    rerun = [*EQAGEN, "generate", "demo", "--out", str(out), *SMALL, "--summary-json", str(summary)]
    finished = subprocess.run(rerun, capture_output=True, text=True, timeout=600, check=False)
    assert finished.returncode == 0, finished.stderr
    assert done >= 1 and json.loads(summary.read_text())["batches"]["resumed"] == done
    assert shard_digests(out) == reference


def children(pid: int) -> list[int]:
    """Live child processes of ``pid`` other than Prefect's API server (the processes runner's workers)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            parent = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[1])
            server = b"prefect.server.api" in (proc / "cmdline").read_bytes()
        except (OSError, IndexError, ValueError):
            continue
        if parent == pid and not server and alive(int(proc.name)):
            found.append(int(proc.name))
    return found


def test_sigterm_stops_a_run_and_its_capped_workers(tmp_path) -> None:
    """`--workers 100000` forked until the kernel killed processes, and SIGTERM did not stop it."""
    from eqagen.core.limits import available_cpus

    out = tmp_path / "term"
    proc = start(out, "--runner", "processes", "--workers", "4096")
    wait_for_batches(proc, out, 1)
    workers = children(proc.pid)
    assert 1 <= len(workers) <= available_cpus(), workers
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_TERMINATED
    lines = err.splitlines()
    cpus = available_cpus()
    assert lines[0] == f"eqagen: note: 4096 workers asked for, but this process may use {cpus} CPUs; using {cpus}"
    assert lines[-1].startswith("eqagen: terminated; run the same command again to resume") and len(lines) == 2
    deadline = time.monotonic() + 10
    while any(alive(pid) for pid in workers) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not [pid for pid in workers if alive(pid)] and prefect_servers(str(out)) == []


# A real run whose SIGTERM handlers are watched: every 5 ms, the one in effect is noted.
WATCHED_HANDLERS = textwrap.dedent(
    """
    import json, signal, sys, threading, time
    from eqagen.cli import main

    seen, done = set(), threading.Event()

    def watch():
        while not done.is_set():
            handler = signal.getsignal(signal.SIGTERM)
            seen.add(getattr(handler, "__module__", "") + "." + getattr(handler, "__qualname__", repr(handler)))
            time.sleep(0.005)

    threading.Thread(target=watch, daemon=True).start()
    status = main(sys.argv[1:])
    done.set()
    print(json.dumps(sorted(seen)), flush=True)
    sys.exit(status)
    """
)


def test_only_the_runs_own_handler_answers_sigterm_while_prefects_flow_runs(tmp_path) -> None:
    """Found by CI: a SIGTERM during Prefect's flow met Prefect's handler, and the run ended 143, or 1 (a
    serializer interrupted), or went on to finish with 0 (the signal swallowed), by where it landed. The flow
    now runs off the main thread, where Prefect installs no handler: the run's own turns SIGTERM into its
    orderly stop wherever the signal lands (test_sigterm_stops_a_run_and_its_capped_workers)."""
    proc = start(tmp_path / "watched", command=[sys.executable, "-c", WATCHED_HANDLERS], stdout=True)
    out, err = proc.communicate(timeout=600)
    assert proc.returncode == 0, err
    seen = json.loads(out.splitlines()[-1])
    ours = "eqagen.flows.signals.SafeSignals.handle"
    assert ours in seen, seen  # the watch ran while the run did
    assert [name for name in seen if name != ours and "Handlers.SIG_DFL" not in name] == []
