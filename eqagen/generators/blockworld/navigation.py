"""Where a player can stand and walk: standable voxels and the walk graph between them.

A voxel is standable when the block below is a floor and the voxel and the one above are passable (a
player is two blocks tall). A step goes to one of the four horizontal neighbours, up one block (a
jump, needing headroom above the start), level, or down up to three blocks (a drop without damage).
The graph is built with vectorised shifts over the voxel array and searched with scipy's csgraph.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from scipy.sparse.csgraph import breadth_first_order

from eqagen.generators.blockworld.world import BlockWorld

# Horizontal neighbours (dx, dz) in the order east, west, south, north.
STEPS = ((1, 0), (-1, 0), (0, 1), (0, -1))
_MAX_DROP = 3


def standable_mask(world: BlockWorld) -> np.ndarray:
    passable = world.palette.passable_table()[world.blocks]
    floor = world.palette.floor_table()[world.blocks]
    above = np.ones_like(passable)
    above[:, :-1, :] = passable[:, 1:, :]
    out = np.zeros_like(passable)
    out[:, 1:, :] = floor[:, :-1, :] & passable[:, 1:, :] & above[:, 1:, :]
    return out


def _shift(a: np.ndarray, dx: int, dy: int, dz: int, fill: bool) -> np.ndarray:
    """``out[x, y, z] = a[x + dx, y + dy, z + dz]`` (``fill`` outside the array)."""
    out = np.full_like(a, fill)
    sx, sy, sz = a.shape
    src = tuple(slice(max(d, 0), n + min(d, 0)) for d, n in zip((dx, dy, dz), (sx, sy, sz)))
    dst = tuple(slice(max(-d, 0), n + min(-d, 0)) for d, n in zip((dx, dy, dz), (sx, sy, sz)))
    out[dst] = a[src]
    return out


@dataclass
class WalkGraph:
    cells: np.ndarray  # [N, 3] standable voxels
    index: np.ndarray  # int32 [X, Y, Z] -> node id or -1
    graph: csr_matrix

    def node(self, voxel: tuple[int, int, int]) -> int:
        return int(self.index[voxel])

    def reachable_from(self, node: int) -> tuple[np.ndarray, np.ndarray]:
        """(nodes reachable in BFS order, predecessor array)."""
        order, pred = breadth_first_order(self.graph, node, directed=True, return_predecessors=True)
        return order, pred

    def nearest(self, point: np.ndarray, among: np.ndarray | None = None) -> int:
        cand = np.arange(len(self.cells)) if among is None else among
        d = np.abs(self.cells[cand] + 0.5 - np.asarray(point)).sum(axis=1)
        return int(cand[int(np.argmin(d))])


def build_walk_graph(world: BlockWorld) -> WalkGraph:
    stand = standable_mask(world)
    passable = world.palette.passable_table()[world.blocks]
    cells = np.argwhere(stand)
    index = np.full(stand.shape, -1, dtype=np.int32)
    index[tuple(cells.T)] = np.arange(len(cells), dtype=np.int32)
    head = _shift(passable, 0, 2, 0, True)  # headroom for a jump
    src_all, dst_all = [], []
    for dx, dz in STEPS:
        for dy in range(-_MAX_DROP, 2):
            ok = stand & _shift(stand, dx, dy, dz, False)
            if dy == 1:
                ok &= head
            for k in range(dy + 1, 2):  # the column the player passes through when dropping
                if dy < 0:
                    ok &= _shift(passable, dx, k, dz, True)
            src = np.argwhere(ok)
            if len(src):
                src_all.append(index[tuple(src.T)])
                dst_all.append(index[src[:, 0] + dx, src[:, 1] + dy, src[:, 2] + dz])
    src = np.concatenate(src_all) if src_all else np.zeros(0, np.int32)
    dst = np.concatenate(dst_all) if dst_all else np.zeros(0, np.int32)
    graph = csr_matrix((np.ones(len(src), np.int8), (src, dst)), shape=(len(cells), len(cells)))
    return WalkGraph(cells, index, graph)


def path_to(pred: np.ndarray, target: int) -> list[int]:
    """Nodes from the BFS source to ``target`` (inclusive); empty if unreachable."""
    if target < 0 or (pred[target] < 0 and not _is_source(pred, target)):
        return []
    out = [target]
    while pred[out[-1]] >= 0:
        out.append(int(pred[out[-1]]))
    return out[::-1]


def _is_source(pred: np.ndarray, node: int) -> bool:
    return bool(pred[node] == -9999)
