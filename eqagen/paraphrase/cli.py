"""``eqagen paraphrase IN --out OUT (--model M [--base-url URL] | --offline)``: paraphrase a dataset.

Reads IN's question shards (checksums verified against its manifest), paraphrases every question
(few-shot examples from IN's train split), and writes OUT: question shards with the new
``paraphrase`` column, IN's episode shards copied byte for byte, a manifest whose config carries the
``paraphrase`` section used, stats.json with the paraphrase statistics, and the dataset card and
report rebuilt. A rerun after a crash
sends no request already answered: the responses are in the cache.

Exit status: 0 done; 1 the run was stopped (the endpoint cannot be reached, or too many items failed:
:mod:`eqagen.paraphrase.errors`); 2 bad input (dataset, flags, config, a model without an endpoint, a
key or model the endpoint refuses); 130 interrupted. A failure is one line on stderr; the paraphrase
run comes before any write, so when it fails nothing is written to OUT.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from eqagen.core.errors import ConfigError, DataFileError
from eqagen.paraphrase.config import OFFLINE_MODEL, ParaphraseConfig, config_from, resolve_endpoint
from eqagen.paraphrase.errors import RunFailed
from eqagen.paraphrase.stage import paraphrase_table
from eqagen.paraphrase.tables import records_from_table

DEFAULT_ROWS_PER_SHARD = 5000


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("paraphrase", help="paraphrase the questions of an existing dataset with an LLM")
    p.add_argument("input", type=Path, help="a dataset directory written by `eqagen generate`")
    p.add_argument("--out", type=Path, required=True, help="new (or empty) output directory")
    p.add_argument("--model", help="chat model name (needs --base-url, $OPENAI_BASE_URL or a key); "
                   f"'{OFFLINE_MODEL}' is the same as --offline; one of the two is required")  # fmt: skip
    p.add_argument("--base-url", help="OpenAI-compatible base URL (default: $OPENAI_BASE_URL, else OpenAI)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the key")
    p.add_argument("--offline", action="store_true", help="use the deterministic offline paraphraser (no model)")
    p.add_argument("--concurrency", type=int, help="requests in flight at most")
    p.add_argument("--max-requests", type=int, help="stop after this many billed requests (a clean stop)")
    p.add_argument("--max-tokens", type=int, help="stop after this many prompt + completion tokens")
    p.add_argument("--cache", type=Path, help="sqlite response cache (default: ~/.cache/eqagen/paraphrase.sqlite)")
    p.add_argument("--seed", type=int, help="seed of few-shot and offline choices (default: the dataset's)")
    p.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                   help="any other paraphrase setting, e.g. --set temperature=0.3 (repeatable)")  # fmt: skip
    p.set_defaults(func=run_paraphrase)


def _parse_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def chosen_model(args: argparse.Namespace) -> str:
    """The model the command line names: ``--model NAME`` or ``--offline``, exactly one of them."""
    if args.offline and args.model not in (None, OFFLINE_MODEL):
        raise ConfigError("--offline", f"given together with --model {args.model}", allowed="one of the two")
    if not args.offline and not args.model:
        raise ConfigError(
            "--model", "no model named", allowed="--model NAME with --base-url URL or a key, or --offline"
        )
    return OFFLINE_MODEL if args.offline else args.model


def build_config(args: argparse.Namespace) -> ParaphraseConfig:
    values: dict[str, Any] = {"model": chosen_model(args)}
    if args.base_url:
        values["base_url"] = args.base_url
    if os.environ.get(args.api_key_env):
        values["api_key"] = os.environ[args.api_key_env]
    for name in ("concurrency", "max_requests", "max_tokens"):
        if getattr(args, name) is not None:
            values[name] = getattr(args, name)
    if args.cache:
        values["cache_path"] = args.cache
    for item in args.overrides:
        key, sep, value = item.partition("=")
        if not sep:
            raise ConfigError("--set", f"expected KEY=VALUE, got '{item}'", allowed="e.g. --set temperature=0.3")
        values[key.strip()] = _parse_value(value)
    return config_from(values)


def _read_dataset(in_dir: Path) -> tuple[dict[str, Any], list[Any], pa.Table]:
    from eqagen.outputs.manifest import read_manifest
    from eqagen.outputs.readers import read_shards
    from eqagen.outputs.schemas import QUESTIONS_SCHEMA
    from eqagen.outputs.shards import ShardInfo, sha256_of

    if not (in_dir / "manifest.json").is_file():
        raise DataFileError(
            in_dir / "manifest.json", None, "no manifest", "pass a directory written by `eqagen generate`"
        )
    manifest = read_manifest(in_dir)
    shards = [ShardInfo(**s) for s in manifest.get("shards", [])]
    for shard in shards:
        path = in_dir / shard.path
        if not path.is_file() or sha256_of(path) != shard.sha256:
            raise DataFileError(path, "sha256", "missing or differs from the manifest", "restore it or regenerate")
    questions = read_shards([in_dir / s.path for s in shards if s.path.startswith("questions/")], QUESTIONS_SCHEMA)
    return manifest, shards, questions


def _write_dataset(
    in_dir: Path, out_dir: Path, manifest: dict[str, Any], shards: list[Any], questions: pa.Table, config: dict
) -> dict[str, Any]:
    from eqagen.outputs.manifest import build_manifest, write_manifest
    from eqagen.outputs.shards import write_shards

    output = manifest.get("config", {}).get("output", {})
    rows = int(output.get("rows_per_shard", DEFAULT_ROWS_PER_SHARD)) if isinstance(output, dict) else 5000
    written = []
    for split in sorted(set(questions["split"].to_pylist()) | {"train", "val", "test"}):
        part = questions.filter(pc.equal(questions["split"], split))
        written += write_shards(part, out_dir, f"questions/split={split}", "question_id", rows)
    for shard in (s for s in shards if s.path.startswith("episodes/")):
        (out_dir / shard.path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(in_dir / shard.path, out_dir / shard.path)
        written.append(shard)
    new_config = {**manifest.get("config", {}), "paraphrase": config}
    new_manifest = build_manifest(new_config, manifest["seed"], manifest["config_hash"], written)
    write_manifest(new_manifest, out_dir)
    return new_manifest


def _write_audit(in_dir: Path, out_dir: Path, questions: pa.Table, stats: dict[str, Any], manifest: dict) -> None:
    """stats.json with this run's paraphrase statistics, then the dataset card and the report."""
    from eqagen.outputs.audit_files import previous_stats, write_audit_files
    from eqagen.outputs.readers import read_shards
    from eqagen.outputs.schemas import EPISODES_SCHEMA

    old = previous_stats(in_dir)
    stages = {**old.get("stages", {}), "paraphrase": {"implementation": "eqagen paraphrase", **stats}}
    episode_paths = [out_dir / s["path"] for s in manifest["shards"] if s["path"].startswith("episodes/")]
    episodes = read_shards(episode_paths, EPISODES_SCHEMA)
    write_audit_files(out_dir, questions, episodes, old.get("funnel", {}), stages, manifest)


def paraphrase_dataset(in_dir: Path, out_dir: Path, config: ParaphraseConfig, seed: int | None = None) -> dict:
    """Paraphrase the dataset in ``in_dir`` into ``out_dir``; returns the stage statistics."""
    in_dir, out_dir = Path(in_dir), Path(out_dir)
    if out_dir.resolve() == in_dir.resolve():
        raise DataFileError(out_dir, None, "--out is the input directory", "write to a new directory")
    if out_dir.exists() and any(out_dir.iterdir()):
        raise DataFileError(out_dir, None, "output directory is not empty", "pass a new or empty directory")
    resolve_endpoint(config)  # a model with no endpoint is an error before anything is read
    manifest, shards, questions = _read_dataset(in_dir)
    seed = int(manifest["seed"]) if seed is None else seed
    train = [r for r in records_from_table(questions) if r.split == "train"]
    questions, stats = paraphrase_table(questions, config, seed, examples=train or None)
    out_dir.mkdir(parents=True, exist_ok=True)
    saved = config.model_dump(mode="json", exclude={"api_key"})
    new_manifest = _write_dataset(in_dir, out_dir, manifest, shards, questions, saved)
    _write_audit(in_dir, out_dir, questions, stats, new_manifest)
    return stats


def run_paraphrase(args: argparse.Namespace) -> int:
    try:
        stats = paraphrase_dataset(args.input, args.out, build_config(args), args.seed)
    except RunFailed as err:  # the input was fine, the run could not be carried out: exit 1, not 2
        print(f"eqagen: error: {err}", file=sys.stderr)
        return err.exit_code
    keys = ("mode", "model", "items", "validated", "kept_template", "requests_sent", "responses", "cache_hits",
            "total_tokens", "estimated_cost_usd", "budget_exhausted", "elapsed_s")  # fmt: skip
    print(json.dumps({k: stats[k] for k in keys if k in stats}, indent=2))
    return 0
