"""Config loading: presets, files, overrides, and errors that name the key and what is allowed."""

from __future__ import annotations

import pytest

from eqagen.config import (
    apply_override,
    config_hash,
    load_config,
    preset_names,
    read_preset,
    resolved,
    validate_config,
)
from eqagen.core import ConfigError, UnknownNameError


def test_presets_validate_and_describe_themselves() -> None:
    assert {"demo", "tag-eqa"} <= set(preset_names())
    for name in preset_names():
        config = validate_config(read_preset(name), name)
        assert config.name == name and config.description


def test_tag_eqa_preset_is_tag_eqas_setting() -> None:
    c = load_config("tag-eqa")
    assert (c.generation.family, c.generation.backend) == ("household", "embedded")
    assert c.generation.n_episodes == 1500 and c.generation.max_steps == 250
    assert tuple(c.split.ratios) == (0.70, 0.15, 0.15)
    assert 10 <= c.generation.batch_size <= 100, "tasks take tens of episodes"


@pytest.mark.parametrize(
    ("override", "key", "allowed"),
    [
        ("generation.n_episode=5", "generation.n_episode", "n_episodes"),
        ("colour=red", "colour", "generation"),
        ("runner.kind=slurm", "runner.kind", "'local', 'processes', 'dask' or 'inline'"),
        ("generation.family=ocean", "generation.family", "'household', 'navigation' or 'blockworld'"),
        ("balance.mode=loose", "balance.mode", "'exact' or 'entropy'"),
    ],
)
def test_bad_keys_and_values_name_the_key_and_the_allowed_values(override, key, allowed) -> None:
    with pytest.raises(ConfigError) as err:
        load_config("demo", [override])
    assert err.value.key == key
    assert allowed in (err.value.allowed or "")
    assert key in str(err.value)


def test_bad_numbers_and_backends_are_errors_naming_the_key() -> None:
    with pytest.raises(ConfigError, match=r"generation\.n_episodes"):
        load_config("demo", ["generation.n_episodes=0"])
    with pytest.raises(ConfigError, match=r"generation\.backend.*allowed: .*embedded"):
        load_config("demo", ["generation.backend=unreal"])
    with pytest.raises(ConfigError, match=r"split\.ratios"):
        load_config("demo", ["split.ratios=[0.5, 0.5, 0.5]"])


def test_files_and_unknown_presets(tmp_path) -> None:
    path = tmp_path / "mine.yaml"
    path.write_text("name: mine\ngeneration:\n  n_episodes: 3\n  batch_size: 2\n")
    c = load_config(str(path), seed=9)
    assert (c.name, c.seed, c.generation.n_episodes) == ("mine", 9, 3)
    with pytest.raises(UnknownNameError, match="demo"):
        load_config("no-such-preset")
    with pytest.raises(ConfigError, match="no such config file"):
        load_config(str(tmp_path / "missing.yaml"))
    (tmp_path / "bad.yaml").write_text("generation: [unclosed\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(str(tmp_path / "bad.yaml"))
    (tmp_path / "typo.yaml").write_text("generation:\n  n_episodez: 3\n")
    with pytest.raises(ConfigError, match=r"typo.yaml: config key 'generation.n_episodez': unknown key"):
        load_config(str(tmp_path / "typo.yaml"))


def test_overrides_parse_yaml_values() -> None:
    data: dict = {}
    apply_override(data, "a.b=3")
    apply_override(data, "a.c=[1, 2]")
    apply_override(data, "d=true")
    apply_override(data, "e=text")
    assert data == {"a": {"b": 3, "c": [1, 2]}, "d": True, "e": "text"}
    with pytest.raises(ConfigError):
        apply_override(data, "novalue")
    with pytest.raises(ConfigError, match="not a section"):
        apply_override(data, "d.x=1")


def test_config_hash_tracks_content_not_execution() -> None:
    base = load_config("demo")
    assert config_hash(base) == config_hash(load_config("demo"))
    assert config_hash(base) != config_hash(load_config("demo", seed=1))
    assert config_hash(base) != config_hash(load_config("demo", ["generation.max_steps=100"]))
    assert config_hash(base) == config_hash(load_config("demo", ["runner.kind=inline", "runner.workers=5"]))


def test_resolved_config_has_every_section_and_validates_again() -> None:
    data = resolved(load_config("demo"))
    assert {"generation", "questions", "balance", "paraphrase", "split", "output", "runner"} <= set(data)
    again = validate_config(data)
    assert resolved(again) == data
