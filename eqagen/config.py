"""The pipeline's config: YAML validated with pydantic, unknown keys and bad values rejected by name.

A config has a few sections of its own (``generation``, ``output``, ``runner``) and composes the
sections of the stages that define their own pydantic models (``questions``, ``balance``,
``paraphrase``, ``split``): each is typed by its own package's model, so every key of every section
is validated and an unknown one is rejected by name.

Presets are YAML files in ``eqagen/presets``; ``load_config("demo")`` and ``load_config("my.yaml")``
both work, and ``--set generation.n_episodes=10`` overrides any key (a key of a mapping such as
``questions.query_mix.count=0.5`` is merged into it; :func:`apply_override`).

Counts are strict integers with stated maxima (:mod:`eqagen.core.limits`): ``n_episodes: true`` is an
error, not 1. The YAML is read without anchors and aliases (a few lines of nested aliases expand to
gigabytes), and a NaN or infinite number anywhere in a config is an error naming its key.
"""

from __future__ import annotations

import math
from importlib import resources
from pathlib import Path
from typing import Any, Literal, get_origin

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from eqagen.core import ConfigError, UnknownNameError, stable_hash
from eqagen.core.limits import (
    MAX_BATCH_SIZE,
    MAX_CONFIG_BYTES,
    MAX_EPISODES,
    MAX_ROWS_PER_SHARD,
    MAX_SEED,
    MAX_STEPS,
    MAX_WORKERS,
)
from eqagen.curation.config import BalanceConfig, SplitConfig
from eqagen.paraphrase.config import ParaphraseConfig
from eqagen.predicates.config import QuestionConfig

RUNNER_KINDS = ("local", "processes", "dask", "inline")
# Sections that change how a run is executed but never what it produces (left out of the config hash).
EXECUTION_SECTIONS = ("runner",)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class GenerationConfig(_Strict):
    """Which worlds, how many episodes, and how they are batched."""

    family: Literal["household", "navigation", "blockworld"] = "household"
    backend: str = Field("embedded", description="world backend of the family (embedded needs no download)")
    n_episodes: int = Field(40, ge=1, le=MAX_EPISODES, strict=True)
    max_steps: int = Field(
        250, ge=1, le=MAX_STEPS, strict=True, description="step limit of one episode (passed to the backend)"
    )
    batch_size: int = Field(
        25, ge=1, le=MAX_BATCH_SIZE, strict=True, description="episodes per task: tens, so orchestration costs little"
    )
    params: dict[str, Any] = Field(default_factory=dict, description="further backend parameters")

    @field_validator("backend")
    @classmethod
    def _known_backend(cls, value: str) -> str:
        from eqagen.generators import base

        # Backends known by module, plus any registered at run time (plugins, test fixtures).
        known = sorted({b for _, b in base.list_backends()} | {b for _, b in base._REGISTRY})
        if value not in known:
            raise ValueError(f"unknown backend '{value}'; allowed: {', '.join(known)}")
        return value


class OutputConfig(_Strict):
    rows_per_shard: int = Field(
        5000, ge=1, le=MAX_ROWS_PER_SHARD, strict=True, description="rows per Parquet shard (questions and episodes)"
    )


class RunnerConfig(_Strict):
    """Where the run's units run (:mod:`eqagen.flows.runners`). ``local``: threads of the run's process;
    ``processes``: processes forked from it; ``dask``: a Dask cluster (``address``, or a local one);
    ``inline``: plain Python in the run's process, no Prefect."""

    kind: Literal["local", "processes", "dask", "inline"] = "processes"
    workers: int = Field(
        2, ge=1, le=MAX_WORKERS, strict=True, description="parallel workers; a run uses at most the CPUs it may use"
    )
    address: str | None = Field(None, description="dask scheduler address, e.g. tcp://10.0.0.5:8786")
    progress: bool = Field(True, description="progress bars on stderr")


class PipelineConfig(_Strict):
    name: str = "custom"
    description: str = ""
    seed: int = Field(0, ge=0, le=MAX_SEED, strict=True)
    generation: GenerationConfig = GenerationConfig()
    output: OutputConfig = OutputConfig()
    runner: RunnerConfig = RunnerConfig()
    questions: QuestionConfig = Field(default_factory=QuestionConfig)
    balance: BalanceConfig = Field(default_factory=BalanceConfig)
    paraphrase: ParaphraseConfig = Field(default_factory=ParaphraseConfig)
    split: SplitConfig = Field(default_factory=SplitConfig)


def _allowed_for(model: type[BaseModel], loc: tuple[Any, ...]) -> str | None:
    """The field names valid at ``loc`` (for an unknown key)."""
    current: Any = model
    for part in loc[:-1]:
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return None
        current = field.annotation
    names = getattr(current, "model_fields", None)
    return ", ".join(names) if names else None


def config_error(err: ValidationError, model: type[BaseModel], source: str | None) -> ConfigError:
    """The first problem of a pydantic error, as a ConfigError naming the dotted key and what is allowed."""
    first = err.errors()[0]
    key = ".".join(str(p) for p in first["loc"]) or "(top level)"
    if first["type"] == "extra_forbidden":
        return ConfigError(key, "unknown key", _allowed_for(model, first["loc"]), source)
    ctx = first.get("ctx") or {}
    allowed = ctx.get("expected")
    problem = f"{first['msg']} (got {first.get('input')!r})"
    more = len(err.errors()) - 1
    if more:
        problem += f"; and {more} more problem(s)"
    return ConfigError(key, problem, allowed, source)


def validate_config(data: dict[str, Any], source: str | None = None) -> PipelineConfig:
    model = PipelineConfig
    if not isinstance(data, dict):
        raise ConfigError("(top level)", "a config must be a YAML mapping", None, source)
    bad = non_finite_key(data)
    if bad:
        raise ConfigError(bad, "is not a finite number (NaN or infinite)", "a finite number", source)
    try:
        return model.model_validate(data)
    except ValidationError as err:
        raise config_error(err, model, source) from None


# --- presets, files and overrides -------------------------------------------------------------------


def preset_names() -> list[str]:
    files = resources.files("eqagen") / "presets"
    return sorted(p.name.removesuffix(".yaml") for p in files.iterdir() if p.name.endswith(".yaml"))


class _NoAliasLoader(yaml.SafeLoader):
    """PyYAML's safe loader without anchors and aliases: a kilobyte of nested aliases expands to gigabytes
    (a "billion laughs"), and a config has no need of them."""

    def compose_node(self, parent: Any, index: Any) -> Any:
        event = self.peek_event()
        if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
            raise yaml.composer.ComposerError(
                None, None, "YAML anchors and aliases (&name, *name, <<) are not allowed in a config", event.start_mark
            )
        return super().compose_node(parent, index)

    def construct_mapping(self, node: Any, deep: bool = False) -> Any:
        refuse_duplicate_keys(node)
        return super().construct_mapping(node, deep)


def refuse_duplicate_keys(node: yaml.MappingNode) -> None:
    """A yaml error at the second of two equal keys of one mapping (PyYAML silently keeps the last)."""
    seen: set[str] = set()
    for key_node, _ in node.value:
        key = str(key_node.value)
        if key in seen:
            raise yaml.constructor.ConstructorError(None, None, f"duplicate key '{key}'", key_node.start_mark)
        seen.add(key)


def parse_yaml(text: str) -> Any:
    """YAML text as data; anchors and aliases, duplicate keys and integers too long to convert refused
    (yaml.YAMLError)."""
    try:
        return yaml.load(text, Loader=_NoAliasLoader)
    except ValueError as err:  # an integer longer than Python converts (4,300 digits)
        raise yaml.constructor.ConstructorError(None, None, str(err).split(";")[0], None) from None


def yaml_problem(err: yaml.YAMLError) -> str:
    """A YAML error in one line: what is wrong and where (PyYAML's own text spans several lines)."""
    problem = getattr(err, "problem", None) or type(err).__name__
    mark = getattr(err, "problem_mark", None)
    return f"{problem} (line {mark.line + 1}, column {mark.column + 1})" if mark else problem


def _read_yaml(text: str, source: str) -> dict[str, Any]:
    try:
        data = parse_yaml(text)
    except yaml.YAMLError as err:
        raise ConfigError("(file)", f"not valid YAML: {yaml_problem(err)}", None, source) from None
    except RecursionError:
        raise ConfigError("(file)", "nested too deeply to be a config", None, source) from None
    refuse_empty_config(data, source)
    if not isinstance(data, dict):
        raise ConfigError(
            "(top level)", f"a config must be a YAML mapping of sections, got a {type(data).__name__}", None, source
        )
    return data


def refuse_empty_config(data: Any, source: str) -> None:
    """A ConfigError for a config file that is empty or holds only null (``~``): a run of the defaults the
    user did not ask for."""
    if data is None or data == {}:
        raise ConfigError(
            "(file)", "is empty (or only null): a config names its sections", "e.g. 'generation:' and 'questions:' "
            "keys, or a preset name instead of the file", source,
        )  # fmt: skip


MAX_OVERRIDE_KEY_PARTS = 16  # dotted parts of a --set key (configs nest at most 5 deep)


def check_override_key(assignment: str) -> None:
    """A ConfigError for a ``--set`` key of more than :data:`MAX_OVERRIDE_KEY_PARTS` dotted parts."""
    parts = assignment.partition("=")[0].count(".") + 1
    if parts > MAX_OVERRIDE_KEY_PARTS:
        shown = assignment[:60] + ("..." if len(assignment) > 60 else "")
        raise ConfigError(shown, f"a key of {parts:,} parts, more than {MAX_OVERRIDE_KEY_PARTS}", None, "--set")


def _read_config_file(path: Path) -> str:
    """The text of a config file: at most MAX_CONFIG_BYTES of UTF-8."""
    try:
        size = path.stat().st_size
        if size > MAX_CONFIG_BYTES:
            raise ConfigError(
                "(file)", f"{size:,} bytes is larger than a config can be ({MAX_CONFIG_BYTES:,})", None, str(path)
            )
        return path.read_bytes().decode("utf-8")
    except UnicodeDecodeError as err:
        raise ConfigError(
            "(file)", f"not UTF-8 text (byte {err.start}: {err.reason}); save the config as UTF-8", None, str(path)
        ) from None
    except OSError as err:
        raise ConfigError("(file)", f"cannot read: {err.strerror or err}", None, str(path)) from None


def preset_text(name: str) -> str:
    """A preset's YAML text (``demo`` or ``demo.yaml``); UnknownNameError listing the presets."""
    name = name.removesuffix(".yaml")
    if name not in preset_names():
        raise UnknownNameError("preset", name, preset_names())
    return (resources.files("eqagen") / "presets" / f"{name}.yaml").read_text(encoding="utf-8")


def read_preset(name: str) -> dict[str, Any]:
    return _read_yaml(preset_text(name), f"preset {name}")


def read_config_source(preset_or_path: str) -> tuple[dict[str, Any], str]:
    """A preset name (``demo``, ``demo.yaml``) or a path to a YAML file; returns the data and its source."""
    path = Path(preset_or_path)
    if path.is_file():
        return _read_yaml(_read_config_file(path), str(path)), str(path)
    name = path.name.removesuffix(".yaml").removesuffix(".yml")
    if path.suffix in (".yaml", ".yml") and name not in preset_names():
        raise ConfigError(
            "(file)", f"no such config file: {preset_or_path}", f"a file path or a preset: {', '.join(preset_names())}"
        )
    return read_preset(name), f"preset {name}"


def _mapping_default(parts: list[str]) -> dict[Any, Any] | None:
    """The default of the config field at ``parts`` where that field is a mapping (``questions.query_mix``),
    else None (a section, a scalar, or no field of the config)."""
    current: Any = PipelineConfig
    for i, part in enumerate(parts):
        field = getattr(current, "model_fields", {}).get(part)
        if field is None:
            return None
        if get_origin(field.annotation) is dict:
            return field.get_default(call_default_factory=True) if i == len(parts) - 1 else None
        current = field.annotation
    return None


def _merge_key(mapping: dict[Any, Any], key: str, default: dict[Any, Any], where: str) -> Any:
    """The key of ``mapping`` that ``key`` names (``1`` for ``"1"``); ConfigError where neither the mapping nor
    its default knows it (a mapping whose default is empty, such as ``generation.params``, takes any key)."""
    known = {str(k): k for k in [*default, *mapping]}
    if key in known:
        return known[key]
    if not default:
        return key
    raise ConfigError(
        f"{where}.{key}", "unknown key of the mapping", f"{', '.join(known)}; to replace the whole mapping, "
        f"--set {where}='{{name: value, ...}}'", "--set"
    )  # fmt: skip


def apply_override(data: dict[str, Any], assignment: str) -> None:
    """``a.b.c=value`` (value parsed as YAML: numbers, booleans, lists, mappings) set in nested ``data``.

    A key of a mapping field (``questions.query_mix.count=0.5``) is merged into the mapping as the config
    has it (the preset's, else the default), so its other keys stay; a key the mapping does not know is an
    error. The whole mapping is replaced only by naming the mapping itself:
    ``questions.query_mix='{count: 1, exists: 1}'``."""
    key, sep, raw = assignment.partition("=")
    if not sep or not key.strip():
        raise ConfigError(assignment, "an override must look like key.sub=value", None, "--set")
    parts = key.strip().split(".")
    node = data
    for depth, part in enumerate(parts[:-1]):
        default = _mapping_default(parts[: depth + 1])
        child = node.setdefault(part, dict(default) if default is not None else {})
        if not isinstance(child, dict):
            raise ConfigError(key, f"'{part}' is not a section", None, "--set")
        node = child
    last = parts[-1]
    parent_default = _mapping_default(parts[:-1]) if len(parts) > 1 else None
    if parent_default is not None:
        last = _merge_key(node, last, parent_default, ".".join(parts[:-1]))
    try:
        node[last] = parse_yaml(raw) if raw.strip() else ""
    except RecursionError:
        raise ConfigError(key, "the value is nested too deeply", None, "--set") from None
    except yaml.YAMLError as err:
        raise ConfigError(
            key,
            f"the value {raw!r} is not valid YAML: {yaml_problem(err)}",
            None,
            "--set",
        ) from None


def load_config(
    preset_or_path: str, overrides: list[str] | tuple[str, ...] = (), seed: int | None = None
) -> PipelineConfig:
    """Read, override and validate a config. Raises ConfigError / UnknownNameError with the fix."""
    data, source = read_config_source(preset_or_path)
    for assignment in overrides:
        check_override_key(assignment)
        apply_override(data, assignment)
    if seed is not None:
        data["seed"] = seed
    return validate_config(data, source)


def non_finite_key(data: Any, prefix: str = "") -> str | None:
    """The dotted key of the first NaN or infinite number in nested config data, or None."""
    if isinstance(data, float):
        return None if math.isfinite(data) else prefix or "(top level)"
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        found = non_finite_key(value, f"{prefix}.{key}" if prefix else str(key))
        if found:
            return found
    return None


def resolved(config: BaseModel) -> dict[str, Any]:
    """The full config with every default filled in, as JSON-able data (secrets hidden by pydantic)."""
    return config.model_dump(mode="json")


def config_hash(config: BaseModel) -> str:
    """Hash of everything that shapes the output (the runner section only changes how it is computed)."""
    data = {k: v for k, v in resolved(config).items() if k not in EXECUTION_SECTIONS}
    return stable_hash(data, digest_size=8)


# Sections that shape the batched stages (episodes and programs); the rest acts on the whole dataset.
BATCH_SECTIONS = ("seed", "generation", "questions")


def batches_hash(config: BaseModel) -> str:
    """Hash of what the batch checkpoints depend on: a re-balanced or re-split run reuses them."""
    data = {k: v for k, v in resolved(config).items() if k in BATCH_SECTIONS}
    return stable_hash(data, digest_size=8)
