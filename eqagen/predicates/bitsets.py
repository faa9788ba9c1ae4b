"""Cell selections as Python integers: the sampler's accelerator, a preview of a filter's effect.

A proposal previews a dozen candidate filters on a few hundred cells at a time: arrays so small that
numpy's per-call cost dominates. Here every filter spec's cells (a row of ``EpisodeIndex.holds``) become
one Python int, built once per episode, and a preview is a few integer operations (SWAR: SIMD within a
register) on ints of some hundred bits. A preview only steers proposals: whether a question is accepted
is decided by the definition (``evaluator``) and the validity rules (``validity``).

The layout: the index's cells are grouped by entity (``cell_e`` is sorted); each entity gets a *field*
of ``w`` bits, its cells in reverse time order (bit 0 of the field: its last step), followed by one
guard bit that selections never set. Then, for a selection ``S``:

- the entities it holds: ``(S + M) & G`` (``M``: ``2**w - 1`` in every field, ``G``: the guard bits), as
  a field is non-zero exactly when adding ``2**w - 1`` carries into its guard bit;
- each entity's last selected cell: the lowest set bit of each field, ``X & ~(X - L)`` with
  ``X = S | G`` (``L``: the lowest bit of every field); an empty field yields its guard bit, dropped;
- for a query that reports an entity only where its last selected cell is one of some cells ``R``
  (getLocation: held by a receptacle), the entities it names: those of ``last(S) & R``;
- for a query whose answer is the distinct values it reports (a state, a property, a receptacle), the
  values named: value ``v`` is named when ``last(S) & R & V_v`` is non-zero (``V_v``: the cells whose
  value code is ``v``, one plane per distinct value).

``tests/predicates/test_bitsets.py`` holds the named entities, their last steps and the values named equal
to what the query's definition answers, on every program sampled from household, navigation and
Minecraft episodes.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

import numpy as np


@dataclass(frozen=True)
class CellLayout:
    """Where each of the index's cells sits in the integers, and the per-field constants."""

    bit_of_cell: np.ndarray  # int [K]: bit position of each cell
    width: int  # bits in all, guards included
    low: int  # L: the lowest bit of every field (each entity's last cell)
    fill: int  # M: 2**w - 1 in every field
    guards: int  # G: the guard bit of every field


def cell_layout(cell_e: np.ndarray, ent_starts: np.ndarray) -> CellLayout:
    """The layout of cells sorted by entity, then step (``build_index``'s order)."""
    k = cell_e.size
    if k == 0:
        return CellLayout(np.zeros(0, dtype=np.int64), 0, 0, 0, 0)
    lengths = np.diff(np.append(ent_starts, k))
    offsets = ent_starts + np.arange(ent_starts.size)  # one guard bit after each earlier field
    run = np.repeat(np.arange(ent_starts.size), lengths)
    within = np.arange(k) - ent_starts[run]
    bit_of_cell = offsets[run] + (lengths[run] - 1 - within)  # reversed: bit 0 of a field is its last step
    width = k + ent_starts.size
    guard_bits = offsets + lengths
    return CellLayout(
        bit_of_cell=bit_of_cell,
        width=width,
        low=to_int_positions(offsets, width),
        fill=sum(((1 << int(n)) - 1) << int(o) for n, o in zip(lengths.tolist(), offsets.tolist())),
        guards=to_int_positions(guard_bits, width),
    )


def to_int_positions(positions: np.ndarray, width: int) -> int:
    bits = np.zeros(max(width, 1), dtype=bool)
    bits[positions] = True
    return to_int(bits)


def to_int(bits: np.ndarray) -> int:
    """A bool ``[W]`` array as an int (bit i = element i)."""
    return int.from_bytes(np.packbits(bits, bitorder="little").tobytes(), "little")


def rows_to_ints(rows: np.ndarray, layout: CellLayout) -> list[int]:
    """Bool ``[C, K]`` cell rows as ints in the layout (one packbits call for all rows)."""
    if rows.shape[0] == 0:
        return []
    placed = np.zeros((rows.shape[0], max(layout.width, 1)), dtype=bool)
    placed[:, layout.bit_of_cell] = rows
    packed = np.packbits(placed, axis=1, bitorder="little")
    n = packed.shape[1]
    raw = packed.tobytes()
    return [int.from_bytes(raw[i * n : (i + 1) * n], "little") for i in range(rows.shape[0])]


def plane_rows(codes: np.ndarray) -> np.ndarray:
    """Int value codes ``[K]`` per cell as one-hot rows ``[V, K]`` (``rows_to_ints`` makes them the planes):
    row v holds the cells whose code is the v-th distinct code."""
    dense = dense_codes(codes)
    n_values = int(dense.max()) + 1 if dense.size else 0
    return dense[None, :] == np.arange(n_values)[:, None]


def dense_codes(codes: np.ndarray) -> np.ndarray:
    """Each code's rank among the distinct codes (``np.unique``'s inverse): by a table over the codes' range
    where it is small (flags, type codes: several times faster than sorting), else by ``np.unique``."""
    codes = np.asarray(codes).ravel()
    if codes.size and codes.dtype.kind in "iub":
        lo, hi = int(codes.min()), int(codes.max())
        if hi - lo <= 4 * codes.size + 64:
            shifted = codes.astype(np.int64) - lo
            present = np.zeros(hi - lo + 1, dtype=bool)
            present[shifted] = True
            return (np.cumsum(present) - 1)[shifted]
    return np.unique(codes, return_inverse=True)[1].ravel()


@dataclass(frozen=True)
class BitView:
    """A query view's cells as an int, and what its previews need."""

    cells: int  # the view's cells
    planes: tuple[int, ...] | None  # one plane per distinct value (queries answering with values), else None
    events: bool  # counting events: a preview is the set of cells
    reported: int | None = None  # cells where an entity's last selected step is reported; None: all


class Preview(NamedTuple):
    """What a selection's answer would be, as far as the bits tell: ``content`` (the event cells, the
    values named, or the entities named) compared between selections, and ``size`` (cells or entities)
    checked against the answer limits. A named tuple: a proposal makes hundreds, and a tuple is made in a
    fraction of a frozen dataclass's time."""

    content: int
    size: int


class Previewer:
    """Previews of selections within one view (see the module docstring)."""

    def __init__(self, layout: CellLayout, view: BitView):
        self.fill, self.guards, self.low = layout.fill, layout.guards, layout.low
        self.planes, self.events, self.reported = view.planes, view.events, view.reported

    def present(self, sel: int) -> int:
        """Guard bits of the entities that ``sel`` holds."""
        return (sel + self.fill) & self.guards

    def last(self, sel: int) -> int:
        """Each entity's last selected cell (one bit per non-empty field)."""
        x = sel | self.guards
        return x & ~(x - self.low) & ~self.guards

    def named(self, sel: int) -> int:
        """Guard bits of the entities the query names: those it holds, or (``reported``) those whose last
        selected cell is reported."""
        if self.reported is None:
            return self.present(sel)
        return self.present(self.last(sel) & self.reported)

    def values(self, sel: int) -> int:
        """Bit v set where value v is named (queries answering with values)."""
        last = self.last(sel)
        if self.reported is not None:
            last &= self.reported
        out = 0
        for v, plane in enumerate(self.planes or ()):
            if last & plane:
                out |= 1 << v
        return out

    def preview(self, sel: int) -> Preview:
        if self.events:
            return Preview(sel, sel.bit_count())
        named = self.named(sel)
        content = self.values(sel) if self.planes is not None else named
        return Preview(content, named.bit_count())
