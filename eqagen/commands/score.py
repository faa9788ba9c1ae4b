"""``eqagen score DATASET PREDICTIONS [--split test] [--json FILE] [--report FILE.html] [--judge MODEL
[--base-url URL] [--judge-prompt FILE]]``: score a model's predictions the way each benchmark does.

The dataset is verified against its manifest first (checksums, row counts, ids), as every reader does; the
predictions file is read and checked row by row (:mod:`eqagen.scoring.predictions`); every record of the split
is scored (:mod:`eqagen.scoring.records`) and the scores are broken down by condition with 95% intervals and
tested against chance (:mod:`eqagen.scoring.report`). The report's layout: docs/scoring.md.

Exit status: 0 scored; 2 bad input (dataset, predictions, flags), one line naming the file, the row and the fix;
1 the judge could not be carried out (endpoint unreachable, too many unmarked answers; marks received so far
are cached, a rerun resumes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eqagen.core import ConfigError, QARecord
from eqagen.core.records import split_name as canonical_split
from eqagen.scoring.similarity import DEFAULT_SIMILARITY

if TYPE_CHECKING:  # scipy and pyarrow take seconds to import: every eqagen command builds this parser
    from eqagen.outputs.dataset import Dataset
    from eqagen.scoring.judge import JudgeRun
    from eqagen.scoring.predictions import Point, Predictions

SUMMARY_KEYS = ("overall", "chance_tests", "scorer")


def register(subparsers: argparse._SubParsersAction) -> None:
    p = subparsers.add_parser("score", help="score a model's predictions on a dataset, per condition",
                              description=__doc__.split("\n\n")[1])  # fmt: skip
    p.add_argument("dataset", type=Path, help="a dataset directory written by eqagen")
    p.add_argument("predictions", type=Path, help="predictions: .jsonl, .json or .parquet (docs/scoring.md)")
    p.add_argument("--split", default="test", help="the split the predictions answer (default: test)")
    p.add_argument("--json", type=Path, help="write the whole report as JSON here ('-': standard output)")
    p.add_argument("--report", type=Path, help="write the report as an HTML page here")
    p.add_argument("--similarity", default=DEFAULT_SIMILARITY,
                   help=f"text similarity of the structured match: {DEFAULT_SIMILARITY} (default, no download) or "
                   "a sentence-transformers model name (needs that package)")  # fmt: skip
    p.add_argument("--judge", metavar="MODEL", help="mark free-form answers with this chat model (OpenEQA's metric)")
    p.add_argument("--base-url", help="the judge's OpenAI-compatible base URL (default: $OPENAI_BASE_URL, else OpenAI)")
    p.add_argument("--judge-prompt", type=Path, help="the judge's prompt ({question}, {answer}, {prediction}, "
                   "{extra_answers}); default: the project's own")  # fmt: skip
    p.add_argument("--judge-cache", type=Path, help="sqlite cache of the judge's replies "
                   "(default: the paraphrase cache, ~/.cache/eqagen/paraphrase.sqlite)")  # fmt: skip
    p.add_argument("--concurrency", type=int, default=8, help="judge requests in flight at most (default 8)")
    p.set_defaults(func=run_score)


def split_name(dataset: Dataset, asked: str) -> str:
    """The split as the dataset names it (``val`` and ``validation`` are one split), or a ConfigError naming the
    splits that hold questions."""
    present = sorted(name for name, rows in dataset.manifest.rows.questions.items() if rows)
    for name in (asked, canonical_split(asked)):  # val means validation
        if name in present:
            return name
    raise ConfigError("--split", f"the dataset has no split '{asked}'", allowed=", ".join(present))


def goals_of(dataset: Dataset, records: list[QARecord], predictions: Predictions) -> dict[str, Point] | None:
    """Each episode's goal, where some prediction carries a final position (read only then)."""
    from eqagen.outputs.readers import iter_episodes
    from eqagen.scoring.navigation import goal_position

    wanted = {r.episode_id for r in records if (p := predictions.rows.get(r.question_id)) and p.final_position}
    if not wanted:
        return None
    return {ep.episode_id: goal_position(ep) for ep in iter_episodes(dataset) if ep.episode_id in wanted}


def run_judge(args: argparse.Namespace, records: list[QARecord], predictions: Predictions, seed: int) -> JudgeRun:
    from eqagen.scoring.judge import judge_answers, judge_config, read_prompt

    if predictions.shape != "answer":
        raise ConfigError("--judge", f"marks free-form answers, and {predictions.path} holds '{predictions.shape}' "
                          "predictions", allowed="an 'answer' predictions file")  # fmt: skip
    config = judge_config(args.judge, args.base_url, args.judge_cache, args.concurrency)
    prompt = read_prompt(args.judge_prompt)
    items = [(r, predictions.rows[r.question_id].answer or "") for r in records if r.question_id in predictions.rows]
    return asyncio.run(judge_answers(items, config, prompt, seed))


def score(args: argparse.Namespace) -> dict[str, Any]:
    import pyarrow.compute as pc

    from eqagen.outputs.dataset import open_dataset
    from eqagen.outputs.readers import read_questions
    from eqagen.outputs.schemas import QUESTIONS_SCHEMA
    from eqagen.scoring.predictions import read_predictions
    from eqagen.scoring.readback import Vocabulary
    from eqagen.scoring.records import Scorer
    from eqagen.scoring.report import check_ids, score_report
    from eqagen.scoring.similarity import make_similarity

    dataset = open_dataset(args.dataset)
    predictions = read_predictions(args.predictions)
    split = split_name(dataset, args.split)
    table = dataset.read("questions", ["question_id", "split", "scene_id"])
    dataset_splits = dict(zip(table["question_id"].to_pylist(), table["split"].to_pylist()))
    seen = set(pc.filter(table["scene_id"], pc.equal(table["split"], "train")).to_pylist())
    records = read_questions(dataset, split)
    check_ids(predictions, split, {r.question_id for r in records}, dataset_splits)
    columns = ["answer_type", "structured_answer"]
    vocabulary = Vocabulary.of(
        dataset.read("questions", columns) if predictions.shape == "answer" else QUESTIONS_SCHEMA.empty_table()
    )
    scorer = Scorer(predictions.shape, vocabulary, make_similarity(args.similarity),
                    goals_of(dataset, records, predictions))  # fmt: skip
    judge = run_judge(args, records, predictions, dataset.manifest.seed) if args.judge else None
    about = {"dataset": str(args.dataset), "split": split, "config_hash": dataset.manifest.config_hash}
    return score_report(records, predictions, scorer, seen, about, judge)


def run_score(args: argparse.Namespace) -> int:
    from eqagen.outputs.atomic import write_text_atomic
    from eqagen.outputs.folder import refuse_inside_inputs
    from eqagen.outputs.score_report import write_score_report

    for option, path in (("--json", args.json), ("--report", args.report), ("--judge-cache", args.judge_cache)):
        if path is not None and str(path) != "-":
            refuse_inside_inputs(path, [args.dataset], option)
    report = score(args)
    text = json.dumps(report, indent=2)
    if args.json is not None and str(args.json) != "-":
        write_text_atomic(args.json, text + "\n")
    if args.report is not None:
        write_score_report(report, args.report)
    print(text if str(args.json) == "-" else json.dumps({k: report[k] for k in SUMMARY_KEYS}, indent=2))
    return 0
