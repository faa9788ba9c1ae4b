"""A Dask cluster on separate hosts, as far as the network goes: the scheduler and the workers each run in
a network namespace of their own (``ip netns``), joined by a bridge as machines are by a switch, and the
run connects from the host's namespace with ``--address`` only. The output directory is one file system
for all, as a cluster's shared file system is. The shards equal an inline run's, and both workers ran
units.

Needs root and ``ip netns`` (skipped otherwise); not verified here: separate file systems joined by NFS,
and clocks of separate machines (the timeline's spans assume synchronised clocks).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.flows.test_dask import stop, wait_for_workers, worker_command
from tests.test_cli import shard_digests

BIN = Path(sys.executable).parent
SUBNET = "10.231.{}.{}"


def ip(*args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["ip", *args], capture_output=True, text=True, check=check)


def can_make_namespaces() -> bool:
    if os.geteuid() != 0 or not shutil.which("ip"):
        return False
    name = f"eqagen-probe-{uuid.uuid4().hex[:6]}"
    if ip("netns", "add", name, check=False).returncode != 0:
        return False
    ip("netns", "del", name, check=False)
    return True


class Network:
    """A bridge in the host's namespace, and one namespace per 'machine' on it, each with its own address."""

    def __init__(self, tag: str, net: int):
        self.tag, self.net = tag, net
        self.bridge = f"eqb{tag}"
        self.namespaces: list[str] = []

    def __enter__(self) -> Network:
        ip("link", "add", self.bridge, "type", "bridge")
        ip("addr", "add", f"{SUBNET.format(self.net, 254)}/24", "dev", self.bridge)
        ip("link", "set", self.bridge, "up")
        return self

    def machine(self, index: int) -> tuple[str, str]:
        """A namespace joined to the bridge; returns (its name, its address)."""
        name, outside, inside = f"eq{self.tag}m{index}", f"eq{self.tag}h{index}", f"eq{self.tag}n{index}"
        address = SUBNET.format(self.net, index)
        ip("netns", "add", name)
        self.namespaces.append(name)
        ip("link", "add", outside, "type", "veth", "peer", "name", inside)
        ip("link", "set", inside, "netns", name)
        ip("link", "set", outside, "master", self.bridge)
        ip("link", "set", outside, "up")
        ip("-n", name, "addr", "add", f"{address}/24", "dev", inside)
        ip("-n", name, "link", "set", inside, "up")
        ip("-n", name, "link", "set", "lo", "up")
        return name, address

    def __exit__(self, *exc: object) -> None:
        for name in self.namespaces:
            ip("netns", "del", name, check=False)  # its veth ends go with it
        ip("link", "del", self.bridge, check=False)


def start_in(namespace: str, cmd: list[str], log: Path) -> subprocess.Popen[bytes]:
    with open(log, "wb") as err:
        return subprocess.Popen(["ip", "netns", "exec", namespace, *cmd], stdout=subprocess.DEVNULL, stderr=err,
                                start_new_session=True)  # fmt: skip


@pytest.fixture
def namespaced_cluster(tmp_path: Path) -> Iterator[str]:
    """A scheduler in one namespace and two single-threaded workers in another; yields the scheduler address."""
    tag = uuid.uuid4().hex[:4]
    dask = str(BIN / "dask")
    with Network(tag, net=int(tag, 16) % 200 + 20) as network:
        scheduler_ns, scheduler_ip = network.machine(1)
        workers_ns, workers_ip = network.machine(2)
        address = f"tcp://{scheduler_ip}:8786"
        procs = [start_in(scheduler_ns, [dask, "scheduler", "--host", scheduler_ip, "--port", "8786",
                                         "--no-dashboard"], tmp_path / "scheduler.log")]  # fmt: skip
        try:
            for name in ("w1", "w2"):
                cmd = worker_command(address, "--name", name, "--host", workers_ip)
                procs.append(start_in(workers_ns, cmd, tmp_path / f"{name}.log"))
            wait_for_workers(address, 2, timeout=120)
            yield address
        finally:
            stop(procs)


@pytest.mark.slow  # two namespaces, a scheduler, two workers, a Dask run and an inline run of a small demo
@pytest.mark.skipif(not can_make_namespaces(), reason="needs root and `ip netns` for a scheduler and workers apart")
def test_a_cluster_in_other_network_namespaces_gives_the_bytes_of_an_inline_run(namespaced_cluster, tmp_path) -> None:
    pytest.importorskip("distributed")
    from distributed import Client

    small = ["--no-progress", "--set", "generation.n_episodes=12", "--set", "generation.batch_size=3"]
    out, inline = tmp_path / "dask", tmp_path / "inline"
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", "demo", "--out", str(out), "--runner", "dask",
           "--address", namespaced_cluster, *small]  # fmt: skip
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode == 0, proc.stderr[-3000:]
    with Client(namespaced_cluster, timeout=30) as client:
        ran = client.run(lambda: "eqagen.flows.pipeline" in sys.modules)
        hosts = {w.split("://")[1].split(":")[0] for w in client.scheduler_info()["workers"]}
    assert len(ran) == 2 and all(ran.values()), f"both workers ran units: {ran}"
    assert len(hosts) == 1 and hosts != {namespaced_cluster.split("://")[1].split(":")[0]}, hosts
    cmd = [sys.executable, "-m", "eqagen.cli", "generate", "demo", "--out", str(inline), "--runner", "inline", *small]
    assert subprocess.run(cmd, capture_output=True, timeout=600, check=False).returncode == 0
    assert shard_digests(out) == shard_digests(inline) != {}
