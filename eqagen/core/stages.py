"""The contract of a dataset-level stage, and the statistics that fall out of running stages.

A stage (datatrove's step) is ``run(table, section, seed) -> (table, stats)``: it reads the columns it
declares (:attr:`DatasetStage.reads`), adds or replaces the ones it declares it writes, takes its own typed
config section (:attr:`DatasetStage.section`) and counts the rows it drops by reason in
``stats["rejected"]``. :meth:`DatasetStage.run` checks the contract around the call and returns a
:class:`StageReport`; a :class:`StageLog` collects the reports of a run in order, and its ``funnel`` and
``stages`` are what ``stats.json`` records: no caller adds them up by hand.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

import pyarrow as pa

Section = TypeVar("Section")


@dataclass(frozen=True)
class StageReport:
    """What one stage did: rows in and out, the rows it dropped by reason, its own statistics, its time."""

    name: str
    implementation: str
    rows_in: int
    rows_out: int
    stats: dict[str, Any] = field(default_factory=dict)
    seconds: float = 0.0

    @property
    def rejected(self) -> dict[str, int]:
        return dict(self.stats.get("rejected", {}))

    def funnel_entry(self) -> dict[str, Any]:
        return {"in": self.rows_in, "out": self.rows_out, "rejected": self.rejected}

    def stats_entry(self) -> dict[str, Any]:
        return {**self.stats, "implementation": self.implementation, "rows_in": self.rows_in, "rows_out": self.rows_out}


@dataclass
class StageLog:
    """The reports of one run's stages, in the order they ran: the funnel (rows in, out and dropped by
    reason per stage) and each stage's statistics, as ``stats.json`` holds them. A derived dataset starts
    from its input's log (:meth:`inherited`) and records the stage that made it over the input's entry."""

    funnel: dict[str, dict[str, Any]] = field(default_factory=dict)
    stages: dict[str, Any] = field(default_factory=dict)
    seconds: dict[str, float] = field(default_factory=dict)  # this run's stages only

    def record(self, report: StageReport) -> StageReport:
        self.funnel[report.name] = report.funnel_entry()
        self.stages[report.name] = report.stats_entry()
        self.seconds[report.name] = report.seconds
        return report

    def note(self, name: str, value: Any) -> None:
        """Statistics of the run that belong to no one stage (its timings)."""
        self.stages[name] = value

    @classmethod
    def inherited(cls, stats: dict[str, Any]) -> StageLog:
        """The log a derived dataset keeps from its input's ``stats.json`` (empty parts where it has none)."""
        funnel, stages = stats.get("funnel"), stats.get("stages")
        return cls(dict(funnel) if isinstance(funnel, dict) else {}, dict(stages) if isinstance(stages, dict) else {})


TableStage = Callable[[pa.Table, Any, int], "tuple[pa.Table, dict[str, Any]]"]


@dataclass(frozen=True)
class DatasetStage(Generic[Section]):
    """A dataset-level stage: its function, the columns it reads and writes, and its config section's type."""

    name: str
    fn: TableStage
    reads: tuple[str, ...]
    writes: tuple[str, ...]
    section: type[Section]

    @property
    def implementation(self) -> str:
        return f"{self.fn.__module__}:{self.fn.__name__}"

    def run(self, table: pa.Table, section: Section, seed: int) -> tuple[pa.Table, StageReport]:
        """The stage on ``table``, its contract checked: the columns it reads are there, the section has its
        type, and the columns it writes (and every column it was given) are there afterwards."""
        self._require(table, self.reads, "reads")
        if not isinstance(section, self.section):
            raise TypeError(f"the {self.name} stage takes a {self.section.__name__}, got {type(section).__name__}")
        start = time.perf_counter()
        out, stats = self.fn(table, section, seed)
        seconds = time.perf_counter() - start
        self._require(out, (*table.column_names, *self.writes), "keeps or writes")
        return out, StageReport(self.name, self.implementation, table.num_rows, out.num_rows, stats, seconds)

    def _require(self, table: pa.Table, columns: tuple[str, ...], verb: str) -> None:
        missing = [c for c in columns if c not in table.column_names]
        if missing:
            raise ValueError(f"the {self.name} stage {verb} columns {missing}, which the table lacks")
