"""``eqagen resplit IN --out OUT [--ratios 0.7,0.15,0.15] [--unseen-fraction 0.5] [--seed N]
[--by scene|question] [--split-file F] [--no-report]``: same questions and episodes, new ``split`` column.

The re-split stage (:func:`eqagen.curation.resplit.split_again`) run over a dataset folder by
:func:`eqagen.outputs.derived.derive`: the input is verified first (manifest, paths, checksums, row
counts, unique ids, stats.json), so a re-split never starts from damaged or edited shards; the output
folder is claimed and written like ``eqagen generate``'s (locked, never over files eqagen did not write or
another dataset unless ``--overwrite``, staged and swapped in whole), so a killed re-split is simply run
again. Episode shards are copied byte for byte. The new manifest keeps the input's config (with the new
``split`` section), seed and config hash, and records the re-split's seed and the input's rows in a
``derived`` entry; stats.json, the dataset card and the report are rebuilt from the new tables.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
from pydantic import ValidationError

from eqagen.core import ConfigError, stable_hash
from eqagen.curation.config import SplitConfig
from eqagen.curation.criteria import unseen_bounds
from eqagen.curation.resplit import split_again
from eqagen.outputs.dataset import Dataset
from eqagen.outputs.derived import DerivedStage, derive
from eqagen.outputs.shards import sha256_of


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "resplit",
        help="re-split an existing dataset (content unchanged, checksums verified first)",
        description="Assign new train/val/test splits to an existing output directory and write the result "
        "to a new directory. The input's manifest checksums are verified first; questions and episodes "
        "are unchanged.",
    )
    parser.add_argument("input", type=Path, metavar="IN", help="an eqagen output directory")
    parser.add_argument("--out", type=Path, required=True,
                        help="a new or empty directory (a rerun of the same re-split into it redoes it)")  # fmt: skip
    parser.add_argument("--overwrite", action="store_true",
                        help="replace another dataset in --out (only the files its manifest lists)")  # fmt: skip
    parser.add_argument("--ratios", default="0.7,0.15,0.15", help="train,val,test shares (default 0.7,0.15,0.15)")
    parser.add_argument(
        "--unseen-fraction", type=float, default=0.5, help="share of val and test from scenes unseen in train"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the new assignment (default 0)")
    parser.add_argument("--by", choices=("question", "scene"), default="question", help="unit of the split")
    parser.add_argument("--split-file", type=Path, help="scene -> split (JSON, CSV or TSV): reproduce a split; "
                        "--ratios, --unseen-fraction and --by do not apply then")  # fmt: skip
    parser.add_argument("--no-report", action="store_true", help="skip report.html (its plots are the slow part)")
    parser.add_argument("--allow-miss", action="store_true", help="write the split even where its unseen shares "
                        "miss --unseen-fraction (by default that is an error, and nothing is written)")  # fmt: skip
    parser.set_defaults(func=run_resplit)


def parse_ratios(text: str) -> tuple[float, float, float]:
    try:
        values = tuple(float(v) for v in text.split(","))
    except ValueError as err:
        raise ConfigError("--ratios", f"'{text}' is not three comma-separated numbers", "e.g. 0.7,0.15,0.15") from err
    if len(values) != 3:
        raise ConfigError("--ratios", f"expected three numbers, got {len(values)}", "e.g. 0.7,0.15,0.15")
    return values  # type: ignore[return-value]


def config_from_args(args: argparse.Namespace) -> SplitConfig:
    try:
        return SplitConfig(
            ratios=parse_ratios(args.ratios),
            unseen_fraction=args.unseen_fraction,
            by=args.by,
            split_file=args.split_file,
        )
    except ValidationError as err:
        first = err.errors()[0]
        key = "--" + str(first["loc"][0]).replace("_", "-") if first["loc"] else "resplit"
        raise ConfigError(key, first["msg"].removeprefix("Value error, ")) from err


def missed_unseen(stats: dict[str, Any], config: SplitConfig) -> str | None:
    """What a split's unseen shares miss of ``config`` (the audit's own bounds, :func:`unseen_bounds`) and what
    the input can meet, in one sentence; None where they are met or the split holds no scenes out."""
    if config.split_file is not None or config.unseen_fraction <= 0:
        return None
    low, high = unseen_bounds(config.unseen_fraction, config.by)
    shares = {s: v for s, v in stats["unseen_share"].items() if s != "train" and v is not None}
    if all(low <= v <= high for v in shares.values()):
        return None
    reached = " and ".join(f"{s} {v:.3f}" for s, v in shares.items())
    problem = f"the split reaches unseen shares of {reached}, outside [{low:.2f}, {high:.2f}]"
    held = stats.get("input_held_out_share")
    if held:  # the input's held-out scenes are kept whole when they are the share the new split needs
        fraction = held / (config.ratios[1] + config.ratios[2])
        meets = f"--unseen-fraction {fraction:.2f} with these ratios" if fraction <= 1 else "no fraction here"
        problem += (f"; the input's held-out scenes hold {held:.3f} of the records, so it meets {meets} "
                    f"(unseen fraction x (validation + test) = {held:.3f})")  # fmt: skip
    return problem


def resplit(
    in_dir: Path,
    out_dir: Path,
    config: SplitConfig,
    seed: int,
    report: bool = True,
    overwrite: bool = False,
    allow_miss: bool = False,
) -> dict[str, Any]:
    """Write ``in_dir``'s dataset to ``out_dir`` with a new split; returns the split statistics.
    ``report=False`` skips report.html (its plots are the slow part). A split whose unseen shares miss
    ``config.unseen_fraction`` raises ConfigError before anything is written, unless ``allow_miss``."""

    def stage_for(source: Dataset) -> DerivedStage:
        def run(questions: pa.Table) -> tuple[pa.Table, dict[str, Any]]:
            out, stats = split_again(questions, config, seed)
            missed = missed_unseen(stats, config)
            if missed and not allow_miss:
                raise ConfigError("--unseen-fraction", missed, "the fraction it meets, or --allow-miss")
            return out, {**stats, "resplit": True}

        fingerprint = resplit_fingerprint(source, config, seed)
        settings = config.model_dump(mode="json")
        return DerivedStage("split", settings, seed, fingerprint, "resplit", "eqagen.curation.splits:split", run)

    return derive(in_dir, out_dir, stage_for, overwrite, report)


def resplit_fingerprint(source: Dataset, config: SplitConfig, seed: int) -> str:
    """What a re-split makes depends on: the input's shards, the split settings (a split file by its
    content) and the seed."""
    split_file = sha256_of(config.split_file) if config.split_file and config.split_file.is_file() else None
    shards = [s.sha256 for s in source.manifest.shards]
    return stable_hash("resplit", shards, config.model_dump(mode="json"), split_file, int(seed))


def run_resplit(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    stats = resplit(
        args.input, args.out, config, args.seed, not args.no_report, args.overwrite, allow_miss=args.allow_miss
    )
    fractions = ", ".join(f"{k} {v:.3f}" for k, v in stats["fraction"].items())
    unseen = ", ".join(f"{k} {v:.3f}" for k, v in stats["unseen_share"].items() if k != "train" and v is not None)
    print(f"re-split {stats['records']} questions into {args.out}: {fractions}; unseen share: {unseen}")
    for warning in stats["warnings"]:
        print(f"warning: {warning}", file=sys.stderr)
    return 0
