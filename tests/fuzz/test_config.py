"""Bad configs: mutated presets (as data, as YAML text) and odd ``--set`` overrides give ConfigError naming
the key (or UnknownNameError for a name), never a pydantic, YAML or Python error."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from eqagen.config import load_config, preset_names, read_preset, validate_config
from eqagen.core import ConfigError, UnknownNameError

from .conftest import FUZZ, FUZZ_LONG
from .mutate import ODD_VALUES, mutated_text, mutated_tree

PRESETS = {name: read_preset(name) for name in preset_names()}
CONFIG_ERRORS = (ConfigError, UnknownNameError)


def check(fn, *args, **kwargs) -> None:
    try:
        fn(*args, **kwargs)
    except ConfigError as err:
        assert err.key is not None and "config key" in str(err), str(err)
    except UnknownNameError as err:
        assert err.name is not None and str(err)


def test_every_preset_validates() -> None:
    for name, data in PRESETS.items():
        assert validate_config(data, name).name == name


@FUZZ
@given(data=st.data(), name=st.sampled_from(sorted(PRESETS)))
def test_mutated_presets(data, name: str) -> None:
    check(validate_config, data.draw(mutated_tree(PRESETS[name])), f"preset {name}")


@FUZZ
@given(data=st.data(), name=st.sampled_from(sorted(PRESETS)))
def test_mutated_yaml_files(scratch: Path, data, name: str) -> None:
    path = scratch / "cfg" / f"{name}.yaml"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(data.draw(mutated_text(yaml.safe_dump(PRESETS[name]))), encoding="utf-8", errors="surrogatepass")
    check(load_config, str(path))


KEYS = ["seed", "generation.n_episodes", "generation.batch_size", "generation.backend", "generation.family",
        "generation.params", "output.rows_per_shard", "runner.workers", "runner.kind", "split.ratios",
        "questions", "nosuch.key", "generation", "generation.n_episodes.x", "", "."]  # fmt: skip
VALUES = ["", "-1", "0", "1e308", ".nan", "[1, 2", "{a: 1}", "[0.5, 0.5]", "null", "true", "x", "99999999999999999999"]


@FUZZ
@given(key=st.sampled_from(KEYS), value=st.sampled_from(VALUES) | st.text(max_size=12), raw=st.text(max_size=20))
def test_odd_overrides(key: str, value: str, raw: str) -> None:
    check(load_config, "demo", [f"{key}={value}"])
    check(load_config, "demo", [raw])


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("generation.n_episodes=-3", "generation.n_episodes"),
        ("generation.batch_size=.nan", "generation.batch_size"),
        ("seed=99999999999999999999999", None),
        ("generation.n_episodez=3", "generation.n_episodez"),
        ("runner.kind=yarn", "runner.kind"),
        ("generation=7", "generation"),
    ],
)
def test_bad_values_name_the_key(override: str, key: str | None) -> None:
    try:
        load_config("demo", [override])
    except ConfigError as err:
        assert key is None or err.key == key, str(err)
        return
    assert key is None, f"{override} was accepted"


@pytest.mark.parametrize("value", [v for v in ODD_VALUES if not isinstance(v, dict)])
def test_a_whole_config_of_the_wrong_type(value) -> None:
    with pytest.raises(CONFIG_ERRORS):
        validate_config(value, "x.yaml")


@pytest.mark.slow
@FUZZ_LONG
@given(data=st.data(), name=st.sampled_from(sorted(PRESETS)))
def test_mutated_presets_long(data, name: str) -> None:
    check(validate_config, data.draw(mutated_tree(PRESETS[name])), f"preset {name}")
