"""A world family's shared vocabulary: how many of its episodes can use each filter value and subject type.

Per-question balancing needs the same question text in several scenes with different answers. The
sampler therefore orders what an episode can ask by how common it is in the world family (the share of
episodes where a filter value is satisfiable, or a type is seen), most common first, and favours the
front of that order (``QuestionConfig.shared_vocabulary``): scenes then ask about the objects, colours,
states and events most homes have. Values the table does not list come after all listed ones, in the
fixed order of ``stable_priority``.

The table of a world family is the JSON file named by its ``vocabulary`` param (a path relative to this
package, or absolute), written by :mod:`eqagen.predicates.vocabulary_table`.
"""

from __future__ import annotations

import json
import zlib
from functools import lru_cache
from pathlib import Path

from eqagen.core import DataFileError, FilterSpec

PACKAGE_DIR = Path(__file__).parent


def stable_priority(text: str) -> float:
    """A number in [0, 1) fixed by the text alone (the same in every episode, process and run)."""
    return zlib.crc32(text.encode()) / 2**32


def spec_text(spec: FilterSpec) -> str:
    """What a filter spec says in a question, as a key: ``location|on|CounterTop|``."""
    figure = spec.args.get("figure")  # a situation's figure ("a chair" in front of the table)
    text = f"{spec.family}|{spec.key}|{spec.value}|{spec.args.get('receptacle', '')}"
    return f"{text}|{figure}" if figure else text


def type_text(type_name: str) -> str:
    return f"type|{type_name}"


@lru_cache(maxsize=8)
def load_vocabulary(path: str) -> dict[str, float]:
    """The table named by a world family's ``vocabulary`` param: text key -> share of episodes."""
    file = Path(path) if Path(path).is_absolute() else PACKAGE_DIR / path
    try:
        data = json.loads(file.read_text())
    except (OSError, json.JSONDecodeError) as err:
        raise DataFileError(
            file, "vocabulary", str(err), "regenerate it: python -m eqagen.predicates.vocabulary_table"
        ) from err
    shares = data.get("shares") if isinstance(data, dict) else None
    if not isinstance(shares, dict) or not all(isinstance(v, (int, float)) for v in shares.values()):
        raise DataFileError(file, "shares", "missing or not a mapping of text to share", "regenerate the table")
    return {str(k): float(v) for k, v in shares.items()}


def priority(text: str, shares: dict[str, float]) -> float:
    """Lower first: common values by their share (in [0, 1)), then the rest (in [1, 2)), ties and
    unlisted values in the fixed ``stable_priority`` order."""
    share = shares.get(text)
    tie = stable_priority(text) * 1e-3
    return (1.0 - share) * 0.999 + tie if share is not None else 1.0 + stable_priority(text)
