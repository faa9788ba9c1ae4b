"""Benchmark: the longest stretch in which a run's progress display says nothing new.

Runs ``eqagen generate PRESET`` in this process, as the command does, with its progress display's two
entry points (a batch done, a step started, moving or ended) also writing a timestamp. Prints every
update's time and, at the end, the longest gaps between consecutive updates and what ran during each.
The claim checked (issue "a dataset that explains itself", progress): nothing sits still for more than
a couple of seconds without saying what runs; a gap is long only when one unit of work is long.

    .venv/bin/python benchmarks/progress_gaps.py [--preset tag-eqa] [--out DIR] [--top 5]
"""

from __future__ import annotations

import argparse
import itertools
import sys
import tempfile
import time
from pathlib import Path

from eqagen import cli
from eqagen.flows import progress


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="tag-eqa")
    parser.add_argument("--out", type=Path, default=None, help="output folder (default: a temporary one)")
    parser.add_argument("--top", type=int, default=5)
    args = parser.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="eqagen-progress-")) / args.preset
    start = time.perf_counter()
    updates: list[tuple[float, str]] = []

    def told(what: str) -> None:
        updates.append((time.perf_counter() - start, what))

    advance, stage = progress.BatchProgress.advance, progress.BatchProgress.stage

    def advance_told(self: progress.BatchProgress, _: object = None) -> None:
        told("batch done")
        advance(self, _)

    def stage_told(self: progress.BatchProgress, name: str, seconds: float | None, detail: str = "") -> None:
        if progress.step_label(name) is not None:  # what the display shows; other sections draw nothing
            told(f"{name}: {'running' if seconds is None else f'{seconds:.1f} s'} {detail}".rstrip())
        stage(self, name, seconds, detail)

    progress.BatchProgress.advance, progress.BatchProgress.stage = advance_told, stage_told
    code = cli.main(["generate", args.preset, "--out", str(out), "--overwrite"])
    told("command returned")
    for at, what in updates:
        print(f"{at:8.2f} s  {what}")
    gaps = sorted(((b[0] - a[0], a, b) for a, b in itertools.pairwise(updates)), reverse=True)[: args.top]
    print(f"\n{len(updates)} updates in {updates[-1][0]:.1f} s; longest silences:")
    for gap, (at, what), (_, then) in gaps:
        print(f"  {gap:6.2f} s after {at:.2f} s: '{what}' until '{then}'")
    return code


if __name__ == "__main__":
    sys.exit(main())
