"""The dataset card: ``README.md`` in the output, to the Hugging Face Hub's dataset-card conventions.

The YAML front matter carries the Hub's metadata fields (licence, language, size category, creators,
source datasets, task categories) and declares two configs: ``questions`` (the default) with its splits
``train``, ``validation`` and ``test`` (``questions/<split>-*.parquet``), and ``episodes`` with one split,
``full`` (every split's questions read the same episodes), each with the features of every column, so
that ``datasets.load_dataset(DIR, split="validation")`` and
``load_dataset(DIR, "episodes")`` work. The body (``templates/report/card.md.j2``) says what every field
holds, how the dataset was made, what the audit measured, its limitations, the licences of any real data
used and how to cite it.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import jinja2
import pyarrow as pa
import yaml

from eqagen.config import EXECUTION_SECTIONS, load_config, preset_names, resolved, validate_config
from eqagen.core import SPLITS, ConfigError
from eqagen.outputs.atomic import write_text_atomic

_TEMPLATES = jinja2.Environment(
    loader=jinja2.PackageLoader("eqagen", "templates/report"),
    undefined=jinja2.StrictUndefined,
    keep_trailing_newline=True,
)
_TEMPLATES.filters["cell"] = lambda text: str(text).replace("|", "\\|")  # a Markdown table cell

_SCALARS = {
    pa.string(): "string", pa.large_string(): "string", pa.bool_(): "bool",
    pa.int8(): "int8", pa.int16(): "int16", pa.int32(): "int32", pa.int64(): "int64",
    pa.float32(): "float32", pa.float64(): "float64",
}  # fmt: skip
EPISODES_SPLIT = "full"  # the episodes config's one split: the episodes of every split's questions
LICENSE = "mit"  # eqagen's own licence, under which the generated data is released
# The Hub's size categories (datasets/utils/resources/size_categories.json), by their upper bounds.
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"),
                   (10_000_000, "1M<n<10M"))  # fmt: skip

# Real data each (family, backend) reads: its name, licence and citation key (None: no paper to cite).
REAL_DATA: dict[tuple[str, str], list[dict[str, str]]] = {
    ("household", "alfred"): [
        {"name": "ALFRED (trajectories and floor plans)", "license": "MIT", "source": "alfred"},
        {"name": "FILM (instruction parses)", "license": "MIT", "source": "film"},
    ],
    ("household", "ai2thor"): [{"name": "AI2-THOR (simulator and scenes)", "license": "Apache-2.0", "source": ""}],
    ("navigation", "hm3d-files"): [
        {"name": "HM3D (scene maps)", "license": "Matterport's academic end-user licence", "source": "hm3d"}
    ],
    ("navigation", "habitat-sim"): [
        {"name": "Habitat-Sim (simulator)", "license": "MIT", "source": ""},
        {"name": "HM3D (scenes)", "license": "Matterport's academic end-user licence", "source": "hm3d"},
    ],
    ("blockworld", "world-file"): [
        {"name": "PQB-EQA (environment specs and structures)", "license": "GPL-3.0", "source": ""}
    ],
}
CITATIONS = {
    "alfred": """@inproceedings{shridhar2020alfred,
  title = {{ALFRED}: A Benchmark for Interpreting Grounded Instructions for Everyday Tasks},
  author = {Shridhar, Mohit and others}, booktitle = {CVPR}, year = {2020}}""",
    "film": """@inproceedings{min2022film,
  title = {{FILM}: Following Instructions in Language with Modular Methods},
  author = {Min, So Yeon and others}, booktitle = {ICLR}, year = {2022}}""",
    "hm3d": """@inproceedings{ramakrishnan2021hm3d,
  title = {Habitat-Matterport 3D Dataset ({HM3D}): 1000 Large-scale 3D Environments for Embodied {AI}},
  author = {Ramakrishnan, Santhosh Kumar and others},
  booktitle = {NeurIPS Datasets and Benchmarks}, year = {2021}}""",
}

# What each column holds (the card's field-by-field description; tests/outputs/test_card.py checks that
# every column of both schemas has one).
QUESTION_FIELDS = {
    "question_id": "unique id of the question record",
    "episode_id": "the episode (trajectory) the question is asked about; a row of the `episodes` config",
    "scene_id": "the environment (room, house or world) of the episode",
    "family": "world family: household, navigation or blockworld",
    "backend": "world backend that made the episode (embedded: procedural, no download)",
    "split": "train, validation or test (the shard's split)",
    "program": "the question as a program: `filters` (each `family`, `key`, `value`, `args`) then a `query` "
    "(`name`, `arg`, `args`); a filter's `args` are a struct of `event`, `event2` (indices into the episode's "
    "`events`), `receptacle` (a type) and `figure` (the type a situational filter saw), a query's of `kind` "
    "(an event kind) and `subject` (a type), null "
    "where the predicate has none",
    "structured_question": "the program in TAG-EQA's text form (`DATA -> FILTER -> ... -> QUERY`)",
    "structured_answer": "the grounded answer: groups, each with the grounded `predicate`, its `anchor` [x, y, z] "
    "(or null), the `result` entities (id, type, position, caption, value) and the group's `value`",
    "answer_type": "how to read `answer`: number, yes/no, state, property, location or list",
    "answer_key": "the answer's canonical form, which balancing counts",
    "question": "the question as a template sentence",
    "answer": "the answer as a sentence fragment",
    "paraphrase": "the paraphrase stage's result: `question` and `answer` kept, the `model`, whether it was "
    "`validated`, the `attempts` and the `reason` the template text was kept",
    "grounded": "whether the question names an object instance (grounded) or a category",
    "category": "OpenEQA's category of the question",
    "express_category": "EXPRESS-Bench's category of the question",
    "balance_key": "the question group: records asking the same ungrounded question in different scenes",
    "query_type": "the program's query (listObjects, count, getState, ...)",
    "choices": "the distinct answers of the question's group (multiple choice)",
    "predicate_families": "the filter families of the program, in order",
    "n_filters": "number of filters of the program",
    "generator_version": "eqagen version that made the record",
    "config_hash": "hash of the config that made the record",
}
EPISODE_FIELDS = {
    "episode_id": "unique id of the episode",
    "family": "world family",
    "backend": "world backend that made the episode",
    "scene_id": "the environment the episode ran in",
    "seed": "the episode's own seed (derived from the run's seed)",
    "n_steps": "number of steps (step 0 is the initial observation)",
    "n_entities": "number of objects (entities) in the world",
    "task": "the agent's task: a struct of every family's fields, null where the family has none (household: "
    "ALFRED's `task_type` and targets; navigation: the route's ends, distances and policy; blockworld: `biome`)",
    "meta": "how the episode came about: a struct of every backend's fields, null where the backend has none "
    "(`success`, `stop_reason`; household: the agent and ALFRED's records; navigation: `path`, `camera`; "
    "blockworld: `ground_truth`, `blocks_seen`); a mapping whose keys are data (block names, mob kinds) is a "
    "list of `key`, `value` entries",
    "frame": "the world frame: the `native` convention, the `origin` and initial yaw `yaw0`",
    "steps": "per step: `action`, its `target` and `receptacle` entity, `args` (JSON), `success`, `error`, the "
    "agent's `pose` [x, y, z, yaw, pitch] and the `held` entity",
    "entities": "per entity: `instance_id`, `type`, `native_id`, `attributes` (a list of `key`, `value` "
    "entries: color, material, room, ...) and `capabilities`",
    "timeline": "every entity's state: per field its `initial` values and its changes (`t`, `entity`, `value`)",
    "events": "what happened (`t`, `kind`, `entity`, `target`, `ordinal`)",
    "regions": "rooms or regions: `region_id`, `category`, `footprint`, `name`",
}


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


# Config sections (and backend parameters): the card's command sets their keys one by one.
_SECTION_KEYS = frozenset({"generation", "output", "runner", "questions", "balance", "paraphrase", "split", "params"})


def _features(schema: pa.Schema) -> list[dict[str, Any]]:
    return [{"name": f.name, **hf_feature(f.type)} for f in schema]


def size_category(n: int) -> str:
    """The Hub's size category of ``n`` examples."""
    return next((name for bound, name in SIZE_CATEGORIES if n < bound), "n>10M")


def real_data(config: Mapping[str, Any]) -> list[dict[str, str]]:
    """The real data the config's world backend read (empty for the embedded worlds)."""
    generation = config.get("generation") or {}
    return REAL_DATA.get((generation.get("family", ""), generation.get("backend", "")), [])


def front_matter(stats: Mapping[str, Any], manifest: Mapping[str, Any], questions_schema: pa.Schema,
                 episodes_schema: pa.Schema) -> str:  # fmt: skip
    config = manifest.get("config", {})
    per_split = stats["dataset"]["questions"]["per_split"]
    splits = [s for s in SPLITS if s in per_split] or sorted(per_split)
    used = real_data(config)
    meta = {
        "license": LICENSE,
        "language": ["en"],
        "multilinguality": "monolingual",
        "size_categories": [size_category(sum(per_split.values()))],
        "pretty_name": pretty_name(config),
        "annotations_creators": ["machine-generated"],
        "language_creators": ["machine-generated"],
        "source_datasets": ["original"] + [f"extended|{d['source']}" for d in used if d["source"]],
        "task_categories": ["question-answering"],
        "tags": ["embodied-question-answering", "synthetic", "eqagen"],
        "configs": [
            {
                "config_name": "questions",
                "default": True,
                "data_files": [{"split": s, "path": f"questions/{s}-*.parquet"} for s in splits],
            },
            {"config_name": "episodes", "data_files": [{"split": EPISODES_SPLIT, "path": "episodes/*.parquet"}]},
        ],
        "dataset_info": [
            # no `splits`: `datasets` wants each split's Arrow size beside its count, which only it computes
            {"config_name": "questions", "features": _features(questions_schema)},
            {"config_name": "episodes", "features": _features(episodes_schema)},
        ],
    }
    return "---\n" + yaml.safe_dump(meta, sort_keys=False, width=1000) + "---\n"


def pretty_name(config: Mapping[str, Any]) -> str:
    family = (config.get("generation") or {}).get("family", "")
    return f"eqagen {config.get('name', 'custom')}: synthetic {family} embodied question answering".replace("  ", " ")


def _leaves(data: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """Nested config data as ``{dotted key: value}``, descending into sections only: a mapping field (a mix)
    stays one value, so that a difference in it is set whole."""
    out: dict[str, Any] = {}
    for k, v in data.items():
        key = f"{prefix}.{k}" if prefix else str(k)
        out.update(_leaves(v, key) if isinstance(v, Mapping) and k in _SECTION_KEYS else {key: v})
    return out


def overrides_of(config: Mapping[str, Any]) -> list[str] | None:
    """The ``--set`` overrides that turn the preset ``config`` names into ``config`` (the runner's left out: it
    changes how a run computes, not what), or None where ``config`` names no preset."""
    name = config.get("name")
    if name not in preset_names():
        return None
    try:  # the manifest's config, every default filled in (an older manifest may leave some out)
        ours = _leaves(resolved(validate_config(dict(config))))
    except ConfigError:  # a config this version no longer reads: no command can make it again
        return None
    theirs = _leaves(resolved(load_config(name)))
    skip = {"seed", *EXECUTION_SECTIONS}
    return [
        f"{key}={json.dumps(ours[key], separators=(', ', ': '))}"
        for key in sorted(set(ours) | set(theirs))
        if key.split(".")[0] not in skip and ours.get(key) != theirs.get(key)
    ]


def make_command(config: Mapping[str, Any], seed: Any) -> str:
    """The command that makes this dataset again (a config that names no preset, or one this version cannot
    read as a preset's: from its YAML, below in the card)."""
    overrides = overrides_of(config)
    if overrides is None:
        return f"eqagen generate config.yaml --out OUT --seed {seed}  # config.yaml: the generation config below"
    sets = "".join(f" --set '{o}'" for o in overrides)
    return f"eqagen generate {config.get('name')} --out OUT --seed {seed}{sets}"


def criteria_rows(criteria: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    return [{"name": n, "ok": c["ok"], "test": c.get("test") or c["target"], "detail": c["detail"]}
            for n, c in criteria.items()]  # fmt: skip


def render_card(
    stats: Mapping[str, Any],
    manifest: Mapping[str, Any],
    questions_schema: pa.Schema,
    episodes_schema: pa.Schema,
) -> str:
    config = manifest.get("config", {})
    used = real_data(config)
    per_split = stats["dataset"]["questions"]["per_split"]
    body = _TEMPLATES.get_template("card.md.j2").render(
        stats=stats,
        manifest=manifest,
        title=pretty_name(config),
        config_yaml=yaml.safe_dump(config, sort_keys=True, width=100).rstrip(),
        command=make_command(config, manifest.get("seed", "")),
        criteria=criteria_rows(stats["dataset"].get("criteria", {})),
        question_fields=[(f.name, hf_type(f.type), QUESTION_FIELDS.get(f.name, "")) for f in questions_schema],
        episode_fields=[(f.name, hf_type(f.type), EPISODE_FIELDS.get(f.name, "")) for f in episodes_schema],
        real_data=used,
        citations=[CITATIONS[d["source"]] for d in used if d["source"] in CITATIONS],
        episodes_split=EPISODES_SPLIT,
        splits=[(s, n) for s, n in sorted(per_split.items(), key=lambda kv: _split_order(kv[0]))],
    )
    return front_matter(stats, manifest, questions_schema, episodes_schema) + body


def _split_order(split: str) -> tuple[int, str]:
    return (SPLITS.index(split), "") if split in SPLITS else (len(SPLITS), split)


def hf_type(t: pa.DataType) -> str:
    """A column's type in a word or two: ``string``, ``list<string>``, ``struct``."""
    if pa.types.is_struct(t):
        return "struct"
    if pa.types.is_list(t) or pa.types.is_large_list(t):
        return f"list<{hf_type(t.value_type)}>"
    return _SCALARS.get(t, str(t))


def write_card(text: str, out_dir: Path) -> Path:
    path = Path(out_dir) / "README.md"
    write_text_atomic(path, text)
    return path
