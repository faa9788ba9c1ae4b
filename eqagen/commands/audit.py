"""``eqagen audit DIR [--against OTHER]`` and ``eqagen export DIR --format F --out FILE``."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from eqagen.commands.audit_run import (
    Check,
    audit_dir,
    checks_as_dicts,
    compare_with,
    failed_criteria,
    validity_checks,
)
from eqagen.core import ConfigError, DataFileError
from eqagen.outputs.exports import EXPORT_FORMATS, chosen_split, export
from eqagen.outputs.folder import refuse_inside_inputs
from eqagen.outputs.picture import example_pictures
from eqagen.outputs.report import write_report


def register(subparsers: argparse._SubParsersAction) -> None:
    audit = subparsers.add_parser("audit", help="recompute and check a dataset's statistics from its shards")
    audit.add_argument("dir", type=Path, help="an eqagen output directory")
    audit.add_argument("--against", type=Path, help="another output directory or an OpenEQA-format JSON file, "
                       "printed side by side (n/a: a statistic the other dataset does not have)")  # fmt: skip
    audit.add_argument("--json", type=Path, help="write the recomputed statistics and checks here")
    audit.add_argument("--report", type=Path, help="write an HTML report of the recomputed statistics here")
    audit.add_argument(
        "--rules",
        action="store_true",
        help="also re-evaluate every question from the shards and check the validity rules (docs/questions.md)",
    )
    audit.set_defaults(func=run_audit)

    exp = subparsers.add_parser(
        "export",
        help="export a dataset to another benchmark's format",
        description="Write a dataset's questions in another benchmark's format. openeqa: OpenEQA's JSON list "
        "(any world family); jsonl: every column, one JSON object per line; express: EXPRESS-Bench's records, "
        "for navigation episodes only (a household or blockworld dataset has none to export). history and "
        "scenegraph write what a model observes, one JSON file per episode into the folder --out; vlmevalkit "
        "(a TSV) and lmms-eval (a task folder) write text multiple choice with each episode's history; replay "
        "writes what each episode's simulator needs to reproduce it (docs/models.md).",
    )
    exp.add_argument("dir", type=Path, help="an eqagen output directory")
    exp.add_argument("--format", required=True, choices=EXPORT_FORMATS,
                     help="openeqa (OpenEQA JSON), jsonl (every column), express (EXPRESS-Bench: navigation "
                     "datasets only), history (per-episode step histories), scenegraph (per-episode "
                     "ConceptGraphs-style scene graphs), vlmevalkit (TSV), lmms-eval (task folder), replay "
                     "(per-episode simulator bundles)")  # fmt: skip
    exp.add_argument("--split", help="only this split (train, validation, test, or all; val means validation); "
                     "openeqa, vlmevalkit and lmms-eval export test unless told, the others every split")  # fmt: skip
    exp.add_argument("--out", type=Path, required=True,
                     help="the file to write, or the folder for history, scenegraph, lmms-eval and replay "
                     "(refused if it exists)")  # fmt: skip
    exp.add_argument("--max-observations", type=int, metavar="K",
                     help="history: keep K observations as TAG-EQA does (every event kept, every object seen "
                     "once); default: every step (vlmevalkit, lmms-eval: 50)")  # fmt: skip
    exp.add_argument("--at-step", type=int, metavar="T", help="scenegraph: the graph at step T (default: the last)")
    exp.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    exp.set_defaults(func=run_export)


def run_audit(args: argparse.Namespace) -> int:
    inputs = [args.dir] + ([args.against] if args.against and args.against.is_dir() else [])
    refuse_inside_inputs(args.json, inputs, "--json")
    refuse_inside_inputs(args.report, inputs, "--report")
    stats, checks = audit_dir(args.dir)
    readable = all(c.ok for c in checks if not c.measured)  # a missed method criterion leaves the shards readable
    if args.rules and readable:
        checks += validity_checks(args.dir)
    elif args.rules:  # the rules read the shards, which failed their checks: say so rather than stop on them
        checks.append(Check("validity rules", False, "not judged: the folder failed the checks above"))
    for c in checks:
        shown = c.detail and (c.measured or not c.ok)
        print(f"{'ok    ' if c.ok else 'FAILED'}  {c.name}" + (f": {c.detail}" if shown else ""))
    missed = failed_criteria(checks)
    if missed:
        print(f"method criteria missed: {', '.join(missed)}")
    q, n_episodes = stats["questions"], stats["episodes"]["episodes"]
    print(f"{q['questions']} questions {q['per_split']}, {n_episodes} episodes, {q['scenes']} scenes")
    if args.against:
        print()
        print(compare_with(stats, args.against))
    full = {"dataset": stats, "checks": checks_as_dicts(checks)}
    if args.json:
        args.json.write_text(json.dumps(full, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    if args.report:
        manifest = json.loads((args.dir / "manifest.json").read_text(encoding="utf-8"))
        shards = [s["path"] for s in manifest.get("shards", [])]
        write_report(full, args.report, manifest=manifest, pictures=example_pictures(args.dir, shards, full))
    return 0 if all(c.ok for c in checks) else 1


def refuse_existing(path: Path, overwrite: bool) -> None:
    """Never replace a file unasked: an existing ``path`` is bad input unless ``--overwrite`` was given."""
    if path.exists() and not overwrite:
        raise DataFileError(path, None, "already exists", "pass --overwrite to replace it, or choose another --out")


# options that only some formats read: given with another format they would be silently ignored
FORMAT_OPTIONS = {"max_observations": ("history", "vlmevalkit", "lmms-eval"), "at_step": ("scenegraph",)}


def check_format_options(args: argparse.Namespace) -> None:
    for option, formats in FORMAT_OPTIONS.items():
        if getattr(args, option) is not None and args.format not in formats:
            flag = "--" + option.replace("_", "-")
            raise ConfigError(flag, f"is read by --format {', '.join(formats)} only; drop it", ", ".join(formats))


def run_export(args: argparse.Namespace) -> int:
    check_format_options(args)
    refuse_inside_inputs(args.out, [args.dir], "--out")
    refuse_existing(args.out, args.overwrite)
    n = export(
        args.dir, args.format, args.out, split=args.split, max_observations=args.max_observations, at_step=args.at_step
    )
    what = "episodes" if args.format in ("history", "scenegraph", "replay") else "records"
    split = chosen_split(args.format, args.split)
    print(f"wrote {n} {what} ({f'split {split}' if split else 'every split'}) to {args.out}", file=sys.stderr)
    return 0
