"""The server's lifetime guards, without starting Prefect: a child dies with its parent."""

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

from eqagen.core import DataFileError
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


@pytest.mark.parametrize("name", ["usr.db?mode=x", "q?x=1", "a%20b", "50%", "sp ace#frag", "x;y&z=1"])
def test_the_database_url_opens_exactly_the_file_at_its_path(tmp_path, name) -> None:
    """Regression: the path went into the URL unescaped. `--out '/data/usr.db?mode=x'` put Prefect's tables in
    the user's `usr.db` beside it; `--out '.../q?x=1'` created `q`, `q-shm` and `q-wal` there; `%20` failed."""
    from sqlalchemy import create_engine, text
    from sqlalchemy.engine import make_url

    victim = tmp_path / "usr.db"
    sqlite3.connect(victim).close()
    before = victim.read_bytes()
    db = tmp_path / name / ".eqagen" / "prefect" / "prefect.db"
    db.parent.mkdir(parents=True)
    url = make_url(server.database_url(db))
    assert url.database == str(db) and not url.query
    engine = create_engine(url.set(drivername="sqlite"))  # the same URL, read by the synchronous driver
    with engine.begin() as connection:
        connection.execute(text("CREATE TABLE flow_run (id INTEGER)"))
    engine.dispose()
    assert db.is_file() and victim.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted({"usr.db", name.split("/")[0]})


def test_a_database_path_too_long_for_sqlite_is_refused_naming_the_bound(tmp_path) -> None:
    """Regression: an --out of about 625 characters exited 1, "Prefect's API server could not be restarted"."""
    db = tmp_path / ("d" * 200) / ("e" * 200) / ("f" * 200) / "prefect.db"
    with pytest.raises(DataFileError, match=r"SQLite opens at most 504 \(SQLITE_MAX_PATHNAME 512"):
        server.database_url(db)


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


# A copy of the template killed halfway: the first half of the file is written, then SIGKILL.
HALF_COPY_THEN_KILL = textwrap.dedent(
    """
    import os, shutil, signal, sys
    from pathlib import Path
    from eqagen.flows import server

    def half_copy(src, dst, *args, **kwargs):
        data = Path(src).read_bytes()
        with open(dst, "wb") as f:
            f.write(data[: len(data) // 2])
            f.flush()
            os.fsync(f.fileno())
        os.kill(os.getpid(), signal.SIGKILL)

    shutil.copyfile = half_copy
    server.template_path = lambda: Path(sys.argv[1])
    server.seed_database(Path(sys.argv[2]))
    """
)


def make_template(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with sqlite3.connect(path) as con:
        con.execute("create table alembic_version (v text)")
        con.executemany("insert into alembic_version values (?)", [(f"row {i}" * 40,) for i in range(2000)])
    return path


def intact(db: Path) -> bool:
    try:
        with sqlite3.connect(db) as con:
            return con.execute("pragma integrity_check").fetchone() == ("ok",) and con.execute(
                "select count(*) from alembic_version"
            ).fetchone() == (2000,)
    except sqlite3.DatabaseError:
        return False


def test_a_kill_during_the_database_copy_leaves_no_partial_database(tmp_path, monkeypatch) -> None:
    template = make_template(tmp_path / "tpl" / "empty.db")
    db = tmp_path / "home" / "prefect.db"
    db.parent.mkdir()
    proc = subprocess.run([sys.executable, "-c", HALF_COPY_THEN_KILL, str(template), str(db)], check=False)
    assert proc.returncode == -signal.SIGKILL
    assert not db.exists(), "no half-copied database under the name the server opens"
    monkeypatch.setattr(server, "template_path", lambda: template)
    server.seed_database(db)  # the rerun copies again
    assert intact(db)


def test_a_full_disk_during_the_database_copy_leaves_no_database_and_no_error(tmp_path, monkeypatch) -> None:
    template = make_template(tmp_path / "tpl" / "empty.db")
    monkeypatch.setattr(server, "template_path", lambda: template)

    def disk_full(src, dst, *args, **kwargs):
        Path(dst).write_bytes(Path(src).read_bytes()[:4096])
        raise OSError(28, "No space left on device", str(dst))

    monkeypatch.setattr(server.shutil, "copyfile", disk_full)
    db = tmp_path / "home" / "prefect.db"
    db.parent.mkdir()
    server.seed_database(db)  # a speed-up only: the server migrates a new database itself
    assert sorted(db.parent.iterdir()) == [], "neither a partial database nor a temporary file"


# A run's process that launches a stand-in server (a sleeping child: no Prefect needed) and ignores SIGINT.
CTRL_C_PARENT = textwrap.dedent(
    """
    import signal, sys, time
    from pathlib import Path
    from eqagen.flows import server
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    server.seed_database = lambda db: None
    server.LocalPrefectServer._command = lambda self: [sys.executable, "-c", "import time; time.sleep(60)"]
    s = server.LocalPrefectServer(Path(sys.argv[1]), port=9)
    s.launch()
    print(s.process.pid, flush=True)
    time.sleep(60)
    """
)


def test_a_terminal_ctrl_c_does_not_reach_the_server(tmp_path) -> None:
    """Regression: Ctrl-C (SIGINT to the terminal's foreground process group) reached Prefect's server too,
    which exited with code 0 and was restarted by the watchdog ("restarting it") in 2 of 4 trials."""
    parent = subprocess.Popen([sys.executable, "-c", CTRL_C_PARENT, str(tmp_path / "home")],
                              stdout=subprocess.PIPE, text=True, start_new_session=True)  # fmt: skip
    try:
        child = int(parent.stdout.readline())
        os.killpg(parent.pid, signal.SIGINT)  # what the terminal does on Ctrl-C
        time.sleep(1.0)
        assert alive(child), "the server got the terminal's SIGINT"
        assert os.getsid(child) != os.getsid(parent.pid)
    finally:
        parent.kill()
        parent.wait()
