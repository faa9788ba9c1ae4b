"""Answers per balance group, and whether the content allowed more.

    .venv/bin/python benchmarks/answers_per_group.py OUT

Reads a finished dataset (``OUT/questions/*.parquet``) and the candidates it was balanced from (its
checkpoints, ``OUT/.eqagen/batches/<hash>/``: every episode's own records and every record asked in other
scenes; a run with ``--clean`` has none). Prints the histogram of distinct answers per kept balance group
and, for the groups kept with exactly two answers, how many distinct answers their candidates held over
all scenes, and in how many scenes a third answer was seen. The claim checked (issue "questions a person
reads as the program computes them", item 5): groups have more than two answers where the content allows.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

KEYS = ["balance_key", "answer_key", "scene_id"]


def candidate_scenes(out: Path) -> dict[str, dict[str, set[str]]]:
    """Per balance key, per answer: the scenes whose candidates gave it."""
    stores = sorted((out / ".eqagen" / "batches").glob("*"))
    files = [
        f for s in stores for f in [*s.glob("batch-*/questions.parquet"), *s.glob("asked-*/batch-*/asked.parquet")]
    ]
    scenes: dict[str, dict[str, set[str]]] = defaultdict(lambda: defaultdict(set))
    for f in files:
        t = pq.read_table(f, columns=KEYS)
        for key, answer, scene in zip(*(t.column(c).to_pylist() for c in KEYS)):
            scenes[key][answer].add(scene)
    return scenes


def kept_answers(out: Path) -> tuple[dict[str, set[str]], dict[str, str]]:
    cols = ["balance_key", "answer_key", "query_type"]
    t = pa.concat_tables([pq.read_table(f, columns=cols) for f in sorted((out / "questions").glob("*.parquet"))])
    answers: dict[str, set[str]] = defaultdict(set)
    query: dict[str, str] = {}
    for key, answer, q in zip(*(t.column(c).to_pylist() for c in cols)):
        answers[key].add(answer)
        query[key] = q
    return answers, query


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    args = parser.parse_args()
    groups, query = kept_answers(args.out)
    candidates = candidate_scenes(args.out)
    if not candidates:
        print(f"{args.out}: no checkpoints (was it made with --clean?)", file=sys.stderr)
        return 2
    sizes = Counter(len(a) for a in groups.values())
    print(f"{len(groups):,} balance groups; distinct answers per group: {dict(sorted(sizes.items()))}")
    two = [k for k, a in groups.items() if len(a) == 2]
    held = Counter(len(candidates[k]) for k in two)
    only_two = held[2]
    print(f"{len(two):,} groups with exactly two answers ({len(two) / len(groups):.1%}); their candidates held "
          f"{dict(sorted(held.items()))} distinct answers over all scenes")  # fmt: skip
    print(
        f"  content allows only two: {only_two:,} ({only_two / len(two):.1%} of them); "
        f"a third answer existed: {len(two) - only_two:,} ({(len(two) - only_two) / len(groups):.1%} of all groups)"
    )
    third = Counter(third_answer_scenes(candidates[k]) for k in two if len(candidates[k]) >= 3)
    print(f"  scenes of the third most frequent answer, where there is one: {dict(sorted(third.items()))}")
    print(f"  exactly-two groups by query type: {dict(Counter(query[k] for k in two).most_common())}")
    return 0


def third_answer_scenes(by_answer: dict[str, set[str]]) -> int:
    """In how many scenes the third most frequent answer was seen."""
    return sorted((len(s) for s in by_answer.values()), reverse=True)[2]


if __name__ == "__main__":
    sys.exit(main())
