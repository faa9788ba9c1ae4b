"""Fixed split files (scene -> split), to reproduce a published split.

Accepted forms: JSON, either ``{"scene": "train", ...}`` or ``{"train": ["scene", ...], "val": [...],
"test": [...]}``; or CSV/TSV with a header holding ``scene_id`` and ``split`` columns.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

from eqagen.core import SPLITS, DataFileError, split_name


def read_split_file(path: Path | str) -> dict[str, str]:
    path = Path(path)
    if not path.is_file():
        raise DataFileError(path, None, "split file not found", "pass an existing JSON, CSV or TSV file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as err:
        raise DataFileError(path, f"byte {err.start}", "not UTF-8 text", "pass a JSON, CSV or TSV file") from None
    mapping = _from_json(path, text) if path.suffix.lower() == ".json" else _from_table(path, text)
    mapping = {scene: split_name(s) for scene, s in mapping.items()}
    bad = sorted({v for v in mapping.values() if v not in SPLITS})
    if bad:
        fix = f"use only {list(SPLITS)} (val for validation)"
        raise DataFileError(path, "split", f"unknown split name(s) {bad}", fix)
    return mapping


def write_split_file(path: Path | str, mapping: dict[str, str]) -> None:
    """Scene -> split as JSON, sorted by scene (the inverse of ``read_split_file``)."""
    Path(path).write_text(json.dumps(dict(sorted(mapping.items())), indent=1) + "\n", encoding="utf-8")


def _from_json(path: Path, text: str) -> dict[str, str]:
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        raise DataFileError(path, None, f"not valid JSON ({err})"[:300], "fix the JSON syntax") from None
    if not isinstance(data, dict):
        raise DataFileError(path, None, "expected a JSON object", 'write {"scene": "train", ...}')
    if data and all(isinstance(v, list) for v in data.values()):
        mapping: dict[str, str] = {}
        for split_name, scenes in data.items():
            for scene in scenes:
                if str(scene) in mapping and mapping[str(scene)] != split_name:
                    raise DataFileError(path, str(scene), "scene listed in two splits", "list it once")
                mapping[str(scene)] = str(split_name)
        return mapping
    if not all(isinstance(v, str) for v in data.values()):
        raise DataFileError(path, None, "values must all be split names or all be lists of scenes")
    return {str(k): v for k, v in data.items()}


def _from_table(path: Path, text: str) -> dict[str, str]:
    dialect = "excel-tab" if path.suffix.lower() in (".tsv", ".tab") else "excel"
    reader = csv.DictReader(text.splitlines(), dialect=dialect)
    fields = reader.fieldnames or []
    if "scene_id" not in fields or "split" not in fields:
        raise DataFileError(path, "header", f"columns {fields} lack scene_id and split", "add a header row")
    mapping: dict[str, str] = {}
    try:
        for line, row in enumerate(reader, start=2):
            scene, split_name = row["scene_id"], row["split"]
            if scene is None or split_name is None:
                raise DataFileError(path, f"line {line}", "has no scene_id or no split", "one scene_id,split per line")
            if scene in mapping and mapping[scene] != split_name:
                raise DataFileError(path, f"line {line}", f"scene {scene} given two splits", "list it once")
            mapping[scene] = split_name
    except csv.Error as err:
        raise DataFileError(
            path, f"line {reader.line_num}", f"not CSV/TSV ({err})", "pass a JSON, CSV or TSV file"
        ) from None
    return mapping
