"""Blockworld speed: embedded worlds plus their explorer episodes per second per core (target: >= 20).

One unit is a world generated (60x60, one of the eight biomes) and one episode recorded in it (the
explorer's walk, visibility of every entity at every step, events, regions, ground truth). Times are
process CPU time, so other processes on a shared machine inflate them less than wall time; the
wall-clock rate is printed too. Also reports a stage split and, for reference, the save roundtrip.
``--json PATH`` writes the numbers.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

from eqagen.core import derive_rng
from eqagen.generators import get_backend
from eqagen.generators.blockworld.embedded import generate_world
from eqagen.generators.blockworld.explorer import explore
from eqagen.generators.blockworld.record import walk_to_episode
from eqagen.generators.blockworld.savedir import read_save, write_save

TARGET_PER_SECOND = 20.0


def time_units(n: int, seed: int) -> dict:
    backend = get_backend("blockworld", "embedded")
    specs = backend.plan(n, seed, {"max_steps": 400})
    backend.run(specs[0])  # warm up imports and caches
    cpu, wall = time.process_time(), time.perf_counter()
    steps = sum(backend.run(s).n_steps for s in specs)
    cpu, wall = time.process_time() - cpu, time.perf_counter() - wall
    return {
        "units": n,
        "cpu_s": cpu,
        "wall_s": wall,
        "per_s_cpu": n / cpu,
        "per_s_wall": n / wall,
        "mean_steps": steps / n,
    }


def time_stages(n: int, seed: int) -> dict:
    backend = get_backend("blockworld", "embedded")
    out = {"world": 0.0, "walk": 0.0, "record": 0.0}
    for s in backend.plan(n, seed, {"max_steps": 400}):
        t = time.process_time()
        world = generate_world(s.params["biome"], s.params["world_seed"], s.scene_id)
        out["world"] += time.process_time() - t
        t = time.process_time()
        walk = explore(world, derive_rng(s.seed, "blockworld-explore", s.scene_id, s.index))
        out["walk"] += time.process_time() - t
        t = time.process_time()
        walk_to_episode(world, walk, "embedded", s.seed, s.index)
        out["record"] += time.process_time() - t
    return {k: 1000 * v / n for k, v in out.items()}


def time_save_roundtrip(n: int, seed: int) -> float:
    worlds = [generate_world(b, seed) for b in ("plains", "desert", "cave", "city")][:n]
    with tempfile.TemporaryDirectory() as tmp:
        t = time.process_time()
        for i, w in enumerate(worlds):
            read_save(write_save(w, Path(tmp) / str(i)))
        return 1000 * (time.process_time() - t) / len(worlds)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=80, help="worlds (each with one episode) to time")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="write the numbers here")
    args = parser.parse_args(argv)
    units = time_units(args.n, args.seed)
    stages = time_stages(min(args.n, 40), args.seed)
    save_ms = time_save_roundtrip(4, args.seed)
    ok = units["per_s_cpu"] >= TARGET_PER_SECOND
    print(f"blockworld: {units['units']} worlds + episodes (mean {units['mean_steps']:.0f} steps)")
    print(
        f"  {units['per_s_cpu']:.1f} worlds+episodes per CPU second (target >= {TARGET_PER_SECOND:.0f}): "
        f"{'OK' if ok else 'BELOW TARGET'}"
    )
    print(f"  {units['per_s_wall']:.1f} per wall second (shared machine: wall time includes others' load)")
    print(
        f"  per unit: world {stages['world']:.1f} ms, walk {stages['walk']:.1f} ms, "
        f"episode record {stages['record']:.1f} ms"
    )
    print(f"  Anvil save write + read: {save_ms:.1f} ms per world")
    if args.json:
        args.json.write_text(
            json.dumps(
                {
                    "benchmark": "blockworld",
                    "target_per_s": TARGET_PER_SECOND,
                    "ok": ok,
                    **units,
                    "stage_ms": stages,
                    "save_roundtrip_ms": save_ms,
                },
                indent=2,
            )
        )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
