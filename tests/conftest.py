"""Shared fixtures. Tests that need ../shared/realdata skip with the reason when it is absent."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]


def realdata_root() -> Path | None:
    env = os.environ.get("EQAGEN_REALDATA")
    path = Path(env) if env else REPO_ROOT.parent / "shared" / "realdata"
    return path if path.is_dir() else None


@pytest.fixture(scope="session")
def realdata() -> Path:
    root = realdata_root()
    if root is None:
        pytest.skip("real data not found: set EQAGEN_REALDATA or place shared/realdata beside the repository")
    return root
