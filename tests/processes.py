"""Reading processes from /proc in tests: is one alive, which Prefect servers are running."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """The process exists and is not a zombie."""
    try:
        state = next(x for x in Path(f"/proc/{pid}/status").read_text().splitlines() if x.startswith("State:"))
    except (OSError, StopIteration):
        return False
    return "Z" not in state


def prefect_servers(environ_marker: str) -> list[int]:
    """Live Prefect API servers whose environment contains ``environ_marker`` (a PREFECT_HOME path, a
    variable set only for the run under test)."""
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit():
            continue
        try:
            ours = b"prefect.server.api" in (proc / "cmdline").read_bytes()
            ours = ours and environ_marker.encode() in (proc / "environ").read_bytes()
        except OSError:
            continue
        if ours and alive(int(proc.name)):
            found.append(int(proc.name))
    return found
