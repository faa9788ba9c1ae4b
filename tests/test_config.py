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
from eqagen.predicates.config import QUERY_MIX


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


def test_set_on_a_mapping_merges_one_key(tmp_path) -> None:
    # a config that names no query mix: the default's other four types stay beside the one set
    plain = tmp_path / "plain.yaml"
    plain.write_text("name: plain\ngeneration: {family: household, n_episodes: 4}\n")
    config = load_config(str(plain), ["questions.query_mix.count=0.5"])
    assert config.questions.query_mix == {**QUERY_MIX, "count": 0.5}
    # the demo names one: its other types stay
    demo = read_preset("demo")["questions"]["query_mix"]
    assert load_config("demo", ["questions.query_mix.count=0.5"]).questions.query_mix == {**demo, "count": 0.5}
    # tag-eqa names its family mix: the preset's other families stay
    tag = read_preset("tag-eqa")["questions"]["family_mix"]
    assert load_config("tag-eqa", ["questions.family_mix.moment=0.5"]).questions.family_mix == {**tag, "moment": 0.5}
    # an integer-keyed mapping: "1" names the key 1
    assert load_config("demo", ["questions.n_filters_mix.1=0.9"]).questions.n_filters_mix[1] == 0.9


def test_set_replaces_a_whole_mapping_only_when_the_mapping_itself_is_named() -> None:
    config = load_config("demo", ["questions.query_mix={count: 1, getState: 1}"])
    assert config.questions.query_mix == {"count": 1, "getState": 1}


def test_set_of_a_key_the_mapping_does_not_know_is_an_error() -> None:
    with pytest.raises(ConfigError) as err:
        load_config("demo", ["questions.query_mix.cuont=0.5"])
    assert err.value.key == "questions.query_mix.cuont" and "unknown key of the mapping" in err.value.problem
    assert "count" in err.value.allowed and "--set questions.query_mix=" in err.value.allowed
    # a mapping of free keys (backend parameters, empty by default) takes any key
    assert load_config("demo", ["generation.params.n_scenes=5"]).generation.params == {"n_scenes": 5}


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


# --- inputs that were accepted or crashed: each a ConfigError naming the key or the file ---------------

ALIAS_BOMB = "a: &a [x, x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{n}: &{n} [*{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}, *{p}]\n" for p, n in zip("abcdefgh", "bcdefghi")
)  # under 1 KB; expanded, 10**9 strings


def test_a_yaml_alias_bomb_is_refused_before_it_expands(tmp_path) -> None:
    import resource
    import time

    assert len(ALIAS_BOMB) < 1024
    path = tmp_path / "bomb.yaml"
    path.write_text(ALIAS_BOMB)
    before, start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, time.perf_counter()
    with pytest.raises(ConfigError, match="anchors and aliases") as err:
        load_config(str(path))
    assert err.value.source == str(path) and time.perf_counter() - start < 5
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before < 50_000  # KB: nothing expanded
    with pytest.raises(ConfigError, match="anchors and aliases"):
        load_config("demo", ["generation.params=&x {a: 1}"])


@pytest.mark.parametrize(
    ("override", "key"),
    [
        ("generation.n_episodes=true", "generation.n_episodes"),  # once accepted as 1
        ("generation.n_episodes=1000000000000000", "generation.n_episodes"),  # once grew memory without end
        ("generation.n_episodes=2.5", "generation.n_episodes"),
        ("generation.max_steps=1000000000", "generation.max_steps"),
        ("generation.batch_size=false", "generation.batch_size"),
        ("output.rows_per_shard=100000000000", "output.rows_per_shard"),
        ("runner.workers=100000", "runner.workers"),
        ("seed=true", "seed"),
        ("balance.entropy_threshold=.nan", "balance.entropy_threshold"),
        ("generation.params.hfov=.inf", "generation.params.hfov"),
        ("questions.query_mix.count=.nan", "questions.query_mix.count"),
    ],
)
def test_counts_are_strict_bounded_integers_and_numbers_finite(override: str, key: str) -> None:
    with pytest.raises(ConfigError) as err:
        load_config("demo", [override])
    assert err.value.key == key


def test_a_config_that_is_no_mapping_is_an_error_also_with_overrides(tmp_path) -> None:
    path = tmp_path / "list.yaml"
    path.write_text("- generation\n- seed\n")
    for overrides in ([], ["seed=3"]):  # with --set it raised AttributeError
        with pytest.raises(ConfigError, match="a config must be a YAML mapping of sections, got a list") as err:
            load_config(str(path), overrides)
        assert err.value.source == str(path)


def test_a_config_that_is_not_utf8_or_too_large_names_the_file(tmp_path) -> None:
    latin = tmp_path / "latin.yaml"
    latin.write_bytes("description: caf\xe9\n".encode("latin-1"))
    with pytest.raises(ConfigError, match="not UTF-8 text") as err:  # it raised UnicodeDecodeError
        load_config(str(latin))
    assert err.value.source == str(latin)
    big = tmp_path / "big.yaml"
    big.write_text("description: " + "x" * (2 << 20) + "\n")
    with pytest.raises(ConfigError, match="larger than a config can be"):
        load_config(str(big))


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("", "is empty (or only null)"),
        ("~\n", "is empty (or only null)"),
        ("# only a comment\n", "is empty (or only null)"),
        ("seed: 1\nseed: 2\n", "duplicate key 'seed' (line 2, column 1)"),
        ("generation:\n  n_episodes: 3\n  n_episodes: 4\n", "duplicate key 'n_episodes' (line 3, column 3)"),
        (f"seed: {'9' * 5000}\n", "not valid YAML: Exceeds the limit (4300 digits)"),
    ],
)
def test_an_empty_file_duplicate_keys_and_huge_integers_are_refused(tmp_path, text, problem) -> None:
    """Regression: an empty file or '~' ran the defaults (exit 0), a duplicate key silently kept the last
    value, a 5,000-digit integer was an internal error."""
    path = tmp_path / "c.yaml"
    path.write_text(text)
    with pytest.raises(ConfigError) as err:
        load_config(str(path))
    assert problem in str(err.value) and str(path) in str(err.value)


def test_a_set_key_of_thousands_of_parts_and_unbounded_counts_are_refused_naming_the_bound() -> None:
    """Regression: a --set key of 3,000 parts was an internal error; questions_per_episode and
    max_stalled_attempts of 100,000 each ran past 90 s with no word."""
    with pytest.raises(ConfigError, match=r"a key of 3,000 parts, more than 16"):
        load_config("demo", [".".join(["a"] * 3000) + "=1"])
    with pytest.raises(ConfigError, match=r"questions.questions_per_episode.*less than or equal to 5000"):
        load_config("demo", ["questions.questions_per_episode=100000"])
    with pytest.raises(ConfigError, match=r"questions.max_stalled_attempts.*less than or equal to 1000"):
        load_config("demo", ["questions.max_stalled_attempts=100000"])
