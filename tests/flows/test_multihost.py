"""What a Dask cluster on other machines needs, tested on this one machine.

- No worker talks to the run's Prefect API (the flow records the units from the run's own process), so
  the API stays on 127.0.0.1 whatever the cluster's addresses, and workers get no API URL.
- Every worker must see the checkpoint directory: checked before any batch, with an error naming the
  directory and the fix. The end-to-end check starts a real Dask worker in a mount namespace of its own
  whose view of the output's parent is an empty tmpfs -- a worker on another machine without the shared
  file system, as far as paths go (needs root for ``unshare``; skipped otherwise).

Not tested here: workers on other machines (one machine was available).
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import uuid
from pathlib import Path

import pytest

from eqagen.config import RunnerConfig
from eqagen.core import ConfigError, DataFileError
from eqagen.flows.runners import check_shared_directory, token_file, worker_view
from eqagen.flows.server import api_url_for, free_port

BIN = Path(sys.executable).parent


def own_address() -> str | None:
    """This machine's non-loopback IPv4 address (the source of its default route), if it has one."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        try:
            s.connect(("192.0.2.123", 9))  # TEST-NET: routing only, nothing is sent
        except OSError:
            return None
        host = s.getsockname()[0]
    return None if host.startswith("127.") else host


OWN = own_address()
needs_own_address = pytest.mark.skipif(OWN is None, reason="this machine has no non-loopback IPv4 address")


def test_api_url_brackets_ipv6() -> None:
    assert api_url_for("10.0.0.4", 4200) == "http://10.0.0.4:4200/api"
    assert api_url_for("fd00::2", 4200) == "http://[fd00::2]:4200/api"


# --- the shared checkpoint directory ------------------------------------------------------------------


def run_here(fn, *args):
    """Two 'workers' that are this process: they see exactly what the run sees."""
    return {"w1": fn(*args), "w2": fn(*args)}


def test_shared_directory_check_passes_when_every_worker_sees_the_run_files(tmp_path: Path) -> None:
    directory = tmp_path / "out" / ".eqagen" / "batches" / "h"
    assert check_shared_directory(directory, run_here) == 2
    assert directory.is_dir() and list(directory.iterdir()) == [], "the check leaves nothing behind"


def test_worker_view_tells_a_missing_directory_another_file_system_and_a_foreign_token(tmp_path: Path) -> None:
    token = uuid.uuid4().hex
    assert worker_view(str(tmp_path / "absent"), token) == "has no such directory"
    assert "another file system" in worker_view(str(tmp_path), token)  # the path exists, the run's file does not
    token_file(tmp_path, token).write_text("something else")
    assert "another file" in worker_view(str(tmp_path), token)
    token_file(tmp_path, token).write_text(token)
    assert worker_view(str(tmp_path), token) is None


def test_shared_directory_check_names_the_directory_the_worker_and_the_fix(tmp_path: Path) -> None:
    elsewhere = tmp_path / "worker-disk"  # what a worker without the shared file system finds at the path
    elsewhere.mkdir()

    def one_blind_worker(fn, directory, token):
        return {"tcp://10.0.0.7:40000": fn(str(elsewhere), token), "tcp://10.0.0.8:40000": fn(directory, token)}

    directory = tmp_path / "out"
    with pytest.raises(DataFileError) as err:
        check_shared_directory(directory, one_blind_worker)
    text = str(err.value)
    assert str(directory) in text and "tcp://10.0.0.7:40000" in text and "10.0.0.8" not in text
    assert "shared" in text and "fix:" in text and "--out" in text
    assert list(directory.iterdir()) == [], "the token file is removed on failure too"


# --- a real worker that cannot see the output ----------------------------------------------------------


def can_unshare() -> bool:
    if os.geteuid() != 0 or not shutil.which("unshare"):
        return False
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, check=False)
    return probe.returncode == 0


@pytest.mark.slow  # a scheduler, two workers and a Prefect server: about a minute here
@pytest.mark.skipif(not can_unshare(), reason="needs root and unshare(1) for a worker with its own mount namespace")
def test_a_worker_that_cannot_see_the_output_stops_the_run_with_a_clear_error(tmp_path: Path) -> None:
    pytest.importorskip("distributed")
    from tests.flows.test_dask import start, stop, wait_for_workers, worker_command

    shared = tmp_path / "shared"
    shared.mkdir()
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = str(BIN / "dask")
    worker = worker_command(address)
    # The second worker's view of `shared` is an empty tmpfs: the same path, another file system.
    blind = ["unshare", "--mount", "--propagation", "private", "sh", "-c",
             f'mount -t tmpfs none "{shared}" && exec "$@"', "sh", *worker, "--name", "blind"]  # fmt: skip
    procs = [start([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], dict(os.environ),
                   tmp_path / "scheduler.log")]  # fmt: skip
    try:
        procs.append(start([*worker, "--name", "seeing"], dict(os.environ), tmp_path / "w1.log"))
        procs.append(start(blind, dict(os.environ), tmp_path / "w2.log"))
        wait_for_workers(address, 2, timeout=120)
        out = shared / "out"
        cmd = [sys.executable, "-m", "eqagen.cli", "generate", "demo", "--out", str(out), "--no-progress",
               "--runner", "dask", "--address", address, "--set", "generation.n_episodes=4"]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    finally:
        stop(procs)
    assert proc.returncode == 2, proc.stderr[-3000:]
    assert "eqagen: error:" in proc.stderr and str(out) in proc.stderr and "not shared" in proc.stderr
    assert "fix:" in proc.stderr and "Traceback" not in proc.stderr
    assert not list(out.glob(".eqagen/batches/*/batch-*")), "no batch ran"


def worker_api_urls(address: str) -> dict[str, str | None]:
    from distributed import Client

    with Client(address) as client:
        return client.run(lambda: os.environ.get("PREFECT_API_URL"))


@pytest.mark.slow  # a scheduler, two workers, a Dask run and an inline run of a small demo: 1-3 minutes here
@needs_own_address
def test_cluster_on_a_non_loopback_address_needs_no_api_and_gives_local_bytes(tmp_path: Path) -> None:
    """The scheduler and workers listen on this machine's own non-loopback address, as a cluster on other
    machines would: no worker is given the run's API or starts a server of its own, and the shards equal an
    inline run's."""
    pytest.importorskip("distributed")
    from tests.flows.test_dask import start, stop, wait_for_workers, worker_command
    from tests.processes import prefect_servers
    from tests.test_cli import shard_digests

    port, marker = free_port(OWN), f"eqagen-multihost-test-{uuid.uuid4().hex[:8]}"
    address = f"tcp://{OWN}:{port}"
    env = {**os.environ, "EQAGEN_TEST_MARKER": marker}
    dask = str(BIN / "dask")
    procs = [start([dask, "scheduler", "--host", OWN, "--port", str(port), "--no-dashboard"], env,
                   tmp_path / "scheduler.log")]  # fmt: skip
    small = ["--no-progress", "--set", "generation.n_episodes=8", "--set", "generation.batch_size=2"]
    try:
        for name in ("w1", "w2"):
            cmd = worker_command(address, "--name", name, "--host", OWN)
            procs.append(start(cmd, env, tmp_path / f"{name}.log"))
        wait_for_workers(address, 2, timeout=120)
        out = tmp_path / "dask"
        cmd = [sys.executable, "-m", "eqagen.cli", "generate", "demo", "--out", str(out), "--runner", "dask",
               "--address", address, *small]  # fmt: skip
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
        assert proc.returncode == 0, proc.stderr[-3000:]
        urls = worker_api_urls(address)
        assert prefect_servers(marker) == [], "a worker started a Prefect server of its own"
    finally:
        stop(procs)
    assert urls == {w: None for w in urls} and len(urls) == 2, f"a worker was given the run's API: {urls}"
    inline = tmp_path / "inline"
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", "demo", "--out", str(inline), "--runner", "inline", *small]
    assert subprocess.run(cmd, capture_output=True, timeout=600, check=False).returncode == 0
    assert shard_digests(out) == shard_digests(inline) != {}


def test_an_unreachable_scheduler_is_a_config_error_before_anything_runs(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("distributed")
    from eqagen.flows import runners

    monkeypatch.setattr(runners, "CONNECT_TIMEOUT_S", 2)  # nothing listens on port 1: no need to wait 30 s
    runner = RunnerConfig(kind="dask", address="tcp://127.0.0.1:1")
    with pytest.raises(
        ConfigError, match=r"runner\.address.*cannot connect to the Dask scheduler at tcp://127.0.0.1:1"
    ):
        runners.dask_client(runner)
