"""The Dask runner on a real cluster: a scheduler and two workers started here as separate processes on
127.0.0.1 run the demo preset; the shards are byte-identical to a local run, both workers ran units, no
worker started a Prefect server of its own, and nothing is left running afterwards."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from eqagen.core import ConfigError
from eqagen.flows.runners import scheduler_host
from eqagen.flows.server import free_port
from tests.processes import prefect_servers
from tests.test_cli import shard_digests

pytest.importorskip("distributed")
BIN = Path(sys.executable).parent


def start(cmd: list[str], env: dict[str, str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as err:  # the child keeps its own descriptor
        return subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=err, start_new_session=True)


def worker_command(address: str, *extra: str) -> list[str]:
    """A single-threaded ``dask worker`` without a nanny (stopped through its process group)."""
    return [str(BIN / "dask"), "worker", address, "--nthreads", "1", "--no-dashboard", "--no-nanny", *extra]


def stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for p in reversed(procs):  # each in its own session: its whole group goes
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGTERM)
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """``dask scheduler`` and two ``dask worker`` processes; yields (address, marker); killed at the end."""
    logs = tmp_path_factory.mktemp("dask")
    port, marker = free_port(), f"eqagen-dask-test-{uuid.uuid4().hex[:8]}"
    address = f"tcp://127.0.0.1:{port}"
    env = {**os.environ, "EQAGEN_TEST_MARKER": marker}
    dask = str(BIN / "dask")
    procs = [start([dask, "scheduler", "--host", "127.0.0.1", "--port", str(port), "--no-dashboard"], env,
                   logs / "scheduler.log")]  # fmt: skip
    try:
        for name in ("w1", "w2"):
            cmd = worker_command(address, "--name", name)
            procs.append(start(cmd, env, logs / f"{name}.log"))
        wait_for_workers(address, 2, timeout=120)
        yield address, marker
    finally:
        stop(procs)
    assert prefect_servers(marker) == [], "a worker left a Prefect server behind"


def wait_for_workers(address: str, n: int, timeout: float) -> None:
    from distributed import Client

    with Client(address, timeout=timeout) as client:
        client.wait_for_workers(n, timeout=timeout)


def generate(out: Path, *args: str) -> None:
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", "demo", "--out", str(out), "--no-progress", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]


def workers_that_ran_batches(address: str) -> dict[str, bool]:
    """A worker imports the pipeline's batch code only when it runs a batch."""
    from distributed import Client

    with Client(address) as client:
        return client.run(lambda: "eqagen.flows.pipeline" in sys.modules)


@pytest.mark.slow  # about 3 minutes here: a cluster, a Dask run and a local run of the demo
def test_demo_on_a_real_cluster_gives_the_bytes_of_a_local_run(cluster, tmp_path: Path) -> None:
    address, marker = cluster
    generate(tmp_path / "dask", "--runner", "dask", "--address", address)
    generate(tmp_path / "local", "--runner", "inline")
    digests = shard_digests(tmp_path / "dask")
    # every split's shards and the episodes (the demo's train split fills two shards)
    assert {Path(p).name.split("-")[0] for p in digests} == {"train", "validation", "test", "episodes"}, digests
    assert digests == shard_digests(tmp_path / "local"), "Dask and local shards differ"
    ran = workers_that_ran_batches(address)
    assert len(ran) == 2 and all(ran.values()), f"both workers run batches: {ran}"
    assert prefect_servers(marker) == [], "a worker started a Prefect server of its own"


def test_scheduler_addresses_are_checked() -> None:
    assert scheduler_host("tcp://10.0.0.5:8786") == "10.0.0.5"
    assert scheduler_host("127.0.0.1:8786") == "127.0.0.1"
    for bad in ("tcp://:8786", "http//x", "tcp://host", "tcp://host:port"):
        with pytest.raises(ConfigError, match=r"runner\.address"):
            scheduler_host(bad)


def _worker_settings(keys: list[str]) -> dict[str, object]:
    import dask

    return {key: dask.config.get(key) for key in keys}


def test_a_local_clusters_workers_run_with_the_lean_settings() -> None:
    """Each setting is measured in LOCAL_CLUSTER_SETTINGS's comment (a unit took 15% longer on a Dask worker
    than on the processes runner's with Dask's defaults); the workers are forked inside the settings' block,
    so they must hold them, not only the run's process."""
    from eqagen.config import RunnerConfig
    from eqagen.flows.runners import LOCAL_CLUSTER_SETTINGS, dask_client

    client = dask_client(RunnerConfig(kind="dask", workers=2))
    try:
        seen = client.run(_worker_settings, list(LOCAL_CLUSTER_SETTINGS))
    finally:
        cluster = client.cluster
        client.close()
        cluster.close()
    assert len(seen) == 2 and all(settings == LOCAL_CLUSTER_SETTINGS for settings in seen.values()), seen
