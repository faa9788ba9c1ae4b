"""A top-down picture of the episode a question is about (``eqagen show DIR QUESTION_ID --out FILE.png``).

The episode frame seen from above: +x to the right, +z up the page (the agent starts at the origin facing
up). Drawn, bottom to top: the rooms or structures (regions' footprints, named), every object the agent saw
(a grey dot where it was first seen), the agent's path (a line from the start, a circle, to the end, a
square; a red cross where an action failed), the events (a purple diamond where the agent stood, named),
the question's anchors (orange stars, the coordinates the question names) and its answer objects (green
rings, named as the answer names them). The question and its answer are the title.

The one drawing serves ``eqagen show`` (:func:`show_question`) and report.html, which shows it beside each
example question (:func:`example_picture`, one unit each on a run's workers, like the report's plots).
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from eqagen.core import DataFileError, Episode, QARecord
from eqagen.outputs.atomic import atomic_path
from eqagen.outputs.readers import episode_from_row, iter_episodes, read_questions
from eqagen.outputs.report import data_uri, png_bytes, pyplot
from eqagen.paraphrase.tables import records_from_table

COLORS = {"path": "#4C72B0", "failed": "#C44E52", "object": "#9A9A9A", "event": "#8172B2", "anchor": "#DD8452",
          "answer": "#55A868"}  # fmt: skip
MAX_EVENT_LINES = 40  # events listed beside the map; the rest are counted
LABEL_GAP = 0.2  # m: an object within this of one already named stays unnamed (the labels would overlap)


def question_and_episode(out_dir: Path, question_id: str) -> tuple[QARecord, Episode]:
    """The question with that id and its episode, from a verified dataset folder."""
    record = next((q for q in read_questions(out_dir) if q.question_id == question_id), None)
    if record is None:
        raise DataFileError(out_dir, "question_id", f"no question '{question_id}'", "take an id from the questions "
                            "table (eqagen export DIR --format jsonl)")  # fmt: skip
    episode = next((e for e in iter_episodes(out_dir) if e.episode_id == record.episode_id), None)
    if episode is None:
        raise DataFileError(out_dir, "episodes", f"no episode '{record.episode_id}' for question {question_id}")
    return record, episode


def first_seen_positions(episode: Episode) -> tuple[np.ndarray, np.ndarray]:
    """The entities the agent saw and where each was when first seen (``[M]``, ``[M, 3]``)."""
    visible = episode.timeline.field("visible").astype(bool)
    seen = np.flatnonzero(visible.any(axis=0))
    first = visible[:, seen].argmax(axis=0)
    return seen, episode.timeline.field("position")[first, seen]


def draw_regions(ax, episode: Episode) -> None:
    """Each room or structure a pale colour of its own with its outline and name (footprints may overlap)."""
    plt = pyplot()
    palette = plt.get_cmap("Pastel1").colors
    for i, r in enumerate(episode.regions):
        x0, _, z0, x1, _, z1 = r.footprint
        ax.add_patch(plt.Rectangle((x0, z0), x1 - x0, z1 - z0, facecolor=palette[i % len(palette)], alpha=0.45,
                                   edgecolor="#666666", linewidth=0.8, zorder=0))  # fmt: skip
        ax.text((x0 + x1) / 2, (z0 + z1) / 2, r.name or r.category, ha="center", va="center", fontsize=8,
                color="#444444", zorder=1)  # fmt: skip


def draw_objects(ax, episode: Episode, answered: set[str]) -> None:
    """Every object seen, a grey dot where first seen, named by its type unless one near it is named or it is
    an answer object (``answered``: instance ids, named in the answer's colour instead)."""
    seen, positions = first_seen_positions(episode)
    if not len(seen):
        return
    ax.plot(positions[:, 0], positions[:, 2], ".", color=COLORS["object"], markersize=6, zorder=2, label="object seen")
    named: list[tuple[float, float]] = []
    for e, (x, _, z) in zip(seen.tolist(), positions.tolist()):
        if episode.entities.instance_id[e] in answered:
            continue
        if all(np.hypot(x - a, z - b) >= LABEL_GAP for a, b in named):
            named.append((x, z))
            ax.annotate(episode.entities.type[e], (x, z), xytext=(3, 2), textcoords="offset points", fontsize=5.5,
                        color="#777777", zorder=2)  # fmt: skip


def draw_path(ax, episode: Episode) -> None:
    pose = episode.steps.pose
    ax.plot(pose[:, 0], pose[:, 2], color=COLORS["path"], linewidth=1.2, zorder=3, label="agent's path")
    ax.plot(pose[0, 0], pose[0, 2], "o", color=COLORS["path"], markersize=8, zorder=4, label="start")
    ax.plot(pose[-1, 0], pose[-1, 2], "s", color=COLORS["path"], markersize=8, zorder=4, label="end")
    failed = np.flatnonzero(~episode.steps.success)
    if failed.size:
        ax.plot(pose[failed, 0], pose[failed, 2], "x", color=COLORS["failed"], markersize=8, markeredgewidth=2,
                zorder=5, label=f"failed action ({failed.size})")  # fmt: skip


def draw_events(ax, episode: Episode) -> list[str]:
    """A numbered diamond where the agent stood for each spot with events; returns the lines that list them
    (``1  t=49 open Microwave#1``), drawn beside the map rather than on it, where they would overlap."""
    events = [e for e in episode.events if e.entity >= 0]
    if not events:
        return []
    pose = episode.steps.pose
    at: dict[tuple[float, float], list[str]] = {}
    for e in events:
        spot = (round(float(pose[e.t, 0]), 2), round(float(pose[e.t, 2]), 2))
        at.setdefault(spot, []).append(f"t={e.t} {e.kind} {episode.entities.instance_id[e.entity]}")
    spots = np.array(list(at))
    ax.plot(spots[:, 0], spots[:, 1], "D", color=COLORS["event"], markersize=5, zorder=5, label="events (listed)")
    lines = []
    for n, ((x, z), names) in enumerate(at.items(), start=1):
        ax.annotate(str(n), (x, z), xytext=(4, 3), textcoords="offset points", fontsize=7, fontweight="bold",
                    color=COLORS["event"], zorder=6)  # fmt: skip
        lines += [f"{n}  {names[0]}", *(f"    {name}" for name in names[1:])]
    return lines


def draw_answer(ax, record: QARecord) -> None:
    anchors = [g.anchor for g in record.structured_answer if g.anchor is not None]
    if anchors:
        a = np.array(anchors)
        where = "; ".join(f"({x:.2f}, {y:.2f}, {z:.2f})" for x, y, z in anchors[:3])
        ax.plot(a[:, 0], a[:, 2], "*", color=COLORS["anchor"], markersize=16, markeredgecolor="black",
                markeredgewidth=0.5, zorder=7, label=f"anchor {where}")  # fmt: skip
    groups = record.structured_answer
    items = [(r, g.value if len(groups) > 1 else "") for g in groups for r in g.result]
    if items:
        p = np.array([r.position for r, _ in items])
        ax.plot(p[:, 0], p[:, 2], "o", markerfacecolor="none", markeredgecolor=COLORS["answer"], markersize=13,
                markeredgewidth=2.2, zorder=8, label="answer object")  # fmt: skip
        clusters: list[list[float]] = []  # [x, z, lines]: answer objects within 2 * LABEL_GAP share one label column
        for r, group_value in items:  # with several groups, each item says which answer it belongs to
            text = r.caption + (f": {r.value}" if r.value else "") + (f" [{group_value}]" if group_value else "")
            x, z = r.position[0], r.position[2]
            home = next((c for c in clusters if np.hypot(x - c[0], z - c[1]) < 2 * LABEL_GAP), None)
            if home is None:
                home = [x, z, 0]
                clusters.append(home)
            ax.annotate(text, (home[0], home[1]), xytext=(8, 6 + 11 * home[2]), textcoords="offset points", fontsize=8,
                        fontweight="bold", color="#2D6B3A", zorder=9)  # fmt: skip
            home[2] += 1


def title(record: QARecord) -> str:
    wrap = textwrap.TextWrapper(width=90)
    return "\n".join([*wrap.wrap(f"Q: {record.question}"), *wrap.wrap(f"A: {record.answer}")])


def draw_question(record: QARecord, episode: Episode):
    plt = pyplot()
    fig, ax = plt.subplots(figsize=(9, 9))
    draw_regions(ax, episode)
    draw_objects(ax, episode, {r.entity for g in record.structured_answer for r in g.result})
    draw_path(ax, episode)
    events = draw_events(ax, episode)
    draw_answer(ax, record)
    ax.set_aspect("equal", adjustable="datalim")
    ax.set_xlabel("x (m): right of the start")
    ax.set_ylabel("z (m): ahead of the start")
    ax.grid(True, linewidth=0.3, alpha=0.5)
    ax.set_title(title(record), fontsize=9.5, loc="left")
    ax.legend(loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8, frameon=False)
    if events:
        shown = events[:MAX_EVENT_LINES] + (
            [f"... {len(events) - MAX_EVENT_LINES} more"] if len(events) > MAX_EVENT_LINES else []
        )
        ax.text(1.02, 0.62, "events where the agent stood:\n" + "\n".join(shown), transform=ax.transAxes, fontsize=7,
                va="top", color=COLORS["event"], family="monospace")  # fmt: skip
    fig.text(0.01, 0.005, f"{episode.family} / {episode.backend} / {episode.scene_id} / question {record.question_id}",
             fontsize=7, color="#777777")  # fmt: skip
    return fig


def question_png(record: QARecord, episode: Episode, dpi: int = 110) -> bytes:
    """The picture of question ``record`` in its ``episode`` as PNG bytes (the same bytes each time)."""
    return png_bytes(draw_question(record, episode), dpi)


def show_question(out_dir: Path, question_id: str, dest: Path) -> None:
    """Draw question ``question_id`` of the dataset in ``out_dir`` and write the PNG to ``dest``."""
    record, episode = question_and_episode(out_dir, question_id)
    with atomic_path(Path(dest)) as tmp:
        tmp.write_bytes(question_png(record, episode))


REPORT_DPI = 60  # the report shows a picture per example question: small enough to list them, the labels legible


# Example questions of each query type drawn in report.html: a picture costs about 0.5 s of one core (matplotlib
# laying out its text), so drawing all five examples of each type added about 12 s to the demo's audit.
PICTURED_PER_TYPE = 1


def example_ids(stats: Mapping[str, Any]) -> list[tuple[str, str]]:
    """(question id, episode id) of the example questions report.html draws: the first PICTURED_PER_TYPE
    examples of each query type, in the report's order."""
    examples = stats["dataset"]["questions"].get("examples", {})
    pictured = [[r for r in rows if "episode_id" in r][:PICTURED_PER_TYPE] for rows in examples.values()]
    return [(r["question_id"], r["episode_id"]) for rows in pictured for r in rows]


def first_row(paths: list[Path], column: str, value: str) -> pa.Table | None:
    """The first row of the shards at ``paths`` whose ``column`` is ``value``, as a table, or None (the
    filter reads only the row groups whose statistics may hold it)."""
    for path in paths:
        row = pq.read_table(path, filters=[(column, "==", value)], partitioning=None)
        if row.num_rows:
            return row.slice(0, 1)
    return None


def the_row(paths: list[Path], column: str, value: str) -> pa.Table:
    """:func:`first_row`, or a DataFileError where no row has the value."""
    row = first_row(paths, column, value)
    if row is None:
        raise DataFileError(paths[0].parent if paths else Path("."), column, f"no row with {column} '{value}'")
    return row


def example_picture(out_dir: Path, shards: list[str], question_id: str, episode_id: str) -> tuple[str, str]:
    """(question id, PNG data URI): the picture of one example question, read from the ``shards`` (paths
    relative to ``out_dir``, staged or written) of a dataset folder."""

    def paths(table: str) -> list[Path]:
        return [Path(out_dir) / s for s in shards if s.split("/")[0] == table]

    question = the_row(paths("questions"), "question_id", question_id)
    episode_row = first_row(paths("episodes"), "episode_id", episode_id)
    if question["program"][0].as_py() is None or episode_row is None:
        return question_id, ""  # nothing to draw: a table of synthetic rows (no program, no episode of theirs)
    record = records_from_table(question)[0]
    episode = episode_from_row(episode_row.to_pylist()[0])
    return question_id, data_uri(question_png(record, episode, REPORT_DPI))


def example_pictures(out_dir: Path, shards: list[str], stats: Mapping[str, Any]) -> dict[str, str]:
    """The picture of each example question by question id, drawn here (a run draws them as units)."""
    return drawn_pictures(example_picture(out_dir, shards, q, e) for q, e in example_ids(stats))


def drawn_pictures(pictures: Iterable[tuple[str, str]]) -> dict[str, str]:
    """The pictures by question id, without the questions that had none to draw."""
    return {question_id: uri for question_id, uri in pictures if uri}
