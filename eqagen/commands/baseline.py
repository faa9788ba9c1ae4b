"""``eqagen baseline blind|socratic|api DIR --model M [--base-url URL] --out PRED.jsonl``: TAG-EQA's baselines.

Each question of the split (test by default) is asked as text multiple choice, with the options of the
harness exports (:mod:`eqagen.outputs.harness`), through any OpenAI-compatible chat endpoint:

- ``blind``: the question and its options alone (what a model knows without the episode);
- ``socratic``: with the episode's K-observation history as text (TAG-EQA's Socratic LLM);
- ``api``: with what TAG-EQA's retrieval API finds for the question (:mod:`eqagen.outputs.retrieval`:
  the observations whose caption is similar to the question's words, and the events), one round.

The client, the response cache, the retries and the failures are ``eqagen paraphrase``'s
(:mod:`eqagen.paraphrase.client`, :mod:`eqagen.paraphrase.cache`): each response is committed to the cache
as it arrives, so a killed run, run again, sends only the requests still unanswered. The predictions file
is ``eqagen score``'s ``choice`` shape (docs/scoring.md, "Predictions"): one JSON line per question whose
reply names an option, ``{"question_id", "choice", "letter", "reply"}``, ``choice`` the record's choice that
option stands for (:func:`eqagen.outputs.harness.reply_choice`), ``letter`` and ``reply`` what the model
said. A reply naming no option writes no line: ``eqagen score`` counts the question wrong and lists it as
missing. ``eqagen score DIR PRED.jsonl`` scores the file.

Exit status: 0 done; 1 the endpoint could not be reached or some requests failed after their retries (one
line; the answers received are cached); 2 bad input. Nothing is written unless every question was answered.
"""

from __future__ import annotations

import argparse
from pathlib import Path

MODES = ("blind", "socratic", "api")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("baseline", help="ask a chat model a dataset's questions (blind, socratic, api)")
    p.add_argument("mode", choices=MODES, help="blind: the question alone; socratic: with the episode's history; "
                   "api: with what the retrieval API finds")  # fmt: skip
    p.add_argument("dir", type=Path, help="an eqagen output directory")
    p.add_argument("--model", required=True, help="chat model name (needs --base-url, $OPENAI_BASE_URL or a key)")
    p.add_argument("--base-url", help="OpenAI-compatible base URL (default: $OPENAI_BASE_URL, else OpenAI)")
    p.add_argument("--api-key-env", default="OPENAI_API_KEY", help="environment variable holding the key")
    p.add_argument("--split", default="test", help="the split to ask (default test; all: every split)")
    p.add_argument("--max-observations", type=int, default=50, metavar="K", help="history steps (socratic)")
    p.add_argument("--out", type=Path, required=True, help="the predictions JSONL (refused if it exists)")
    p.add_argument("--overwrite", action="store_true", help="replace --out if it exists")
    p.add_argument("--concurrency", type=int, default=8, help="requests in flight at most")
    p.add_argument("--cache", type=Path, help="sqlite response cache (default: ~/.cache/eqagen/baseline.sqlite)")
    p.set_defaults(func=run_baseline)


def run_baseline(args: argparse.Namespace) -> int:
    # The client (the openai SDK) is imported when a baseline runs, not whenever `eqagen` parses its commands.
    from eqagen.commands.baseline_run import run_baseline as run

    return run(args)
