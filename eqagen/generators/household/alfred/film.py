"""FILM's language parses: its integer task code, its instruction keys, and matching against ALFRED.

FILM (Min et al., 2022) parses each ALFRED goal instruction into task parameters and stores them per
instruction in ``instruction2_params_*.p`` (here converted to JSON): ``{task_type, object_target,
parent_target, mrecep_target, sliced}``. ``task_type`` is FILM's own integer code; the mapping below is
the one in FILM's ``models/instructions_processed_LP/ALFRED_task_helper.py`` (``task_type_dict``).
Instructions are keyed as FILM keys them: lower-cased, punctuation removed, spacing kept. FILM also
renames the parent targets ``Sink`` to ``SinkBasin`` and ``Bathtub`` to ``BathtubBasin``.
"""

from __future__ import annotations

import json
import os
import string
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eqagen.core import DataFileError
from eqagen.generators.household.alfred.goals import AlfredGoal

FILM_TASK_TYPES: dict[int, str] = {
    0: "pick_cool_then_place_in_recep",
    1: "pick_and_place_with_movable_recep",
    2: "pick_and_place_simple",
    3: "pick_two_obj_and_place",
    4: "pick_heat_then_place_in_recep",
    5: "look_at_obj_in_light",
    6: "pick_clean_then_place_in_recep",
}
FILM_PARENT_RENAMES = {"Sink": "SinkBasin", "Bathtub": "BathtubBasin"}
FILM_FILES = {"tests_seen": "instruction2_params_test_seen.json", "valid_seen": "instruction2_params_val_seen.json"}
_PUNCTUATION = set(string.punctuation)


def film_key(instruction: str) -> str:
    """FILM's key for an instruction: lower case, every punctuation character removed."""
    return "".join(ch for ch in instruction.lower() if ch not in _PUNCTUATION)


@dataclass(frozen=True)
class FilmParse:
    instruction_key: str
    task_code: int
    object_target: str
    parent_target: str
    mrecep_target: str
    sliced: bool

    @property
    def task_type(self) -> str:
        return FILM_TASK_TYPES[self.task_code]

    def goal(self) -> AlfredGoal:
        """The ALFRED goal FILM would pursue; look_at_obj_in_light targets FILM's FloorLamp like FILM."""
        toggle = "FloorLamp" if self.task_type == "look_at_obj_in_light" else ""
        parent = FILM_PARENT_RENAMES.get(self.parent_target, self.parent_target)
        return AlfredGoal(self.task_type, self.object_target, parent, self.mrecep_target, toggle, self.sliced)

    def to_dict(self) -> dict[str, Any]:
        return {
            "instruction_key": self.instruction_key,
            "film_task_code": self.task_code,
            "task_type": self.task_type,
            "object_target": self.object_target,
            "parent_target": self.parent_target,
            "mrecep_target": self.mrecep_target,
            "sliced": self.sliced,
        }


def _parse_entry(key: str, raw: Any, path: Path) -> FilmParse:
    if not isinstance(raw, dict) or "task_type" not in raw or "object_target" not in raw:
        raise DataFileError(path, key, "expected {task_type, object_target, parent_target, mrecep_target, sliced}")
    code = raw["task_type"]
    if code not in FILM_TASK_TYPES:
        raise DataFileError(path, f"{key}.task_type", f"FILM task code {code!r} is not one of 0..6")
    return FilmParse(
        key,
        int(code),
        str(raw.get("object_target") or ""),
        str(raw.get("parent_target") or ""),
        str(raw.get("mrecep_target") or ""),
        bool(raw.get("sliced") or False),
    )


def read_film_parses(path: str | os.PathLike[str]) -> dict[str, FilmParse]:
    """One FILM parse file (JSON) -> instruction key -> parse."""
    path = Path(path)
    try:
        raw = json.loads(path.read_text())
    except FileNotFoundError as exc:
        raise DataFileError(path, None, "FILM parse file not found", "see $EQAGEN_REALDATA/film") from exc
    except (json.JSONDecodeError, UnicodeDecodeError, RecursionError) as exc:
        raise DataFileError(path, None, f"not valid JSON ({exc})"[:300], "pass FILM's parse file") from None
    except OSError as exc:
        raise DataFileError(path, None, f"cannot read: {exc.strerror or exc}", "pass FILM's parse file") from None
    if not isinstance(raw, dict):
        raise DataFileError(path, None, "expected an object: instruction -> parameters")
    return {k: _parse_entry(k, v, path) for k, v in raw.items()}


def lookup_parse(parses: dict[str, FilmParse], instruction: str) -> FilmParse | None:
    """FILM's parse of an instruction: exact FILM key first, then ignoring surrounding whitespace."""
    key = film_key(instruction)
    if key in parses:
        return parses[key]
    stripped = {" ".join(k.split()): p for k, p in parses.items()}
    return stripped.get(" ".join(key.split()))


def consensus_goal(parses: list[FilmParse | None]) -> AlfredGoal | None:
    """The goal a strict majority of a trajectory's annotations parse to, or None when there is none.

    ALFRED's test split publishes no task, but each trajectory has three to six instructions by different
    people, all describing the same task, and FILM parsed each alone. A parse that the majority does not
    share is taken as a language-processing error. On valid_seen, where the task is known, a parse with
    the majority is right 96% of the time and one without it wrong 80% of the time (docs/alfred.md).
    """
    goals = Counter(p.goal() for p in parses if p is not None)
    if not goals:
        return None
    goal, n = goals.most_common(1)[0]
    return goal if 2 * n > len(parses) else None


def parse_matches(parse: FilmParse, goal: AlfredGoal) -> bool:
    """Whether FILM's parse names the true task: type, object, parent, movable receptacle and slicing."""
    film = parse.goal()
    return (
        film.task_type == goal.task_type
        and film.object_target == goal.object_target
        and (film.parent_target == goal.parent_target or goal.task_type == "look_at_obj_in_light")
        and film.mrecep_target == goal.mrecep_target
        and film.sliced == goal.sliced
    )
