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


_PAD = 4  # border added around the arrays so every neighbour offset stays inside


def _padded_flat(a: np.ndarray, fill) -> np.ndarray:
    return np.pad(a, _PAD, constant_values=fill).reshape(-1)


def build_walk_graph(world: BlockWorld) -> WalkGraph:
    stand = standable_mask(world)
    passable = world.palette.passable_table()[world.blocks]
    cells = np.argwhere(stand)
    index = np.full(stand.shape, -1, dtype=np.int32)
    index[tuple(cells.T)] = np.arange(len(cells), dtype=np.int32)
    # neighbour lookups as flat offsets into padded copies: one gather per (direction, height)
    shape = np.asarray(stand.shape) + 2 * _PAD
    strides = np.array([shape[1] * shape[2], shape[2], 1])
    flat = (cells + _PAD) @ strides
    index_p, passable_p = _padded_flat(index, -1), _padded_flat(passable, True)
    ids = np.arange(len(cells), dtype=np.int32)
    head = passable_p[flat + 2 * strides[1]]  # headroom for a jump
    src_all, dst_all = [], []
    for dx, dz in STEPS:
        for dy in range(-_MAX_DROP, 2):
            dst = index_p[flat + np.dot((dx, dy, dz), strides)]
            ok = dst >= 0
            if dy == 1:
                ok &= head
            for k in range(dy + 1, 2) if dy < 0 else ():  # the column passed through when dropping
                ok &= passable_p[flat + np.dot((dx, k, dz), strides)]
            src_all.append(ids[ok])
            dst_all.append(dst[ok])
    src, dst = np.concatenate(src_all), np.concatenate(dst_all)
    # float64 weights: csgraph converts any other dtype on every call
    graph = csr_matrix((np.ones(len(src), np.float64), (src, dst)), shape=(len(cells), len(cells)))
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
