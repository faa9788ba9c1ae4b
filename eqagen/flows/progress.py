"""Progress on stderr while a run runs (the batched stages' bar, then one line per step of the run's own
process as it starts and ends) and the end-of-run summary on stdout, via rich."""

from __future__ import annotations

from typing import Any, TextIO

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn
from rich.table import Table

from eqagen.config import PipelineConfig
from eqagen.flows.pipeline import RunSummary

# The stages in the order a run runs them (the summary's table lists them so).
STAGE_ORDER = ("plan", "episodes", "programs", "checkpoint", "ask", "read", "balance", "compose", "split",
               "paraphrase", "write", "audit")  # fmt: skip


# The steps of a run's own process after the batches (eqagen.flows.pipeline.finish's timeline sections), as
# the progress display names them; other sections (a batch, the plan) are not shown as steps.
STEP_LABELS = {
    "ask": "ask the questions in other scenes",
    "read": "read the candidates' keys",
    "select": "select: balance, compose, split",
    "balance": "  balance",
    "compose": "  compose",
    "split": "  split",
    "write": "paraphrase and write the shards",
    "paraphrase": "  paraphrase",
    "audit": "audit: statistics, criteria, report, card",
}


def step_label(name: str) -> str | None:
    """The line of a step (:data:`STEP_LABELS`; an ask round under the ask); None: not shown."""
    return f"  {name}" if name.startswith("ask round ") else STEP_LABELS.get(name)


class BatchProgress:
    """``with BatchProgress(n, completed=k) as p: ... p.advance()`` once per batch finished by this run;
    the bar starts at the ``k`` batches an earlier run had checkpointed. :meth:`stage` adds a line per step
    after the batches, with its time running, then its seconds."""

    def __init__(self, total: int, completed: int = 0, enabled: bool = True, file: TextIO | None = None):
        """``file``: where the bar is drawn (default: standard error), on a terminal only: written to a
        file or a pipe it would be a last line before any error line."""
        console = Console(file=file, stderr=file is None)
        self.enabled = enabled and console.is_terminal
        self.progress = Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[unit]}"),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=console,
            disable=not self.enabled,
            redirect_stdout=False,  # nothing else is printed during the run (stderr goes to the run's log)
            redirect_stderr=False,
        )
        self.task = self.progress.add_task("episodes + programs", total=total, completed=completed, unit="batches")
        self.steps: dict[str, Any] = {}

    def advance(self, _: Any = None) -> None:
        self.progress.advance(self.task)

    def stage(self, name: str, seconds: float | None, detail: str = "") -> None:
        """A step of the run started (``seconds`` None: a line with its time running and what it is doing,
        ``detail``) or ended (the line completed, with what it did in counts); a step told only once done (a
        stage inside another) gets its line then. Sections that are no step (:data:`STEP_LABELS`) are not shown."""
        label = step_label(name)
        if label is None:
            return
        if seconds is None and name in self.steps:  # running: what it has done so far
            self.progress.update(self.steps[name], unit=detail)
            return
        if seconds is None:
            self.steps[name] = self.progress.add_task(label, total=None, unit=detail)
            return
        if name not in self.steps:
            self.steps[name] = self.progress.add_task(label, total=None, unit="")
        unit = f"{detail}, {seconds:.1f} s" if detail else f"{seconds:.1f} s"
        self.progress.update(self.steps[name], total=1, completed=1, unit=unit)

    def __enter__(self) -> BatchProgress:
        self.progress.start()
        return self

    def __exit__(self, exc_type: object, *exc: object) -> None:
        if exc_type is not None:  # a failed run: the error line, not a half-full bar, comes first
            self.progress.live.transient = True
        self.progress.stop()


def stage_table(summary: RunSummary) -> Table:
    table = Table(title="time per stage", show_edge=False)
    table.add_column("stage")
    table.add_column("seconds", justify="right")
    if summary.server_seconds:
        table.add_row("prefect server start", f"{summary.server_seconds:.2f}")
    order = {name: i for i, name in enumerate(STAGE_ORDER)}
    for stage, secs in sorted(summary.stage_seconds.items(), key=lambda kv: order.get(kv[0], len(order))):
        table.add_row(stage, f"{secs:.2f}")
    table.add_row("waiting: nothing ran (imports, Prefect)", f"{summary.orchestration_seconds:.2f} "
                  f"({summary.orchestration_share:.0%})")  # fmt: skip
    table.add_row("serial: fewer workers busy than the run has", f"{summary.serial_seconds:.2f}")
    table.add_row("[bold]wall", f"[bold]{summary.wall_seconds:.2f}")
    return table


def megabytes(n_bytes: int) -> str:
    return f"{n_bytes / 1e6:.1f} MB"


def print_summary(summary: RunSummary, config: PipelineConfig, elapsed: float, state_bytes: int = 0) -> None:
    """The run's counts, seconds per stage, the layout, and what its checkpoints weigh (``state_bytes``)."""
    console = Console()
    c = summary.counts
    per_split = ", ".join(f"{k} {v:,}" for k, v in c.get("questions", {}).items())
    resumed = f" ({summary.batches_resumed} resumed from checkpoints)" if summary.batches_resumed else ""
    console.print(
        f"[bold]eqagen generate {config.name}[/] seed {config.seed}, runner {summary.runner}: "
        f"{summary.batches_total} batches{resumed}"
    )
    console.print(
        f"{c.get('episodes', 0):,} episodes ({c.get('steps', 0):,} steps), {c.get('candidates', 0):,} candidate "
        f"questions, {c.get('asks', 0):,} asks in other scenes -> {c.get('questions_total', 0):,} questions "
        f"({per_split})"
    )
    if c.get("criteria_missed"):  # the dataset is written as asked, but it is no benchmark by the method's rules
        console.print(f"[bold]method criteria missed: {', '.join(c['criteria_missed'])}[/] "
                      f"(`eqagen audit {summary.out_dir}` says by how much)")  # fmt: skip
    console.print(stage_table(summary))
    console.print(f"done in {elapsed:.1f} s; output: {summary.out_dir}")
    console.print("  questions/<split>-NNNNN-of-MMMMM.parquet, episodes/episodes-NNNNN-of-MMMMM.parquet, "
                  "manifest.json, stats.json, report.html, README.md")  # fmt: skip
    if state_bytes:
        console.print(f"checkpoints: {megabytes(state_bytes)} in {summary.out_dir}/.eqagen; they let a rerun resume or "
                      "redo the dataset-level stages; `--clean` removes them after the run")  # fmt: skip
    else:
        console.print(f"checkpoints: none kept in {summary.out_dir}/.eqagen (removed by --clean)")
