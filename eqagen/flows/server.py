"""Prefect's local API server, started and stopped by the run itself, never left behind.

Prefect 3 runs a flow against an API. With none configured it starts a temporary server subprocess
of its own, but that process outlives a parent killed by SIGKILL, and its settings and database go
to the user's ``~/.prefect``. So the run starts the same server (uvicorn with Prefect's app factory)
itself, with:

- ``PREFECT_HOME``, the SQLite database, profiles and logs under a home the caller picks (the output
  directory's ``.eqagen/prefect``), never the user's;
- ``PR_SET_PDEATHSIG`` (Linux): the kernel kills the server the moment the run's process dies,
  however it dies (SIGKILL included);
- the run's SIGTERM and Ctrl-C handling (:mod:`eqagen.flows.signals`): an orderly exit through ``stop``;
- a watchdog thread: a server that dies while the run needs it (killed, out of memory) is started again
  on the same port and database, with a note, before Prefect's client has given up retrying (about a
  minute); after :data:`MAX_RESTARTS` restarts, or when one fails, the run ends at once with one line
  (exit status 1) instead of minutes of retries against a dead API. Finished batches are kept.

It listens on 127.0.0.1: only the run's own process talks to it (no worker does, on any runner).

:func:`prefect_environment` must be applied before ``prefect`` is first imported: Prefect reads its
settings from the environment at import time.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.util
import os
import shutil
import signal
import socket
import sqlite3
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from urllib.parse import quote, urlparse

from eqagen.core import ConfigError, DataFileError
from eqagen.outputs.atomic import atomic_path

PR_SET_PDEATHSIG = 1
LOOPBACK = "127.0.0.1"
STARTUP_TIMEOUT_S = 180.0
WATCH_INTERVAL_S = 0.5  # how often the watchdog looks at the server process
# Restarts of a server that died during one run. Prefect's client retries a failed request for about a
# minute (5 retries, 2 to 32 s apart), longer than a restart takes here (5-30 s), so the run goes on.
MAX_RESTARTS = 2
EXIT_FAILED = 1  # the command's exit status when the server cannot be brought back (eqagen.cli)


def api_url_for(host: str, port: int) -> str:
    """The API's URL on ``host`` (an IPv6 address goes in brackets)."""
    return f"http://[{host}]:{port}/api" if ":" in host else f"http://{host}:{port}/api"


def prefect_environment(home: Path, port: int | None = None, host: str = LOOPBACK) -> dict[str, str]:
    """Settings for both the run and its server: everything under ``home``, nothing sent anywhere.

    With ``port``, ``PREFECT_API_URL`` points at the server to come. It must be in the environment
    before Prefect is imported: Prefect's events worker, started lazily in whatever settings context
    is current, spawns a hidden server of its own (ignoring the ephemeral-mode switch) whenever it
    finds no API URL, e.g. at interpreter exit.
    """
    home = Path(home).resolve()
    api = {"PREFECT_API_URL": api_url_for(host, port)} if port else {}
    return {
        **api,
        "PREFECT_HOME": str(home),
        "PREFECT_PROFILES_PATH": str(home / "profiles.toml"),
        "PREFECT_API_DATABASE_CONNECTION_URL": database_url(home / "prefect.db"),
        "PREFECT_LOCAL_STORAGE_PATH": str(home / "storage"),
        "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
        "PREFECT_UI_ENABLED": "false",
        "PREFECT_LOGGING_LEVEL": "WARNING",
        "PREFECT_LOGGING_TO_API_ENABLED": "false",
        "PREFECT_RESULTS_PERSIST_BY_DEFAULT": "false",
        "PREFECT_SERVER_ALLOW_EPHEMERAL_MODE": "false",  # only the server started here, never a hidden one
        # Registering Prefect's block types (notifications, storage: none of which a run uses) took half a second
        # of the server's start here: 3.7-3.9 s of one core to its first answer with it, 3.3-3.4 s without.
        "PREFECT_SERVER_REGISTER_BLOCKS_ON_START": "false",
    }


SQLITE_MAX_PATH = 512  # bytes: SQLite's longest file name (SQLITE_MAX_PATHNAME); it cannot open a longer one
_SQLITE_SUFFIX = "-journal"  # the longest name SQLite derives from the database's (also -wal, -shm)


def database_url(db: Path) -> str:
    """SQLAlchemy's URL of the SQLite file ``db``, its path percent-escaped: SQLAlchemy reads a ``?`` in the
    path as the start of a query and decodes ``%`` (``--out '/data/usr.db?mode=x'`` put Prefect's tables in the
    user's ``usr.db``). A path SQLite cannot open is bad input, said before the server starts."""
    path = str(db)
    if len((path + _SQLITE_SUFFIX).encode()) > SQLITE_MAX_PATH:
        raise DataFileError(
            db, None, f"Prefect's database path is {len(path.encode())} bytes; SQLite opens at most "
            f"{SQLITE_MAX_PATH - len(_SQLITE_SUFFIX)} (SQLITE_MAX_PATHNAME {SQLITE_MAX_PATH}, less '{_SQLITE_SUFFIX}')",
            "choose a shorter --out, or --runner inline (no Prefect database)",
        )  # fmt: skip
    return "sqlite+aiosqlite:///" + quote(path, safe="/")


def apply_prefect_environment(home: Path, port: int | None = None, host: str = LOOPBACK) -> None:
    Path(home).mkdir(parents=True, exist_ok=True)
    os.environ.update(prefect_environment(home, port, host))


# --- where the API listens ------------------------------------------------------------------------


def scheduler_host(address: str) -> str:
    """The host of a Dask scheduler address such as ``tcp://10.0.0.5:8786`` (a ConfigError if malformed)."""
    parsed = urlparse(address if "://" in address else f"tcp://{address}")
    try:
        port = parsed.port
    except ValueError:
        port = None
    if parsed.scheme not in ("tcp", "tls", "ucx", "inproc") or not parsed.hostname or port is None:
        raise ConfigError("runner.address", f"'{address}' is not a Dask scheduler address", "tcp://HOST:PORT")
    return parsed.hostname


def _die_with_parent(parent_pid: int) -> None:
    """Runs in the child before exec: ask the kernel for SIGKILL when the parent dies."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    if os.getppid() != parent_pid:  # the parent died before prctl took effect
        os._exit(1)


def template_path() -> Path:
    """A freshly migrated, empty Prefect database kept in the temporary directory, per Prefect version.

    Migrating a new SQLite database takes most of a cold server start (10-20 s here); a new output
    directory starts from a copy of this one instead. It holds no run data: it is copied right after
    the server has created it, before any flow ran.
    """
    version = metadata.version("prefect")  # not `import prefect`: the run forks its workers before that import
    return Path(tempfile.gettempdir()) / f"eqagen-prefect-{version}-uid{os.getuid()}" / "empty.db"


def seed_database(db: Path) -> None:
    """A new output's database starts as a copy of the template, made atomically (temporary name, fsync,
    rename): a kill or a full disk during the copy leaves no partial ``prefect.db`` that would break every
    later run. A failed copy is not an error: the server then migrates a new database itself."""
    template = template_path()
    if db.exists() or not template.exists():
        return
    with contextlib.suppress(OSError), atomic_path(db) as tmp:
        shutil.copyfile(template, tmp)


def save_template_database(db: Path) -> None:
    """Snapshot a just-migrated database (SQLite's backup API: consistent while the server has it open).
    Only a speed-up for later runs: a full disk or any SQLite error leaves no template and no error."""
    template = template_path()
    if template.exists() or not db.exists():
        return
    template.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    with (  # the connections close (in reverse order) before the copy is fsynced and renamed
        contextlib.suppress(OSError, sqlite3.Error),
        atomic_path(template) as tmp,
        contextlib.closing(sqlite3.connect(db)) as src,
        contextlib.closing(sqlite3.connect(tmp)) as dst,
    ):
        src.backup(dst)


def drain_prefect_workers(timeout: float = 5.0) -> None:
    """Let Prefect's background event and log workers send what they hold while the server still runs."""
    if "prefect" not in sys.modules:
        return
    with contextlib.suppress(Exception):
        from prefect.events.worker import EventsWorker

        EventsWorker.drain_all(timeout=timeout)
    with contextlib.suppress(Exception):
        from prefect.logging.handlers import APILogWorker

        APILogWorker.drain_all(timeout=timeout)


def free_port(host: str = LOOPBACK) -> int:
    """A port free on ``host`` now (an OSError if this machine has no such address)."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    with contextlib.closing(socket.socket(family, socket.SOCK_STREAM)) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def _note_on_stderr(text: str) -> None:
    print(f"eqagen: note: {text}", file=sys.stderr, flush=True)


def _error_on_stderr(text: str) -> None:
    print(f"eqagen: error: {text}", file=sys.stderr, flush=True)


class ServerExited(RuntimeError):
    """The server's process exited (killed, or could not start)."""

    def __init__(self, returncode: int, log_path: Path):
        super().__init__(f"Prefect's server exited with code {returncode}; see {log_path}")
        self.returncode = returncode


class LocalPrefectServer:
    """``with LocalPrefectServer(home) as api_url:`` runs Prefect's API server for the block's duration,
    listening on ``host`` only (127.0.0.1 unless remote workers need another address). ``notify`` tells
    the user of a restart, ``fail`` says why the run ends when the server cannot be brought back (:meth:`watch`)."""

    def __init__(
        self,
        home: Path,
        port: int | None = None,
        log_path: Path | None = None,
        host: str = LOOPBACK,
        notify: Callable[[str], None] | None = None,
        fail: Callable[[str], None] | None = None,
    ):
        self.home = Path(home)
        self.host = host
        self.log_path = log_path or self.home / "server.log"
        self.process: subprocess.Popen[bytes] | None = None
        self.port = port or 0
        self.startup_seconds = 0.0
        self.restarts = 0
        self.notify = notify or _note_on_stderr
        self.fail = fail or _error_on_stderr
        self._launched_at = 0.0
        self._stopping = threading.Event()
        self._lock = threading.Lock()  # the watchdog's restart against stop()
        self._watcher: threading.Thread | None = None

    @property
    def api_url(self) -> str:
        return api_url_for(self.host, self.port)

    def _command(self) -> list[str]:
        spec = importlib.util.find_spec("prefect")  # where it is, without importing it (the run does that later)
        site = Path(spec.origin).parent.parent if spec and spec.origin else Path(sys.prefix)
        return [
            sys.executable, "-m", "uvicorn", "--app-dir", str(site),
            "--factory", "prefect.server.api.server:create_app", "--host", self.host,
            "--port", str(self.port), "--log-level", "error", "--lifespan", "on",
        ]  # fmt: skip

    def start(self) -> str:
        """Launch (if not yet launched), wait until the API answers and start the watchdog; returns its URL. A
        server that dies while starting (the run's work goes on meanwhile) is restarted as the watchdog would."""
        if self.process is None:
            self.launch()
        try:
            self._wait_healthy()
        except ServerExited as exited:
            self._restart(exited.returncode)
        except RuntimeError:
            self.stop()
            raise
        self.startup_seconds = time.perf_counter() - self._launched_at
        save_template_database(self.home / "prefect.db")
        self.watch()
        return self.api_url

    def watch(self) -> None:
        """Start the watchdog thread (once): it restarts a server that dies before :meth:`stop`."""
        if self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, name="eqagen-server-watchdog", daemon=True)
            self._watcher.start()

    def _watch(self) -> None:
        while not self._stopping.wait(WATCH_INTERVAL_S):
            proc = self.process
            if proc is None or proc.poll() is None:
                continue
            self._restart(proc.returncode)

    def _restart(self, returncode: int) -> None:
        """Start a server that exited with ``returncode`` again, with a note, and wait until it answers; give up
        (:meth:`_give_up`) after :data:`MAX_RESTARTS` restarts or when the restarted one fails too."""
        if self.restarts >= MAX_RESTARTS:
            self._give_up(f"Prefect's API server exited with code {returncode} after {self.restarts} restarts")
            return
        self.restarts += 1
        self.notify(f"Prefect's API server exited with code {returncode}; restarting it (see {self.log_path})")
        try:
            with self._lock:
                if self._stopping.is_set():
                    return
                self.launch()
            self._wait_healthy(unless=self._stopping)
        except (RuntimeError, OSError) as err:
            self._give_up(f"Prefect's API server could not be restarted ({err})")

    def _give_up(self, problem: str) -> None:
        """The run cannot go on without its API: say so and end the process now. Prefect would otherwise retry
        every request for about a minute, then retry reporting the failure; finished batches are kept, the
        pool's workers die with the process (PR_SET_PDEATHSIG) and a Dask cluster's workers see it go."""
        if self._stopping.is_set():
            return
        self.fail(f"{problem}; finished batches are kept: run the same command again to resume")
        os._exit(EXIT_FAILED)

    def launch(self) -> None:
        """Start the server process without waiting, so the caller can import and plan meanwhile."""
        self._launched_at = time.perf_counter()
        self.home.mkdir(parents=True, exist_ok=True)
        seed_database(self.home / "prefect.db")
        self.port = self.port or free_port(self.host)
        env = {**os.environ, **prefect_environment(self.home, self.port, self.host), "PREFECT__SERVER_EPHEMERAL": "1"}
        parent = os.getpid()
        # A session of its own: a terminal's Ctrl-C goes to the foreground process group, and reached the
        # server too, which exited (code 0) and was restarted by the watchdog while the run stopped. The run
        # stops it itself (stop), and it dies with the run (PR_SET_PDEATHSIG).
        with open(self.log_path, "ab") as log:
            self.process = subprocess.Popen(
                self._command(), env=env, stdout=log, stderr=log, stdin=subprocess.DEVNULL,
                preexec_fn=lambda: _die_with_parent(parent), start_new_session=True,
            )  # fmt: skip

    def _wait_healthy(self, unless: threading.Event | None = None) -> None:
        """Return once the API answers; RuntimeError if the server exits, does not answer in time, or
        ``unless`` is set meanwhile (the run is stopping)."""
        import httpx

        deadline = time.monotonic() + STARTUP_TIMEOUT_S
        while time.monotonic() < deadline:
            process = self.process
            if process is None or (unless is not None and unless.is_set()):
                raise RuntimeError("the run stopped while Prefect's server was starting")
            if process.poll() is not None:
                raise ServerExited(process.returncode, self.log_path)
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(f"{self.api_url}/health", timeout=2.0).status_code == 200:
                    return
            time.sleep(0.1)
        raise RuntimeError(f"Prefect's server did not answer within {STARTUP_TIMEOUT_S:.0f} s; see {self.log_path}")

    def stop(self) -> None:
        drain_prefect_workers()  # while the server still runs (a restarted one dies with the watchdog's thread)
        self._stopping.set()
        watcher = self._watcher
        if watcher is not None and watcher is not threading.current_thread():
            watcher.join(timeout=STARTUP_TIMEOUT_S)
        with self._lock:
            proc, self.process = self.process, None
        if proc is None or proc.poll() is not None:
            return
        # Asked, not killed: its services write the task runs' states from the events the client has sent,
        # after the client is done (killed, the last batches' task runs stayed unrecorded; test_pool checks).
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()

    def __enter__(self) -> str:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()
