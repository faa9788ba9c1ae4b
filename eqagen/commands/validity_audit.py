"""The validity rules checked on a dataset from its shards alone (``benchmarks/check_validity.py``,
``eqagen audit --rules``).

Each question's program is read back from the questions shards and evaluated again on its episode (read
from the episodes shards) with the plain evaluator; every rule of :mod:`eqagen.predicates.validity` is
judged on that evaluation, dropping each filter and evaluating again (no shortcut of the sampler). Two
checks of the data come with them: ``stale_answer`` (the stored structured answer is not the
re-evaluated one: the rules then judged another answer than the reader's) and, per episode,
``event_ordinals`` (a stored event ordinal is not ``eqagen.core.number_events``' count, which names
events in questions).
"""

from __future__ import annotations

import time
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from eqagen.core import AnswerGroup, DataFileError, Episode, QARecord, number_events
from eqagen.outputs.readers import DatasetSource, as_dataset, read_episodes, read_questions
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.validity import RULES, groups_for, violations
from eqagen.templates.answers import evaluate_context

DATA_CHECKS = ("stale_answer", "event_ordinals")
REASONS = (*RULES, *DATA_CHECKS)


@dataclass(frozen=True)
class Violation:
    reason: str
    episode_id: str
    family: str  # the world family
    query_type: str  # "-" for an episode's own check
    question_id: str  # "" for an episode's own check
    text: str  # the question, or the event numbered otherwise
    answer: str


@dataclass
class ValidityReport:
    """Every violation found, with counts per reason, per (reason, world family) and per (reason, query
    type)."""

    questions: int = 0
    episodes: int = 0
    seconds: float = 0.0
    violations: list[Violation] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.violations

    def counts(self, *by: str) -> Counter[tuple[str, ...]]:
        """Violations counted per value of the named Violation fields (``counts("reason", "family")``)."""
        return Counter(tuple(getattr(v, name) for name in by) for v in self.violations)

    def examples(self, reason: str, n: int) -> list[Violation]:
        return [v for v in self.violations if v.reason == reason][:n]


def question_anchor(record: QARecord) -> tuple[float, float, float] | None:
    """The anchor a grounded record names: its one group's (None when ungrounded)."""
    return record.structured_answer[0].anchor if record.grounded else None


def answer_rows(groups: list[AnswerGroup]) -> list[tuple]:
    """A structured answer as comparable rows: anchors, values and the entities named (the predicate is
    text, whose form is the templates' business, not the answer's)."""
    return sorted((g.anchor, g.value, tuple(sorted((i.entity, i.type) for i in g.result))) for g in groups)


def record_reasons(ctx: EpisodeContext, record: QARecord) -> list[str]:
    """The rules a stored question violates, and ``stale_answer`` when its stored answer is not the program's."""
    anchor = question_anchor(record)
    groups = evaluate_context(ctx, record.program)
    stale = answer_rows(groups_for(groups, anchor)) != answer_rows(record.structured_answer)
    if not groups_for(groups, anchor):
        return ["stale_answer"]
    return violations(ctx, record.program, anchor) + (["stale_answer"] if stale else [])


def misnumbered_events(episode: Episode) -> list[str]:
    """The episode's events whose stored ordinal is not ``number_events``' count, as text."""
    raw = [(e.t, e.kind, e.entity, e.target) for e in episode.events]
    counted = {(e.t, e.kind, e.entity, e.target): e.ordinal for e in number_events(raw, episode.entities.type)}
    return [
        f"{e.kind} {episode.entities.type[e.entity]} at step {e.t}: stored #{e.ordinal}, counted #{counted[raw[i]]}"
        for i, e in enumerate(episode.events)
        if e.entity >= 0 and counted[raw[i]] != e.ordinal
    ]


def check_output(source: DatasetSource) -> ValidityReport:
    """Judge every question of an output directory or an opened dataset (read with ``eqagen.outputs.readers``
    only; the folder is verified once)."""
    start = time.perf_counter()
    dataset = as_dataset(source)
    out_dir = dataset.root
    episodes = read_episodes(dataset)
    by_episode: dict[str, list[QARecord]] = defaultdict(list)
    for record in read_questions(dataset):
        by_episode[record.episode_id].append(record)
    report = ValidityReport(episodes=len(episodes))
    for episode_id, episode in episodes.items():
        found = [
            Violation("event_ordinals", episode_id, episode.family, "-", "", text, "")
            for text in misnumbered_events(episode)
        ]
        ctx = EpisodeContext(episode)
        for r in by_episode.pop(episode_id, []):
            report.questions += 1
            found += [
                Violation(reason, episode_id, episode.family, r.query_type, r.question_id, r.question, r.answer)
                for reason in record_reasons(ctx, r)
            ]
        report.violations += found
    if by_episode:
        missing = ", ".join(sorted(by_episode)[:3])
        raise DataFileError(
            out_dir,
            "episode_id",
            f"questions of {len(by_episode)} episodes not in the episodes shards ({missing})",
            "regenerate the dataset: every question's episode must be in its episodes shards",
        )
    report.seconds = time.perf_counter() - start
    return report


def report_lines(report: ValidityReport, max_examples: int = 3) -> list[str]:
    """The report as text: a line per reason (with counts per family and query type) and a few examples."""
    lines = [f"{report.questions} questions of {report.episodes} episodes checked in {report.seconds:.1f} s"]
    counts = report.counts("reason")
    by_family, by_query = report.counts("reason", "family"), report.counts("reason", "query_type")
    for reason in REASONS:
        n = counts.get((reason,), 0)
        lines.append(f"{'ok    ' if n == 0 else 'FAILED'}  {reason}: {n}")
        if n:
            fams = ", ".join(f"{f} {c}" for (r, f), c in sorted(by_family.items()) if r == reason)
            queries = ", ".join(f"{q} {c}" for (r, q), c in sorted(by_query.items()) if r == reason)
            lines.append(f"        by family: {fams}; by query: {queries}")
            lines += [
                f"        e.g. {v.text!r} -> {v.answer!r} ({v.episode_id})"
                for v in report.examples(reason, max_examples)
            ]
    return lines
