"""The pipeline tests run on the fixture backend and sampler (tests/outputs/builders.py), so they test
the orchestration alone; the end-to-end tests use the real household backend and question engine."""

from __future__ import annotations

import pytest

from eqagen.config import load_config
from eqagen.generators import register_backend
from tests.outputs.builders import FixtureBackend

register_backend("household", "fixture")(FixtureBackend)


@pytest.fixture
def small_config():
    def make(*overrides: str, seed: int | None = None):
        # balance.ask_scenes=0: the fixture sampler's programs are not the engine's, there is nothing to ask
        base = ["generation.backend=fixture", "generation.n_episodes=23", "generation.batch_size=5",
                "output.rows_per_shard=17", "runner.kind=inline", "runner.progress=false",
                "balance.ask_scenes=0"]  # fmt: skip
        return load_config("demo", [*base, *overrides], seed=seed)

    return make
