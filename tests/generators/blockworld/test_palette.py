import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqagen.generators.blockworld.palette import (
    Palette,
    base_name,
    canonical_state,
    is_floor,
    is_passable,
    parse_state,
    quoted_state,
)


def test_parse_quoted_and_unquoted_give_one_canonical_text():
    a = canonical_state('minecraft:chest[type="left",facing="east"]')
    b = canonical_state("minecraft:chest[facing=east,type=left]")
    assert a == b == "minecraft:chest[facing=east,type=left]"
    assert parse_state(a) == ("minecraft:chest", {"facing": "east", "type": "left"})


def test_fluid_layer_is_kept_and_reported_as_waterlogged():
    text = 'minecraft:red_sandstone_stairs[facing="west",half="bottom"]{minecraft:water[level="0"]}'
    state = canonical_state(text)
    assert state.endswith("{minecraft:water[level=0]}")
    assert base_name(state) == "minecraft:red_sandstone_stairs"
    assert parse_state(state)[1]["waterlogged"] == "true"
    assert (
        quoted_state(state) == 'minecraft:red_sandstone_stairs[facing="west",half="bottom"]{minecraft:water[level="0"]}'
    )


def test_bad_state_raises():
    with pytest.raises(ValueError):
        parse_state("minecraft:chest[facing]")
    with pytest.raises(ValueError):
        parse_state("Not A Block")


def test_namespace_is_added():
    assert parse_state("stone") == ("minecraft:stone", {})


def test_palette_ids_are_stable_and_air_is_zero():
    p = Palette()
    assert p.id("minecraft:air") == 0
    i = p.id('minecraft:oak_log[axis="y"]')
    assert p.id("minecraft:oak_log[axis=y]") == i
    assert len(p) == 2


def test_walkability_tables():
    assert is_passable("minecraft:grass") and is_passable("minecraft:air")
    assert not is_passable("minecraft:glass_pane") and not is_passable("minecraft:stone")
    assert is_floor("minecraft:stone") and not is_floor("minecraft:oak_fence") and not is_floor("minecraft:water")


names = st.from_regex(r"[a-z][a-z_]{0,12}", fullmatch=True)


@given(names, st.dictionaries(names, names, max_size=4))
def test_canonical_roundtrip(name, props):
    text = quoted_state(f"minecraft:{name}" + (f"[{','.join(f'{k}={v}' for k, v in props.items())}]" if props else ""))
    assert parse_state(text) == (f"minecraft:{name}", props)
    assert canonical_state(canonical_state(text)) == canonical_state(text)
