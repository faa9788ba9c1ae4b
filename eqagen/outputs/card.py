"""The dataset card: ``README.md`` in the output, with Hugging Face YAML front matter.

The front matter declares two configs (``questions``, the default, with its splits, and ``episodes``)
so that ``datasets.load_dataset(DIR)`` finds the questions' shards (``questions/<split>-*.parquet``)
and ``load_dataset(DIR, "episodes")`` the episodes', and the features of every column.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
import pyarrow as pa
import yaml

from eqagen.outputs.atomic import write_text_atomic

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("eqagen", "templates/report"),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
)

_SCALARS = {
    pa.string(): "string", pa.large_string(): "string", pa.bool_(): "bool",
    pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32", pa.int64(): "int64",
    pa.float32(): "float32", pa.float64(): "float64",
}  # fmt: skip


def hf_feature(t: pa.DataType) -> Any:
    """A pyarrow type as a Hugging Face ``features`` entry (dtype, list or struct)."""
    if t in _SCALARS:
        return {"dtype": _SCALARS[t]}
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        inner = hf_feature(t.value_type)
        return {"list": inner["dtype"] if set(inner) == {"dtype"} else inner}
    if pa.types.is_struct(t):
        return {"struct": [{"name": f.name, **hf_feature(f.type)} for f in t]}
    return {"dtype": str(t)}


def _features(schema: pa.Schema) -> list[dict[str, Any]]:
    return [{"name": f.name, **hf_feature(f.type)} for f in schema]


def front_matter(splits: list[str], questions_schema: pa.Schema, episodes_schema: pa.Schema) -> str:
    meta = {
        "configs": [
            {
                "config_name": "questions",
                "default": True,
                "data_files": [{"split": s, "path": f"questions/{s}-*.parquet"} for s in splits],
            },
            {"config_name": "episodes", "data_files": [{"split": "train", "path": "episodes/*.parquet"}]},
        ],
        "dataset_info": [
            {"config_name": "questions", "features": _features(questions_schema)},
            {"config_name": "episodes", "features": _features(episodes_schema)},
        ],
        "task_categories": ["question-answering"],
        "tags": ["embodied-question-answering", "synthetic", "eqagen"],
    }
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, width=1000) + "---\n"


def render_card(
    stats: Mapping[str, Any],
    manifest: Mapping[str, Any],
    questions_schema: pa.Schema,
    episodes_schema: pa.Schema,
) -> str:
    q = stats["dataset"]["questions"]
    splits = [s for s in ("train", "val", "test") if s in q["per_split"]] or sorted(q["per_split"])
    body = _TEMPLATES.get_template("card.md.j2").render(
        stats=stats,
        manifest=manifest,
        config_yaml=yaml.safe_dump(manifest.get("config", {}), sort_keys=True, width=100).rstrip(),
    )
    return front_matter(splits, questions_schema, episodes_schema) + body


def write_card(text: str, out_dir: Path) -> Path:
    path = Path(out_dir) / "README.md"
    write_text_atomic(path, text)
    return path
