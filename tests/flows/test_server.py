"""The server's lifetime guards, without starting Prefect: a child dies with its parent; SIGTERM exits."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from eqagen.flows import server
from tests.processes import alive

PARENT = textwrap.dedent(
    """
    import os, subprocess, sys, time
    from eqagen.flows.server import _die_with_parent
    me = os.getpid()
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)"],
                             preexec_fn=lambda: _die_with_parent(me))
    print(child.pid, flush=True)
    time.sleep(120)
    """
)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux-only")
def test_server_child_dies_when_its_parent_is_killed() -> None:
    parent = subprocess.Popen([sys.executable, "-c", PARENT], stdout=subprocess.PIPE, text=True)
    child = int(parent.stdout.readline())
    assert alive(child)
    parent.send_signal(signal.SIGKILL)
    parent.wait()
    deadline = time.monotonic() + 10
    while alive(child) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child), "the child outlived its SIGKILLed parent"


def test_sigterm_becomes_an_orderly_exit() -> None:
    stopped = []
    with pytest.raises(SystemExit) as done, server.sigterm_as_exit():
        try:
            os.kill(os.getpid(), signal.SIGTERM)
            time.sleep(5)
        finally:
            stopped.append(True)
    assert done.value.code == 128 + signal.SIGTERM and stopped == [True]
    assert signal.getsignal(signal.SIGTERM) is not None


def test_prefect_settings_point_under_the_chosen_home(tmp_path) -> None:
    env = server.prefect_environment(tmp_path / "p")
    home = str((tmp_path / "p").resolve())
    for key in (
        "PREFECT_HOME",
        "PREFECT_PROFILES_PATH",
        "PREFECT_API_DATABASE_CONNECTION_URL",
        "PREFECT_LOCAL_STORAGE_PATH",
    ):
        assert home in env[key], key
    assert env["PREFECT_SERVER_ALLOW_EPHEMERAL_MODE"] == "false"
    assert str(Path.home()) not in home or str(tmp_path) in home


def test_template_database_is_a_consistent_copy(tmp_path, monkeypatch) -> None:
    monkeypatch.setattr(server, "template_path", lambda: tmp_path / "tpl" / "empty.db")
    db = tmp_path / "a" / "prefect.db"
    db.parent.mkdir()
    with sqlite3.connect(db) as con:
        con.execute("create table alembic_version (v text)")
        con.execute("insert into alembic_version values ('head')")
    server.save_template_database(db)
    fresh = tmp_path / "b" / "prefect.db"
    fresh.parent.mkdir()
    server.seed_database(fresh)
    with sqlite3.connect(fresh) as con:
        assert con.execute("select v from alembic_version").fetchall() == [("head",)]
    server.seed_database(db)  # an existing database is never replaced
    assert db.exists()
