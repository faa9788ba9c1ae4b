"""The eight PQB biome kinds: ground, vegetation, building materials and mobs of each.

Mobs follow PQB-EQA's environment specification (the spawn list per biome and the mobs named in
``qea_for_environment_generation.csv``): plains, town and mansion have farm animals, desert rabbits
(RabbitType 4), snow polar bears, wolves and rabbits (RabbitType 1), city villagers and wolves, cave bats
and the nether striders.
"""

from __future__ import annotations

from dataclasses import dataclass

from eqagen.core import UnknownNameError


@dataclass(frozen=True)
class BiomeProfile:
    name: str
    minecraft_biome: str
    surface: str
    subsurface: str
    deep: str
    plant: str  # "tree", "cactus", "fungus" or "" (what the counted vegetation is)
    woods: tuple[str, ...]  # wood kinds of its trees (oak, spruce, crimson, ...)
    ground_cover: tuple[str, ...]  # small plants scattered on the surface
    house_materials: tuple[str, ...]
    fence_materials: tuple[str, ...]  # fence block ids without namespace
    wall_materials: tuple[str, ...]
    structures: tuple[str, ...]  # structure kinds this biome can hold
    mobs: tuple[str, ...]
    mob_extra: tuple[tuple[str, str, int], ...] = ()  # (mob, NBT key, value)
    ceiling: bool = False  # a cave: stone above the walkable space
    road: str = ""

    @property
    def max_plants(self) -> int:
        return 0 if not self.plant else 9


_FARM = ("sheep", "cow", "chicken", "pig")
_WOOD_FENCES = ("oak_fence", "spruce_fence", "birch_fence", "dark_oak_fence", "acacia_fence", "jungle_fence")

PROFILES: dict[str, BiomeProfile] = {
    p.name: p
    for p in (
        BiomeProfile(
            "plains",
            "minecraft:plains",
            "grass_block",
            "dirt",
            "stone",
            "tree",
            ("oak", "birch"),
            ("grass", "dandelion", "poppy", "oxeye_daisy"),
            ("oak_planks", "cobblestone", "birch_planks"),
            _WOOD_FENCES,
            ("cobblestone", "mossy_cobblestone", "stone_bricks"),
            ("house", "garden", "wagon", "well", "wall"),
            _FARM,
        ),
        BiomeProfile(
            "town",
            "minecraft:plains",
            "grass_block",
            "dirt",
            "stone",
            "tree",
            ("oak", "spruce"),
            ("grass", "poppy", "cornflower"),
            ("spruce_planks", "oak_planks", "bricks", "stone_bricks"),
            _WOOD_FENCES,
            ("cobblestone", "stone_bricks", "bricks"),
            ("house", "house", "garden", "wagon", "well", "wall"),
            _FARM,
            road="dirt_path",
        ),
        BiomeProfile(
            "mansion",
            "minecraft:dark_forest",
            "grass_block",
            "dirt",
            "stone",
            "tree",
            ("dark_oak", "oak"),
            ("grass", "fern", "poppy"),
            ("dark_oak_planks", "birch_planks", "cobblestone"),
            ("dark_oak_fence", "spruce_fence", "oak_fence", "birch_fence"),
            ("cobblestone", "stone_bricks"),
            ("house", "garden", "wall", "wagon"),
            _FARM,
        ),
        BiomeProfile(
            "desert",
            "minecraft:desert",
            "sand",
            "sandstone",
            "stone",
            "cactus",
            (),
            ("dead_bush",),
            ("sandstone", "smooth_sandstone", "cut_sandstone"),
            ("acacia_fence", "jungle_fence", "oak_fence", "birch_fence"),
            ("sandstone", "red_sandstone"),
            ("house", "well", "wall", "garden", "wagon"),
            ("rabbit",),
            (("rabbit", "RabbitType", 4),),
        ),
        BiomeProfile(
            "snow",
            "minecraft:snowy_plains",
            "snow_block",
            "dirt",
            "stone",
            "tree",
            ("spruce",),
            ("snow",),
            ("spruce_planks", "packed_ice", "snow_block"),
            ("spruce_fence", "oak_fence", "dark_oak_fence", "birch_fence"),
            ("packed_ice", "cobblestone"),
            ("house", "garden", "wagon", "wall"),
            ("polar_bear", "wolf", "rabbit"),
            (("rabbit", "RabbitType", 1),),
        ),
        BiomeProfile(
            "nether",
            "minecraft:nether_wastes",
            "netherrack",
            "netherrack",
            "netherrack",
            "fungus",
            ("crimson", "warped"),
            ("crimson_roots", "warped_roots", "nether_sprouts"),
            ("nether_bricks", "blackstone", "red_nether_bricks", "polished_blackstone_bricks"),
            ("nether_brick_fence", "crimson_fence", "warped_fence"),
            ("nether_bricks", "blackstone"),
            ("house", "garden", "wall", "wagon"),
            ("strider",),
        ),
        BiomeProfile(
            "cave",
            "minecraft:dripstone_caves",
            "stone",
            "stone",
            "stone",
            "",
            (),
            ("brown_mushroom", "red_mushroom"),
            ("cobblestone", "oak_planks", "stone_bricks"),
            ("oak_fence", "spruce_fence", "dark_oak_fence"),
            ("cobblestone", "mossy_cobblestone"),
            ("house", "wagon", "wall", "garden"),
            ("bat",),
            ceiling=True,
        ),
        BiomeProfile(
            "city",
            "minecraft:plains",
            "gray_concrete",
            "stone",
            "stone",
            "tree",
            ("oak", "birch"),
            (),
            ("white_concrete", "light_gray_concrete", "quartz_bricks", "bricks", "gray_concrete"),
            ("oak_fence", "birch_fence", "spruce_fence", "dark_oak_fence"),
            ("stone_bricks", "bricks"),
            ("house", "house", "garden", "wall", "wagon"),
            ("villager", "wolf"),
            road="black_concrete",
        ),
    )
}


def profile(biome: str) -> BiomeProfile:
    if biome not in PROFILES:
        raise UnknownNameError("biome", biome, PROFILES)
    return PROFILES[biome]


def mob_extra(profile_: BiomeProfile, mob: str) -> dict[str, int]:
    return {key: value for m, key, value in profile_.mob_extra if m == mob}
