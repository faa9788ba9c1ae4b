"""A small dataset that meets every method criterion by construction, and one plant per criterion.

Written through the project's own writer (``DatasetWriter.seal``),
so its stats.json and manifest are what a run would leave. 40 balance groups of 2 records: every group
has 2 contents once each and one text for both records (so no text-only model beats chance), groups
cycle through the query types (8 each) and a 20-long pattern of filter families that is exactly the
config's family mix; 70/15/15 of the groups are train/val/test, and each held-out group has one record
in a train scene and one in a scene of its own (an unseen share of exactly 0.5).
"""

from __future__ import annotations

from pathlib import Path

from eqagen.core import AnswerGroup, FilterSpec, Paraphrase, Program, QARecord, QuerySpec
from eqagen.core.stages import StageLog
from eqagen.outputs.folder import DatasetWriter
from eqagen.outputs.manifest import DatasetIdentity
from eqagen.outputs.schemas import episodes_table, questions_table
from tests.outputs.builders import make_episode

QUERY_TYPES = ("count", "getLocation", "getProperty", "getState", "listObjects")
# 20 filters in the config's mix: property 0.3, location 0.2, state 0.25, position 0.1, moment 0.15
FAMILY_PATTERN = ("property",) * 6 + ("location",) * 4 + ("state",) * 5 + ("position",) * 2 + ("moment",) * 3
PLANTS = ("unseen_share", "content_balance", "mix", "blind_baselines")
# one filter per program, none grounded, no situation: the mix the records below keep
CONFIG = {
    "generation": {"family": "household"},
    "split": {"unseen_fraction": 0.5},
    "questions": {
        "n_filters_mix": {1: 1.0},
        "grounded_share": 0.0,
        "family_mix": {
            "property": 0.3,
            "location": 0.2,
            "state": 0.25,
            "position": 0.1,
            "moment": 0.15,
            "situation": 0,
        },
    },
}


def split_of(group: int) -> str:
    slot = group % 20
    return "train" if slot < 14 else "validation" if slot < 17 else "test"


def scene_of(group: int, member: int, plant: str | None) -> str:
    held_out_member = split_of(group) != "train" and member == 1 and plant != "unseen_share"
    return f"unseen-{group}" if held_out_member else f"seen-{group if split_of(group) == 'train' else 0}"


def answer_values(group: int, member: int, plant: str | None) -> list[str]:
    """Contents "1" and "2"; the content plant repeats "1" over two anchors ("1 | 1", the same content)."""
    if plant == "content_balance" and group == 0 and member == 1:
        return ["1", "1"]
    return [str(member + 1)]


def question_text(group: int, member: int, plant: str | None) -> str:
    """One text per group; the blind plant adds a word that names the answer (alpha: 1, beta: 2)."""
    leak = f" {('alpha', 'beta')[member]}" if plant == "blind_baselines" else ""
    return f"How many objects of kind {group}{leak} did you see?"


def record(group: int, member: int, plant: str | None, episode_id: str) -> QARecord:
    family = FAMILY_PATTERN[group % 20]
    if plant == "mix" and family == "moment":
        family = "property"
    values = answer_values(group, member, plant)
    anchors = [None] if len(values) == 1 else [(0.0, 0.0, float(i)) for i in range(len(values))]
    text = question_text(group, member, plant)
    return QARecord(
        episode_id=episode_id,
        scene_id=scene_of(group, member, plant),
        family="household",
        backend="embedded",
        program=Program((FilterSpec(family, "k", "v", {}),), QuerySpec(QUERY_TYPES[group % 5], "", {})),
        structured_question=f"q{group}",
        structured_answer=[AnswerGroup("p", a, (), v) for a, v in zip(anchors, values)],
        answer_type="number",
        answer_key=" | ".join(values),
        question=text,
        answer=" | ".join(values),
        grounded=False,
        category="object recognition",
        express_category="counting",
        balance_key=f"How many objects of kind {group} did you see?",
        query_type=QUERY_TYPES[group % 5],
        split=split_of(group),
        paraphrase=Paraphrase(text.replace("How many", "Count the"), " | ".join(values), "offline", True),
    )


def write_method_dataset(out: Path, plant: str | None = None, groups: int = 40) -> Path:
    members = [(g, m) for g in range(groups) for m in (0, 1)]
    episodes = [make_episode(i, scene_of(g, m, plant), index=i) for i, (g, m) in enumerate(members)]
    records = [record(g, m, plant, e.episode_id) for (g, m), e in zip(members, episodes)]
    writer = DatasetWriter(out, 5000)
    writer.add_questions(questions_table(records))
    writer.add_episodes(episodes_table(episodes))
    writer.seal(DatasetIdentity(CONFIG, 0, "criteria-fixture"), StageLog())
    return out
