"""The audit files every writer of a dataset directory leaves: ``stats.json``, the card, the report.

``eqagen generate``, ``eqagen resplit`` and ``eqagen paraphrase`` all end here, so the three files are
always made the same way from the shards just written. What is per shard (counts, sums, word counts, the
episodes' numbers) comes as one partial per shard (:mod:`eqagen.curation.audit`): made where the shard was
written (a ``generate`` run's shard units, on its workers) or here from the staged file, then merged. What
needs every row runs as units of its own when an executor is given, side by side: the blind text models
(one per model and query type), the report's plots and its example questions' pictures (one each); the rest
of the criteria are computed here meanwhile.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from concurrent.futures import Executor, Future
from pathlib import Path
from typing import Any

import pyarrow as pa

from eqagen.curation.audit import (
    EPISODE_COLUMNS,
    QUESTION_COLUMNS,
    EpisodeParts,
    QuestionPartial,
    episode_partial,
    episode_stats_from,
    merge_episodes,
    merge_questions,
    question_partial,
    question_stats_from,
)
from eqagen.curation.criteria import (
    answer_contents,
    blind_setup,
    method_criteria,
    text_model_answers,
    text_model_fits,
)
from eqagen.outputs.card import render_card, write_card
from eqagen.outputs.dataset import read_shard
from eqagen.outputs.manifest import write_json_atomic
from eqagen.outputs.picture import drawn_pictures, example_ids, example_picture, example_pictures
from eqagen.outputs.report import draw_plot, plot_specs, write_report
from eqagen.outputs.schemas import EPISODES_SCHEMA, QUESTIONS_SCHEMA
from eqagen.outputs.shards import ShardInfo

ShardPartial = QuestionPartial | EpisodeParts


def shard_partial(path: Path, table: str) -> ShardPartial:
    """The partial statistics of one staged shard of ``table`` (questions or episodes), read back."""
    if table == "questions":
        return question_partial(read_shard(path, QUESTION_COLUMNS))
    return episode_partial(read_shard(path, EPISODE_COLUMNS))


def table_of(info: ShardInfo) -> str:
    return info.path.split("/")[0]


class Results(Mapping):
    """Futures' results by key, each waited for only when it is read."""

    def __init__(self, futures: dict[Any, Future]):
        self.futures = futures

    def __getitem__(self, key: Any) -> Any:
        return self.futures[key].result()

    def __iter__(self) -> Iterator[Any]:
        return iter(self.futures)

    def __len__(self) -> int:
        return len(self.futures)


def write_audit_files(
    out_dir: Path,
    shards: list[ShardInfo],
    funnel: dict[str, Any],
    stage_stats: dict[str, Any],
    manifest: dict[str, Any],
    report: bool = True,
    partials: Mapping[str, ShardPartial] | None = None,
    executor: Executor | None = None,
) -> dict[str, Any]:
    """Write stats.json, the dataset card (README.md) and, unless ``report`` is false, report.html for the
    ``shards`` staged in ``out_dir``; returns the statistics written. ``partials``: shards' partial statistics
    by path, where their writer made them (the others are read back here)."""
    out_dir, partials = Path(out_dir), partials or {}
    ordered = sorted(shards, key=lambda s: s.path)  # path order: as a reader of the dataset meets them
    parts = [partials[s.path] if s.path in partials else shard_partial(out_dir / s.path, table_of(s)) for s in ordered]
    questions = merge_questions(p for p in parts if isinstance(p, QuestionPartial))
    episodes = merge_episodes(p for p in parts if isinstance(p, EpisodeParts))
    dataset = {"questions": question_stats_from(questions), "episodes": episode_stats_from(episodes)}
    stats = {"funnel": funnel, "stages": stage_stats or {}, "dataset": dataset}
    rows = pa.concat_tables([p.criteria_rows for p in parts if isinstance(p, QuestionPartial)])
    contents = answer_contents(rows)
    text_answers, plots, pictures = None, None, None
    paths = [s.path for s in ordered]
    # The blind models' fits, the report's plots and its example pictures as units, side by side, while the
    # rest is computed here.
    if executor is not None:
        fits = text_model_fits(rows, blind_setup(rows, contents))  # the largest first
        text_answers = Results({key: executor.submit(text_model_answers, *fit) for key, fit in fits.items()})
        if report:
            plots = [executor.submit(draw_plot, spec) for spec in plot_specs(stats)]
            pictures = [executor.submit(example_picture, out_dir, paths, *ids) for ids in example_ids(stats)]
    criteria = method_criteria(rows, manifest.get("config"), text_answers, contents)
    stats = {**stats, "dataset": {**dataset, "criteria": criteria}}
    write_json_atomic(stats, out_dir / "stats.json")
    write_card(render_card(stats, manifest, QUESTIONS_SCHEMA, EPISODES_SCHEMA), out_dir)
    if report:
        drawn = [plot.result() for plot in plots] if plots is not None else None
        if pictures is not None:
            examples = drawn_pictures(p.result() for p in pictures)
        else:
            examples = example_pictures(out_dir, paths, stats)
        write_report(stats, out_dir / "report.html", drawn, manifest=manifest, pictures=examples)
    return stats
