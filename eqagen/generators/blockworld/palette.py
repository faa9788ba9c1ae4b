"""Block states as text and the palette that maps them to the small integers of a voxel array.

A block state is written the way Minecraft's commands write it: ``minecraft:chest[facing=east,type=left]``
(namespace, name, then properties sorted by key). PQB's block lists quote the property values
(``facing="east"``); :func:`canonical_state` removes the quotes, so the same block always has the same
text whichever file it came from. A few PQB blocks carry a second layer in braces, a fluid
(``minecraft:red_sandstone_stairs[...]{minecraft:water[level="0"]}``: waterlogged stairs); the layer is
kept in the text, and :func:`parse_state` reports it as ``waterlogged=true``, which is how Anvil files
store it. Index 0 of every palette is ``minecraft:air``.
"""

from __future__ import annotations

import re

import numpy as np

AIR = "minecraft:air"
_STATE_RE = re.compile(
    r"^(?P<name>[a-z0-9_.\-]+(?::[a-z0-9_./\-]+)?)(?:\[(?P<props>[^\]]*)\])?(?:\{(?P<layer>[^}]*)\})?$"
)

# Blocks a ray passes through (line of sight) and a player can stand inside.
_SEE_THROUGH_SUFFIXES = ("glass", "glass_pane", "_sapling", "torch", "_button", "_carpet", "_sign", "rail")
_SEE_THROUGH = {
    AIR,
    "minecraft:cave_air",
    "minecraft:void_air",
    "minecraft:grass",
    "minecraft:short_grass",
    "minecraft:tall_grass",
    "minecraft:fern",
    "minecraft:large_fern",
    "minecraft:dandelion",
    "minecraft:poppy",
    "minecraft:cornflower",
    "minecraft:oxeye_daisy",
    "minecraft:azure_bluet",
    "minecraft:dead_bush",
    "minecraft:snow",
    "minecraft:vine",
    "minecraft:water",
    "minecraft:crimson_roots",
    "minecraft:warped_roots",
    "minecraft:nether_sprouts",
    "minecraft:crimson_fungus",
    "minecraft:warped_fungus",
    "minecraft:peony",
    "minecraft:rose_bush",
    "minecraft:lilac",
    "minecraft:sunflower",
    "minecraft:kelp",
    "minecraft:kelp_plant",
    "minecraft:seagrass",
    "minecraft:tall_seagrass",
    "minecraft:wheat",
    "minecraft:carrots",
    "minecraft:potatoes",
    "minecraft:sugar_cane",
    "minecraft:lantern",
    "minecraft:iron_bars",
    "minecraft:ladder",
}
# See-through blocks a player cannot walk through.
_BLOCKING = {
    "minecraft:water",
    "minecraft:lava",
    "minecraft:iron_bars",
    "minecraft:lantern",
    "minecraft:kelp",
    "minecraft:kelp_plant",
    "minecraft:seagrass",
    "minecraft:tall_seagrass",
}
# Blocks that are no floor: liquids, and fences and walls (1.5 blocks high: a player cannot jump on them).
_NOT_FLOOR = {
    "minecraft:water",
    "minecraft:lava",
    "minecraft:kelp",
    "minecraft:kelp_plant",
    "minecraft:seagrass",
    "minecraft:cactus",
}
_NOT_FLOOR_SUFFIXES = ("_fence", "_wall", "_fence_gate")


def parse_state(text: str) -> tuple[str, dict[str, str]]:
    """``minecraft:chest[facing="east"]`` -> ``("minecraft:chest", {"facing": "east"})``; raises ValueError."""
    name, props, layer = _parse_parts(text)
    if layer and base_name(layer) == "minecraft:water":
        props["waterlogged"] = "true"
    return name, props


def _parse_parts(text: str) -> tuple[str, dict[str, str], str]:
    m = _STATE_RE.match(text.strip())
    if m is None:
        raise ValueError(f"not a block state: {text!r}")
    name = m.group("name")
    if ":" not in name:
        name = "minecraft:" + name
    props: dict[str, str] = {}
    raw = m.group("props")
    if raw:
        for part in raw.split(","):
            key, sep, value = part.partition("=")
            if not sep or not key.strip():
                raise ValueError(f"bad property {part!r} in block state {text!r}")
            props[key.strip()] = value.strip().strip('"')
    layer = m.group("layer")
    return name, props, canonical_state(layer) if layer else ""


def format_state(name: str, props: dict[str, str] | None = None, quoted: bool = False) -> str:
    if not props:
        return name
    q = '"' if quoted else ""
    inner = ",".join(f"{k}={q}{props[k]}{q}" for k in sorted(props))
    return f"{name}[{inner}]"


def canonical_state(text: str) -> str:
    name, props, layer = _parse_parts(text)
    return format_state(name, props) + (f"{{{layer}}}" if layer else "")


def quoted_state(state: str) -> str:
    """PQB's spelling of a state: property values in double quotes."""
    name, props, layer = _parse_parts(state)
    inner = f"{{{quoted_state(layer)}}}" if layer else ""
    return format_state(name, props, quoted=True) + inner


def base_name(state: str) -> str:
    """The block id without properties: ``minecraft:oak_fence[east=true]`` -> ``minecraft:oak_fence``."""
    return state.split("[", 1)[0].split("{", 1)[0]


def short_name(state: str) -> str:
    """The block id without namespace and properties: ``oak_fence``."""
    return base_name(state).split(":", 1)[-1]


def is_see_through(state: str) -> bool:
    b = base_name(state)
    return b in _SEE_THROUGH or b.endswith(_SEE_THROUGH_SUFFIXES)


def is_passable(state: str) -> bool:
    """A player can stand inside it (air, plants, torches, snow layers) or walk through it (doors and
    fence gates, which a player opens)."""
    b = base_name(state)
    if b.endswith(("_door", "_fence_gate")) and not b.endswith("trapdoor"):
        return True
    return is_see_through(state) and b not in _BLOCKING and not b.endswith(("glass", "glass_pane"))


def is_floor(state: str) -> bool:
    b = base_name(state)
    return not is_see_through(state) and b not in _NOT_FLOOR and not b.endswith(_NOT_FLOOR_SUFFIXES)


class Palette:
    """Block states <-> integer ids; id 0 is air. Append-only, so ids already in arrays stay valid."""

    def __init__(self, states: list[str] | None = None):
        self.states: list[str] = [AIR]
        self._index: dict[str, int] = {AIR: 0}
        for s in states or []:
            self.id(s)

    def __len__(self) -> int:
        return len(self.states)

    def __contains__(self, state: str) -> bool:
        return canonical_state(state) in self._index

    def id(self, state: str) -> int:
        """The id of a state, adding it if new (the text is canonicalised first)."""
        s = state if state in self._index else canonical_state(state)
        found = self._index.get(s)
        if found is None:
            found = len(self.states)
            self.states.append(s)
            self._index[s] = found
        return found

    def ids_where(self, predicate) -> np.ndarray:
        """Boolean lookup table over ids: ``table[blocks]`` masks a voxel array vectorised."""
        return np.array([bool(predicate(s)) for s in self.states], dtype=bool)

    def base_names(self) -> list[str]:
        return [base_name(s) for s in self.states]

    def see_through_table(self) -> np.ndarray:
        return self.ids_where(is_see_through)

    def floor_table(self) -> np.ndarray:
        return self.ids_where(is_floor)

    def passable_table(self) -> np.ndarray:
        return self.ids_where(is_passable)
