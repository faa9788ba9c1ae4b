"""``eqagen show DIR QUESTION_ID --out FILE.png``: the question's episode drawn from above."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from eqagen.commands.audit import refuse_existing
from eqagen.outputs.folder import refuse_inside_inputs
from eqagen.outputs.picture import show_question


def register(subparsers: argparse._SubParsersAction) -> None:
    show = subparsers.add_parser(
        "show",
        help="draw a question's episode from above as a PNG",
        description="Draw the episode a question is about, seen from above (episode frame: x right, z up): "
        "rooms or structures, the agent's path with failed actions marked, the objects it saw, the events, "
        "and the question's anchors and answer objects highlighted (docs/models.md).",
    )
    show.add_argument("dir", type=Path, help="an eqagen output directory")
    show.add_argument("question_id", help="a question_id of the questions table")
    show.add_argument("--out", type=Path, required=True, help="the PNG to write (refused if it exists)")
    show.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    show.set_defaults(func=run_show)


def run_show(args: argparse.Namespace) -> int:
    refuse_inside_inputs(args.out, [args.dir], "--out")
    refuse_existing(args.out, args.overwrite)
    show_question(args.dir, args.question_id, args.out)
    print(f"wrote {args.out}", file=sys.stderr)
    return 0
