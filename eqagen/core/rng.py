"""Seeded randomness and stable hashes.

One explicit generator per unit of work, derived from (seed, stage, scene, ...): the same inputs give
the same stream in any process, on any worker, in any order. Never use a module-level generator.
"""

from __future__ import annotations

import hashlib
import json

import numpy as np


def stable_hash(*parts: object, digest_size: int = 8) -> str:
    """Hex digest of the parts, stable across processes and Python versions (unlike ``hash``)."""
    blob = json.dumps(parts, sort_keys=True, separators=(",", ":"), default=str).encode()
    return hashlib.blake2b(blob, digest_size=digest_size).hexdigest()


def stable_int(*parts: object) -> int:
    """A 64-bit integer derived from the parts; used as entropy for seed sequences."""
    return int(stable_hash(*parts, digest_size=8), 16)


def derive_rng(seed: int, *keys: object) -> np.random.Generator:
    """The generator for one unit of work, e.g. ``derive_rng(seed, "episodes", scene_id, i)``."""
    return np.random.default_rng(np.random.SeedSequence([int(seed) & (2**63 - 1), stable_int(*keys)]))


def derive_seed(seed: int, *keys: object) -> int:
    """A 31-bit integer seed for code that only takes ints (e.g. a simulator's own seed)."""
    return stable_int(seed, *keys) & 0x7FFFFFFF
