"""Shared settings of the bad-input tests: a modest number of examples in the default suite
(``-m slow`` runs the long versions), no deadline (the machine is shared), and one scratch directory
per session (hypothesis does not mix with function-scoped fixtures)."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "fuzz", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large]
)
settings.register_profile("fuzz-long", max_examples=2000, deadline=None, suppress_health_check=list(HealthCheck))
FUZZ = settings.get_profile("fuzz")
FUZZ_LONG = settings.get_profile("fuzz-long")


@pytest.fixture(scope="session")
def scratch(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("fuzz")
