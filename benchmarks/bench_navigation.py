"""Navigation speed: shortest-path episodes per second on a 200x200 grid (target: 500 or more per core).

A "shortest-path episode" is what the ``express`` policy does per episode: a random navigable start and
a goal on its island, the geodesic shortest path, and the atomic actions (move_forward 0.25 m, 30 degree
turns) that walk it to within the goal radius. Measured on one embedded house of 200x200 cells (20 m x
20 m at 0.1 m), single process. Rates are per CPU second of this process (``time.process_time``),
i.e. per core, so that other processes on a shared machine inflate them less than wall time would.
Also reported: the one-off path-finder build per scene, the raw path query rate, a plain
``scipy.sparse.csgraph.dijkstra`` over the grid for comparison, and full episodes (with visibility,
events and the Episode record) per second.

    python benchmarks/bench_navigation.py [--episodes 2000] [--json PATH]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

import numpy as np
from scipy.sparse.csgraph import dijkstra

from eqagen.core import derive_rng
from eqagen.generators.base import EpisodeSpec
from eqagen.generators.navigation.backend import walk_episode
from eqagen.generators.navigation.houses import make_house
from eqagen.generators.navigation.pathfinder import GridPathFinder, ShortestPath, grid_graph
from eqagen.generators.navigation.policies import EXPRESS, PolicyStats, sample_route

TARGET_PER_SECOND = 500.0


def time_build(scene) -> tuple[GridPathFinder, float]:
    start = time.process_time()
    pf = GridPathFinder(scene.grid)
    return pf, time.process_time() - start


def time_routes(pf: GridPathFinder, n: int) -> tuple[float, PolicyStats]:
    rng, stats = derive_rng(0, "bench", "routes"), PolicyStats()
    start = time.process_time()
    for _ in range(n):
        sample_route(pf, rng, EXPRESS, stats)
    return n / (time.process_time() - start), stats


def time_queries(pf: GridPathFinder, n: int) -> float:
    rng = derive_rng(0, "bench", "queries")
    pairs = [(pf.get_random_navigable_point(rng), pf.get_random_navigable_point(rng)) for _ in range(n)]
    start = time.process_time()
    for a, b in pairs:
        pf.find_path(ShortestPath(a, b))
    return n / (time.process_time() - start)


def time_dijkstra(navigable: np.ndarray, n: int) -> float:
    graph, _ = grid_graph(navigable)
    sources = derive_rng(0, "bench", "dijkstra").integers(graph.shape[0], size=n)
    start = time.process_time()
    for s in sources:
        dijkstra(graph, directed=True, indices=int(s), return_predecessors=True)
    return n / (time.process_time() - start)


def time_episodes(scene, n: int) -> float:
    start = time.process_time()
    for i in range(n):
        walk_episode(scene, EpisodeSpec("navigation", "embedded", scene.scene_id, 0, i, {"policy": "express"}))
    return n / (time.process_time() - start)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--episodes", type=int, default=2000)
    ap.add_argument("--json", type=Path)
    args = ap.parse_args(argv)
    scene = make_house(0, 0, shape=(200, 200))
    pf, build_s = time_build(scene)
    scene._pathfinder = pf
    per_s, stats = time_routes(pf, args.episodes)
    result = {
        "grid": list(scene.grid.shape),
        "navigable_cells": int(scene.grid.navigable.sum()),
        "corner_cells": len(pf.corners),
        "pathfinder_build_s": round(build_s, 4),
        "shortest_path_episodes_per_s": round(per_s, 1),
        "attempts_per_episode": round(stats.attempts / max(stats.accepted, 1), 3),
        "path_queries_per_s": round(time_queries(pf, 2000), 1),
        "csgraph_dijkstra_full_grid_per_s": round(time_dijkstra(scene.grid.navigable, 200), 1),
        "full_episodes_per_s": round(time_episodes(scene, 200), 1),
        "target_per_s": TARGET_PER_SECOND,
    }
    result["meets_target"] = result["shortest_path_episodes_per_s"] >= TARGET_PER_SECOND
    for k, v in result.items():
        print(f"{k:36s} {v}")
    print(
        f"target: >= {TARGET_PER_SECOND:.0f} shortest-path episodes/s per core: "
        f"{'met' if result['meets_target'] else 'NOT met'} (timings include other processes' load)"
    )
    if args.json:
        args.json.write_text(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
