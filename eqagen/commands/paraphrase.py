"""``eqagen paraphrase IN --out OUT (--model M [--base-url URL] | --offline)``: paraphrase a dataset.

Reads IN's question shards (checksums verified against its manifest), paraphrases every question
(few-shot examples from IN's train split, at most 512 per query type, as ``generate`` draws them), and
writes OUT: question shards with the new
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
import sys
from pathlib import Path
from typing import Any

import pyarrow as pa

from eqagen.core import stable_hash
from eqagen.core.errors import ConfigError
from eqagen.outputs.dataset import Dataset
from eqagen.outputs.derived import DerivedStage, derive
from eqagen.paraphrase.config import OFFLINE_MODEL, ParaphraseConfig, config_from, resolve_endpoint
from eqagen.paraphrase.errors import RunFailed
from eqagen.paraphrase.stage import few_shot_pool, paraphrase_table, uses_llm


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("paraphrase", help="paraphrase the questions of an existing dataset with an LLM")
    p.add_argument("input", type=Path, help="a dataset directory written by `eqagen generate`")
    p.add_argument("--out", type=Path, required=True,
                   help="new or empty output directory (a rerun of the same command into it resumes)")  # fmt: skip
    p.add_argument("--overwrite", action="store_true",
                   help="replace another dataset in --out (only the files its manifest lists)")  # fmt: skip
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


def paraphrase_dataset(
    in_dir: Path, out_dir: Path, config: ParaphraseConfig, seed: int | None = None, overwrite: bool = False
) -> dict:
    """Paraphrase the dataset in ``in_dir`` into ``out_dir``; returns the stage statistics.

    The paraphrase stage run over a dataset folder (:func:`eqagen.outputs.derived.derive`): the input is
    verified before anything is written, and the output folder is claimed, staged and swapped in like
    ``eqagen generate``'s, so a killed run is simply run again. The LLM's few-shot pool is ``generate``'s
    (:func:`eqagen.paraphrase.stage.few_shot_pool`)."""
    resolve_endpoint(config)  # a model with no endpoint is an error before anything is read

    def stage_for(source: Dataset) -> DerivedStage:
        chosen = source.manifest.seed if seed is None else seed

        def run(questions: pa.Table) -> tuple[pa.Table, dict[str, Any]]:
            examples = few_shot_pool(questions) if uses_llm(config) else None
            return paraphrase_table(questions, config, chosen, examples=examples)

        saved = config.model_dump(mode="json", exclude={"api_key"})
        fingerprint = stable_hash("paraphrase", [s.sha256 for s in source.manifest.shards], saved, int(chosen))
        return DerivedStage("paraphrase", saved, chosen, fingerprint, "paraphrase", "eqagen paraphrase", run)

    return derive(in_dir, out_dir, stage_for, overwrite)


def run_paraphrase(args: argparse.Namespace) -> int:
    try:
        stats = paraphrase_dataset(args.input, args.out, build_config(args), args.seed, overwrite=args.overwrite)
    except RunFailed as err:  # the input was fine, the run could not be carried out: exit 1, not 2
        print(f"eqagen: error: {err}", file=sys.stderr)
        return err.exit_code
    keys = ("mode", "model", "items", "validated", "kept_template", "requests_sent", "responses", "cache_hits",
            "total_tokens", "estimated_cost_usd", "budget_exhausted", "elapsed_s")  # fmt: skip
    print(json.dumps({k: stats[k] for k in keys if k in stats}, indent=2))
    return 0
