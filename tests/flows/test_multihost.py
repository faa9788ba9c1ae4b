"""What a Dask cluster on other machines needs, tested on this one machine.

- The run's Prefect API listens where remote workers can reach it: on the address of the interface that
  routes to the scheduler (here: this machine's own non-loopback address, e.g. eth0), or on the one
  ``runner.api_host`` / ``--api-host`` forces; 127.0.0.1 for a scheduler on loopback.
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

import httpx
import pytest

from eqagen.config import load_config
from eqagen.core import ConfigError, DataFileError
from eqagen.flows.runners import check_shared_directory, token_file, worker_view
from eqagen.flows.server import LocalPrefectServer, api_host, api_url_for, checked_local_address, free_port

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


def runner(*overrides: str):
    return load_config("demo", list(overrides)).runner


def test_loopback_scheduler_and_local_runners_keep_the_api_on_loopback() -> None:
    assert api_host(runner()) == "127.0.0.1"
    assert api_host(runner("runner.kind=processes")) == "127.0.0.1"
    assert api_host(runner("runner.kind=dask")) == "127.0.0.1"  # a local cluster
    for address in ("tcp://127.0.0.1:8786", "tcp://localhost:8786", "127.0.0.2:8786"):
        assert api_host(runner("runner.kind=dask", f"runner.address={address}")) == "127.0.0.1", address


@needs_own_address
def test_remote_scheduler_gets_the_address_of_the_interface_routing_to_it() -> None:
    # The scheduler on this machine's own non-loopback address: the route to it has that source address.
    assert api_host(runner("runner.kind=dask", f"runner.address=tcp://{OWN}:8786")) == OWN
    # A scheduler elsewhere on the network (TEST-NET, unreachable but routable): the default route's source.
    assert api_host(runner("runner.kind=dask", "runner.address=tcp://192.0.2.200:8786")) == OWN


@needs_own_address
def test_api_host_forced_by_config_or_flag() -> None:
    assert api_host(runner("runner.kind=dask", "runner.address=tcp://127.0.0.1:8786", f"runner.api_host={OWN}")) == OWN
    assert api_host(runner(f"runner.api_host={OWN}")) == OWN
    from eqagen.cli import _config_overrides, build_parser

    args = build_parser().parse_args(["generate", "demo", "--out", "x", "--runner", "dask", "--api-host", OWN])
    assert f"runner.api_host={OWN}" in _config_overrides(args)


def test_api_host_must_be_an_address_of_this_machine() -> None:
    for bad in ("0.0.0.0", "::", "203.0.113.9"):  # 203.0.113.0/24 is TEST-NET-3: never a local address
        with pytest.raises(ConfigError, match=r"runner\.api_host"):
            checked_local_address(bad)
        with pytest.raises(ConfigError, match=r"runner\.api_host"):
            api_host(runner(f"runner.api_host={bad}"))
    assert checked_local_address("127.0.0.1") == "127.0.0.1"


def test_an_unroutable_scheduler_is_a_config_error_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"runner\.address"):
        api_host(runner("runner.kind=dask", "runner.address=tcp://no-such-host.invalid:8786"))


def test_api_url_brackets_ipv6() -> None:
    assert api_url_for("10.0.0.4", 4200) == "http://10.0.0.4:4200/api"
    assert api_url_for("fd00::2", 4200) == "http://[fd00::2]:4200/api"


@pytest.mark.slow  # a real Prefect server start (6-30 s here)
@needs_own_address
def test_server_listens_on_the_chosen_address_only(tmp_path: Path) -> None:
    port = free_port(OWN)
    with LocalPrefectServer(tmp_path / "prefect", port, host=OWN) as url:
        assert url == f"http://{OWN}:{port}/api"
        assert httpx.get(f"{url}/health", timeout=10).status_code == 200
        with pytest.raises(httpx.ConnectError):  # bound to that interface, not to every one
            httpx.get(f"http://127.0.0.1:{port}/api/health", timeout=10)


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
    pytest.importorskip("prefect_dask")
    from tests.flows.test_dask import start, stop, wait_for_workers

    shared = tmp_path / "shared"
    shared.mkdir()
    port = free_port()
    address = f"tcp://127.0.0.1:{port}"
    dask = str(BIN / "dask")
    worker = [dask, "worker", address, "--nthreads", "1", "--no-dashboard", "--no-nanny"]
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
def test_cluster_on_a_non_loopback_address_uses_the_api_there_and_gives_local_bytes(tmp_path: Path) -> None:
    """The scheduler and workers listen on this machine's own non-loopback address, as a cluster on other
    machines would: the run's API is served on that address, every worker is pointed at it, none starts a
    server of its own, and the shards equal an inline run's."""
    pytest.importorskip("prefect_dask")
    from tests.flows.test_dask import start, stop, wait_for_workers
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
            cmd = [dask, "worker", address, "--nthreads", "1", "--name", name, "--no-dashboard", "--no-nanny",
                   "--host", OWN]  # fmt: skip
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
    assert len(urls) == 2 and all(u and u.startswith(f"http://{OWN}:") for u in urls.values()), urls
    inline = tmp_path / "inline"
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", "demo", "--out", str(inline), "--runner", "inline", *small]
    assert subprocess.run(cmd, capture_output=True, timeout=600, check=False).returncode == 0
    assert shard_digests(out) == shard_digests(inline) != {}


def test_an_unreachable_scheduler_is_a_config_error_before_anything_runs(tmp_path: Path, monkeypatch) -> None:
    pytest.importorskip("distributed")
    from eqagen.flows import runners

    monkeypatch.setattr(runners, "CONNECT_TIMEOUT_S", 2)  # nothing listens on port 1: no need to wait 30 s
    with pytest.raises(
        ConfigError, match=r"runner\.address.*cannot connect to the Dask scheduler at tcp://127.0.0.1:1"
    ):
        runners.check_cluster_shares("tcp://127.0.0.1:1", tmp_path / "out")
