"""``eqagen show``: a question's episode drawn from above, with its anchors and answer objects in their
colours, for each world family; an unknown question id is one line and exit 2."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest
from matplotlib.image import imread

from eqagen.outputs.picture import COLORS, draw_question, show_question
from tests.outputs.model_fixtures import episodes_and_records, write_family_dataset


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_family_dataset(tmp_path_factory.mktemp("families") / "ds")


def share_of(pixels: np.ndarray, hex_colour: str) -> float:
    rgb = np.array([int(hex_colour[i : i + 2], 16) for i in (1, 3, 5)]) / 255
    return float(np.all(np.abs(pixels[..., :3] - rgb) < 0.03, axis=-1).mean())


def plotted(ax, marker: str) -> set[tuple[float, float]]:
    """The (x, z) points drawn with one marker on the map."""
    return {
        (round(float(x), 2), round(float(z), 2))
        for line in ax.lines
        if line.get_marker() == marker
        for x, z in zip(line.get_xdata(), line.get_ydata())
    }


@pytest.mark.parametrize("family", ["household", "navigation", "blockworld"])
def test_show_draws_the_path_the_anchor_and_the_answer_objects(dataset, tmp_path, family):
    """The map holds the path from start to end, a cross at every failed action, a star at each anchor and a
    ring at each answer object, where the episode and the structured answer put them; the PNG is written."""
    episodes, records = episodes_and_records()
    mine = [r for r in records if r.family == family]
    record = next((r for r in mine if r.grounded), mine[0])
    episode = next(e for e in episodes if e.episode_id == record.episode_id)
    ax = draw_question(record, episode).axes[0]
    pose = episode.steps.pose
    assert plotted(ax, "o") >= {(round(float(pose[0, 0]), 2), round(float(pose[0, 2]), 2))}
    failed = {(round(float(x), 2), round(float(z), 2)) for x, z in pose[~episode.steps.success][:, [0, 2]]}
    assert plotted(ax, "x") == failed
    assert plotted(ax, "*") == {(g.anchor[0], g.anchor[2]) for g in record.structured_answer if g.anchor}
    rings = {(r.position[0], r.position[2]) for g in record.structured_answer for r in g.result}
    assert rings and rings <= plotted(ax, "o")
    out = tmp_path / f"{family}.png"
    show_question(dataset, record.question_id, out)
    pixels = imread(out)
    assert pixels.shape[0] > 600 and share_of(pixels, COLORS["answer"]) > 0.0001


def test_show_refuses_an_unknown_question_in_one_line(dataset, tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "eqagen.cli", "show", str(dataset), "nope", "--out", str(tmp_path / "x.png")],
        capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert proc.returncode == 2 and "no question 'nope'" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1 and not (tmp_path / "x.png").exists()
