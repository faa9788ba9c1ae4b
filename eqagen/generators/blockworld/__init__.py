"""Minecraft worlds: embedded 60x60 biome worlds, world files (Anvil saves, Sponge schematics, PQB block
lists and environment specs), the explorer agent, question families and the optional MineRL backend.

Backends register lazily (``get_backend("blockworld", "embedded" | "world-file" | "minerl")``); see
docs/blockworld.md.
"""

from eqagen.generators.blockworld.embedded import generate_world
from eqagen.generators.blockworld.files import load_world, summarize
from eqagen.generators.blockworld.world import BIOMES, BlockWorld, Chest, Mob, Structure

__all__ = ["BIOMES", "BlockWorld", "Chest", "Mob", "Structure", "generate_world", "load_world", "summarize"]
