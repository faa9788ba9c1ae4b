"""Check a dataset's questions against the validity rules, from its shards alone.

    python benchmarks/check_validity.py OUT_DIR [--examples N] [--json PATH]

Every question's program is evaluated again on its episode with the plain evaluator, each filter dropped
and evaluated again, and every rule of ``eqagen.predicates.validity`` judged (docs/questions.md,
"Validity rules"); also whether the stored answer is the re-evaluated one (``stale_answer``) and the
stored event ordinals are the ones events are named by (``event_ordinals``). Prints the violations per
rule, per world family and per query type, with a few examples each; exits 1 on any violation, 2 when
the directory cannot be read. ``eqagen audit DIR --rules`` runs the same checks.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from eqagen.commands.validity_audit import check_output, report_lines
from eqagen.core import EqagenError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path, help="an eqagen output directory")
    parser.add_argument("--examples", type=int, default=3, help="examples printed per rule")
    parser.add_argument("--json", type=Path, help="also write the counts here")
    args = parser.parse_args(argv)
    try:
        report = check_output(args.out_dir)
    except (EqagenError, ValueError) as err:
        print(f"check_validity: {err}", file=sys.stderr)
        return 2
    print("\n".join(report_lines(report, args.examples)))
    if args.json:
        counts = {
            "questions": report.questions,
            "episodes": report.episodes,
            "seconds": round(report.seconds, 2),
            "violations": {r: n for (r,), n in sorted(report.counts("reason").items())},
            "by_family": {f"{r}/{f}": n for (r, f), n in sorted(report.counts("reason", "family").items())},
            "by_query": {f"{r}/{q}": n for (r, q), n in sorted(report.counts("reason", "query_type").items())},
        }
        args.json.write_text(json.dumps(counts, indent=2) + "\n", encoding="utf-8")
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
