"""Writes a world family's vocabulary table (read by :mod:`eqagen.predicates.vocabulary`)::

    python -m eqagen.predicates.vocabulary_table household --episodes 300 --out eqagen/predicates/data/household.json

A table holds, for each text key (a satisfiable filter spec or a seen type), the share of the family's
episodes that can use it.
"""

from __future__ import annotations

import argparse
import json
from collections import Counter
from collections.abc import Iterable
from pathlib import Path

from eqagen.core import Episode
from eqagen.generators.base import get_backend
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.index import build_index
from eqagen.predicates.vocabulary import spec_text, type_text

MIN_SHARE = 0.02  # values in fewer episodes are left out of a table (they sort after it anyway)


def episode_vocabulary(episode: Episode) -> set[str]:
    """The text keys one episode can use: its satisfiable filter specs and the types it saw."""
    index = build_index(EpisodeContext(episode))
    seen = index.ctx.types[index.ctx.observed]
    return {spec_text(s) for s in index.specs} | {type_text(str(t)) for t in seen}


def vocabulary_shares(episodes: Iterable[Episode]) -> dict[str, float]:
    """Share of episodes that can use each text key (those in at least ``MIN_SHARE`` of them)."""
    counts: Counter[str] = Counter()
    n = 0
    for ep in episodes:
        counts.update(episode_vocabulary(ep))
        n += 1
    return {k: round(c / n, 4) for k, c in sorted(counts.items()) if n and c / n >= MIN_SHARE}


def main() -> None:
    parser = argparse.ArgumentParser(description="Write a world family's vocabulary table.")
    parser.add_argument("family")
    parser.add_argument("--backend", default="embedded")
    parser.add_argument("--episodes", type=int, default=300)
    parser.add_argument("--max-steps", type=int, default=250)
    parser.add_argument("--seed", type=int, default=12345)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args()
    backend = get_backend(args.family, args.backend)
    specs = backend.plan(args.episodes, args.seed, {"max_steps": args.max_steps})
    shares = vocabulary_shares(backend.run(s) for s in specs)
    meta = {"family": args.family, "backend": args.backend, "episodes": args.episodes, "seed": args.seed}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps({**meta, "shares": shares}, indent=0, sort_keys=False) + "\n")


if __name__ == "__main__":
    main()
