"""``eqagen blockworld inspect PATH``: a JSON summary of a block list, schematic, region file or save."""

from __future__ import annotations

import argparse
import json


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("blockworld", help="Minecraft worlds: inspect world files")
    sub = parser.add_subparsers(dest="blockworld_command", required=True)
    inspect = sub.add_parser(
        "inspect",
        help="print a JSON summary: size, count per block id, entities by id",
        description="Summarise a PQB block list (.txt), a Sponge schematic (.schem), an Anvil region file "
        "(r.X.Z.mca) or a save directory (with level.dat and region/) as JSON: size, count of each block id "
        "without properties, entities by id, chests.",
    )
    inspect.add_argument("path", help="a world file or save directory")
    inspect.add_argument("--indent", type=int, default=2, help="JSON indentation (0: one line)")
    inspect.set_defaults(func=run_inspect)


def run_inspect(args: argparse.Namespace) -> int:
    from eqagen.generators.blockworld.files import summarize

    print(json.dumps(summarize(args.path), indent=args.indent or None, sort_keys=True))
    return 0
