"""Run the paraphrase stage in its own process (the crash test kills it with SIGKILL midway).

python -m tests.paraphrase.run_stage BASE_URL CACHE N_ITEMS FIXTURE_SEED CONCURRENCY
"""

from __future__ import annotations

import sys
from pathlib import Path

from eqagen.paraphrase.config import ParaphraseConfig
from eqagen.paraphrase.runner import paraphrase_records
from tests.paraphrase.fixtures import generated_records

STAGE_SEED = 13


def stage_config(base_url: str, cache: Path, concurrency: int) -> ParaphraseConfig:
    return ParaphraseConfig(
        model="local-model", base_url=base_url, api_key="test-key", cache_path=cache, concurrency=concurrency
    )


def main(argv: list[str]) -> None:
    base_url, cache, n, fixture_seed, concurrency = argv
    records = generated_records(int(n), seed=int(fixture_seed))
    result = paraphrase_records(records, stage_config(base_url, Path(cache), int(concurrency)), seed=STAGE_SEED)
    print(result.stats["validated"], flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
