"""The persistent response cache: one sqlite file, one row per paid-for response.

Keyed by a hash of the endpoint, the model, the messages, the sampling parameters and the template version, so a
rerun of the same items sends no request. Each response is committed the moment it arrives (WAL
journal, one transaction per response): a killed run loses no response it received, and a rerun
never asks twice. Malformed or rejected replies are cached too: they were paid for, and replaying
them keeps a rerun's retries (and their keys) identical.
"""

from __future__ import annotations

import json
import sqlite3
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eqagen.core.errors import DataFileError
from eqagen.core.rng import stable_hash

_SCHEMA = """
CREATE TABLE IF NOT EXISTS responses (
    key TEXT PRIMARY KEY,
    model TEXT NOT NULL,
    content TEXT NOT NULL,
    prompt_tokens INTEGER NOT NULL,
    completion_tokens INTEGER NOT NULL,
    request TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def request_key(
    endpoint: str, model: str, messages: list[dict[str, str]], sampling: dict[str, Any], template_version: str
) -> str:
    """The cache key of one chat request to ``endpoint`` (:attr:`Endpoint.identity`: scheme, host, port and
    path, no credentials): a reply is only ever reused for the endpoint that produced it."""
    return stable_hash("chat.completions", endpoint, model, messages, sampling, template_version, digest_size=16)


@dataclass(frozen=True)
class CachedResponse:
    content: str
    prompt_tokens: int
    completion_tokens: int


class ResponseCache:
    """sqlite-backed; ``path=None`` keeps it in memory (a run without persistence)."""

    def __init__(self, path: Path | str | None):
        self.path = Path(path) if path is not None else None
        try:
            if self.path is not None:
                self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:  # an unwritable HOME: the fix is another cache, not another --out
            fix = "pass --cache FILE (paraphrase.cache_path) in a writable folder, or set EQAGEN_CACHE_DIR"
            raise DataFileError(path, None, f"cannot create the response cache: {err.strerror or err}", fix) from None
        try:
            self._db = sqlite3.connect(str(self.path) if self.path else ":memory:", isolation_level=None)
            self._db.execute("PRAGMA journal_mode=WAL")
            # NORMAL with WAL: a committed response survives a killed process (not a power cut).
            self._db.execute("PRAGMA synchronous=NORMAL")
            self._db.execute("PRAGMA busy_timeout=10000")
            self._db.execute(_SCHEMA)
        except sqlite3.DatabaseError as err:
            fix = "delete it or choose another paraphrase.cache_path"
            raise DataFileError(path, None, f"not a usable sqlite cache ({err})", fix) from err

    def get(self, key: str) -> CachedResponse | None:
        row = self._db.execute(
            "SELECT content, prompt_tokens, completion_tokens FROM responses WHERE key = ?", (key,)
        ).fetchone()
        return CachedResponse(*row) if row else None

    def put(
        self, key: str, model: str, content: str, prompt_tokens: int, completion_tokens: int, request: dict[str, Any]
    ) -> None:
        """Store one response and commit at once (a response is never stored twice)."""
        self._db.execute(
            "INSERT OR IGNORE INTO responses VALUES (?, ?, ?, ?, ?, ?, ?)",
            (key, model, content, prompt_tokens, completion_tokens, json.dumps(request, sort_keys=True), time.time()),
        )

    def __len__(self) -> int:
        return int(self._db.execute("SELECT COUNT(*) FROM responses").fetchone()[0])

    def keys(self) -> set[str]:
        return {row[0] for row in self._db.execute("SELECT key FROM responses")}

    def close(self) -> None:
        self._db.close()

    def __enter__(self) -> ResponseCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
