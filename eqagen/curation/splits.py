"""Stratified train/val/test splits that keep balance groups whole and hold scenes out of train.

``by="question"`` (the default): the unit is a balance group (all records of one ``balance_key``), joined
with the groups of the same episode and program's other records (``twin_units``), so every split stays
balanced and a grounded question is in the split of its ungrounded twin. A set of held-out scenes is
chosen first: a run of consecutive scene blocks (see ``SCENE_BLOCKS``; balancing clusters each question's
scenes in a few neighbouring blocks) large enough that its records make up ``unseen_fraction`` of val and
test. Every group that touches a held-out scene must go to val or test. Then, stratum by stratum (family, query type,
filter-family signature, grounded), groups are given to val+test (forced groups first) and to train
in the target proportions, carrying the rounding over from one stratum to the next so that the
totals match; the same is done between val and test, separately for forced and free groups, so
both get the same unseen share.

``by="scene"``: the unit is a scene; val and test scenes are all unseen, and balance groups may
straddle splits (the statistics say how many). A split file (scene -> split) overrides both.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy.sparse import coo_matrix
from scipy.sparse.csgraph import connected_components

from eqagen.core import SPLITS, derive_rng
from eqagen.curation.balance import blind_baseline_codes
from eqagen.curation.columns import (
    SCENE_BLOCKS,
    TWIN,
    combined_key,
    encode,
    joined_list_column,
    require_columns,
    scene_ring,
    twin_text,
)
from eqagen.curation.config import SplitConfig
from eqagen.curation.partition import HELD_OUT, held_out_rows
from eqagen.curation.split_file import read_split_file

HOLDOUT_TRIES = 16
# arcs of blocks tried for the held-out scenes; the one forcing fewest records wins
STRATUM_OVERFLOW_WEIGHT = 10.0  # a forced record beyond its stratum's val+test quota costs this many
UNSEEN_ROUNDS = 8  # corrections of the held-out target from the achieved unseen share; the best is kept
FORCED_CAP = 0.9  # most of val+test that groups forced out of train may fill, so strata can still be evened
STRATUM_REPORT_MIN = 50  # strata smaller than this are reported but not held to the 3-point check


@dataclass
class Units:
    """What the split assigns: per row its unit, per unit its size, stratum and random order key."""

    of_row: np.ndarray
    size: np.ndarray
    stratum: np.ndarray
    key: np.ndarray


@dataclass
class SplitAssignment:
    split: np.ndarray  # per row: 0 train, 1 val, 2 test
    held_out: np.ndarray  # per distinct scene (value order): chosen to stay out of train
    scene_values: list
    stats: dict


def split(table: pa.Table, config: SplitConfig, seed: int) -> tuple[pa.Table, dict]:
    """The same table with its ``split`` column assigned (the pipeline's ``split`` stage); ``config``
    may also be a mapping or None (the defaults)."""
    assignment = assign_splits(table, config, seed)
    names = pa.array(np.array(SPLITS, dtype=object)[assignment.split].tolist(), pa.string())
    field = pa.field("split", pa.string())
    if "split" in table.column_names:
        return table.set_column(table.column_names.index("split"), field, names), assignment.stats
    return table.append_column(field, names), assignment.stats


def assign_splits(table: pa.Table, config: SplitConfig, seed: int) -> SplitAssignment:
    require_columns(table, ("scene_id", "balance_key", *config.stratify_by), "split input")
    scene, scene_values = encode(table.column("scene_id"))
    stratum, stratum_names = strata(table, config.stratify_by)
    group, _ = encode(table.column("balance_key"))
    unit = twin_units(table, group)
    rng = derive_rng(seed, "curation", "split", config.by)
    held_out = np.zeros(len(scene_values), dtype=bool)
    if config.split_file is not None:
        mapping = read_split_file(config.split_file)
        codes = _split_from_file(scene_values, mapping, config)
        assignment = codes[scene]
    elif config.by == "scene":
        units = make_units(scene, stratum, rng)
        assignment = allocate(units, np.zeros(len(units.size), bool), config.ratios)[units.of_row]
    elif HELD_OUT in table.column_names:  # the scenes were partitioned before balancing: hold that partition out
        units = make_units(unit, stratum, rng)
        assignment, held_out = split_by_partition(scene, units, table.column(HELD_OUT), len(scene_values), config)
    else:
        units = make_units(unit, stratum, rng)
        assignment, held_out = split_by_question(scene, units, scene_values, config, rng)
    answer = encode(table.column("answer_key"))[0] if "answer_key" in table.column_names else None
    codes = {"scene": scene, "group": group, "answer": answer, "stratum": stratum}
    stats = split_stats(assignment, codes, held_out, stratum_names, config)
    return SplitAssignment(assignment.astype(np.int8), held_out, scene_values, stats)


def twin_units(table: pa.Table, group: np.ndarray) -> np.ndarray:
    """Per row its unit: the balance groups (``group`` codes) joined wherever records of one episode and
    program sit in both (a grounded question and its ungrounded twin have their own balance keys), so that
    every record derived from one episode and program goes to one split: a twin in train would give a test
    record's answer away (the ungrounded answer names each anchor's coordinates with its group's value).
    Read from the :data:`TWIN` key column, else from ``episode_id`` and ``program``; a table with neither
    (a synthetic pool) has no twins: the groups themselves."""
    names = set(table.column_names)
    if TWIN in names:
        text = table.column(TWIN)
    elif {"episode_id", "program"} <= names:
        text = twin_text(table.column("episode_id"), table.column("program"))
    else:
        return group
    if len(group) == 0:
        return group
    has = pc.is_valid(text).to_numpy(zero_copy_only=False)  # a row without a program has no twin
    twin = encode(pc.fill_null(text, ""))[0][has]
    first = np.zeros(int(twin.max()) + 1 if len(twin) else 0, dtype=np.int64)
    first[twin[::-1]] = group[has][::-1]  # the group of each program's first record
    n = int(group.max()) + 1
    links = coo_matrix((np.ones(len(twin)), (group[has], first[twin])), shape=(n, n))
    return connected_components(links, directed=False)[1].astype(np.int64)[group]


def strata(table: pa.Table, columns: tuple[str, ...]) -> tuple[np.ndarray, list[str]]:
    """Per row its stratum code, and each stratum's name (the column values joined by '|')."""
    codes, values = [], []
    for name in columns:
        column = table.column(name)
        if pa.types.is_list(column.type) or pa.types.is_large_list(column.type):
            column = joined_list_column(column)
        code, vals = encode(column)
        codes.append(code)
        values.append([str(v) for v in vals])
    key = combined_key(*codes)
    names = [""] * (int(key.max()) + 1 if len(key) else 0)
    first = np.unique(key, return_index=True)[1]
    for row in first:
        names[key[row]] = "|".join(values[j][codes[j][row]] for j in range(len(columns)))
    return key, names


def make_units(unit_of_row: np.ndarray, stratum: np.ndarray, rng: np.random.Generator) -> Units:
    """Units with their size, majority stratum and a random order key (drawn in unit-code order, so it
    does not depend on row order)."""
    n_units = int(unit_of_row.max()) + 1 if len(unit_of_row) else 0
    size = np.bincount(unit_of_row, minlength=n_units)
    radix = int(stratum.max(initial=0)) + 1
    pair, count = np.unique(unit_of_row * radix + stratum, return_counts=True)
    pair_unit, pair_stratum = pair // radix, pair % radix
    order = np.lexsort((pair_stratum, -count, pair_unit))
    first = order[np.unique(pair_unit[order], return_index=True)[1]]
    unit_stratum = np.zeros(n_units, dtype=np.int64)
    unit_stratum[pair_unit[first]] = pair_stratum[first]
    return Units(unit_of_row, size, unit_stratum, rng.random(n_units))


def split_by_question(
    scene: np.ndarray, units: Units, scene_values: list, config: SplitConfig, rng: np.random.Generator
) -> tuple[np.ndarray, np.ndarray]:
    """Split code per row and the held-out scene mask. Scenes outside the held-out set can end up
    without train records too (all their groups went to val or test), which raises the unseen share;
    so the held-out target is corrected from the achieved share, a few times, keeping the best."""
    n_rows, eval_share = len(scene), config.ratios[1] + config.ratios[2]
    desired = config.unseen_fraction if eval_share > 0 else 0.0
    starts = rng.choice(SCENE_BLOCKS, size=min(HOLDOUT_TRIES, SCENE_BLOCKS), replace=False)
    target = desired * eval_share * n_rows
    arcs = ring_arcs(scene, units, scene_values, starts) if target > 0 else []
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for _ in range(UNSEEN_ROUNDS):
        held = choose_held_out(arcs, units, len(scene_values), target, eval_share)
        forced = np.zeros(len(units.size), dtype=bool)
        forced[units.of_row[held[scene]]] = True
        assignment = allocate(units, forced, config.ratios)[units.of_row]
        shares = [unseen_share(scene, assignment, assignment == i) for i in (1, 2)]
        miss = max(abs(v - desired) for v in shares)
        if best is None or miss < best[0]:
            best = (miss, assignment, held)
        achieved = unseen_share(scene, assignment, assignment > 0)
        if desired == 0 or achieved == 0 or miss <= 0.01:
            break
        target *= desired / achieved
    return best[1], best[2]


def split_by_partition(
    scene: np.ndarray, units: Units, held_column: pa.ChunkedArray, n_scenes: int, config: SplitConfig
) -> tuple[np.ndarray, np.ndarray]:
    """Split code per row and the held-out scene mask, the held-out scenes given (``eqagen.curation.partition``):
    every group of a held-out scene goes to val or test, divided between them stratum by stratum; the seen
    groups fill the rest of each split's quota."""
    held_row = held_out_rows(held_column)
    held = np.zeros(n_scenes, dtype=bool)
    held[scene[held_row]] = True
    forced = np.zeros(len(units.size), dtype=bool)
    forced[units.of_row[held_row]] = True
    return allocate(units, forced, config.ratios)[units.of_row], held


def unseen_share(scene: np.ndarray, assignment: np.ndarray, rows: np.ndarray) -> float:
    """Share of the selected rows whose scene has no train record."""
    if not rows.any():
        return 0.0
    in_train = np.zeros(int(scene.max()) + 1, dtype=bool)
    in_train[scene[assignment == 0]] = True
    return float(np.mean(~in_train[scene[rows]]))


@dataclass
class Arc:
    """Scenes in ring order from one start, with the records they hold and the records of the groups
    they would force out of train, both cumulative over the first k scenes."""

    order: np.ndarray
    records: np.ndarray
    forced: np.ndarray
    first: np.ndarray  # per unit: position of its first scene on the arc (n_scenes if it has none)


def ring_arcs(scene: np.ndarray, units: Units, scene_values: list, starts: np.ndarray) -> list[Arc]:
    """One :class:`Arc` per start block; computed once, whatever the target."""
    n_scenes = len(scene_values)
    ring = scene_ring(scene_values)
    per_scene = np.bincount(scene, minlength=n_scenes)
    pair = np.unique(units.of_row * n_scenes + scene)  # distinct (unit, scene) incidences
    pair_unit, pair_scene = pair // n_scenes, pair % n_scenes
    unit_starts = np.flatnonzero(np.r_[True, pair_unit[1:] != pair_unit[:-1]])
    units_present = pair_unit[unit_starts]
    arcs = []
    for start in starts:
        order = np.argsort((ring - start * n_scenes // SCENE_BLOCKS) % n_scenes, kind="stable")
        position = np.empty(n_scenes, dtype=np.int64)
        position[order] = np.arange(n_scenes)
        first = np.full(len(units.size), n_scenes, dtype=np.int64)
        first[units_present] = np.minimum.reduceat(position[pair_scene], unit_starts)
        forced = np.bincount(first, weights=units.size, minlength=n_scenes + 1)[:n_scenes]
        arcs.append(Arc(order, np.cumsum(per_scene[order]), np.cumsum(forced), first))
    return arcs


def choose_held_out(arcs: list[Arc], units: Units, n_scenes: int, target: float, eval_share: float) -> np.ndarray:
    """Scenes kept out of train: the arc (among the starts) that reaches ``target`` records with the
    fewest forced records beyond any stratum's val + test quota, then the fewest forced records."""
    held = np.zeros(n_scenes, dtype=bool)
    if target <= 0 or n_scenes == 0:
        return held
    eval_records = eval_share * units.size.sum()
    quota = eval_share * np.bincount(units.stratum, weights=units.size)
    best: tuple[float, np.ndarray] | None = None
    for arc in arcs:
        k, cost = _prefix_for_target(arc, target, FORCED_CAP * eval_records)
        forced = arc.first < k
        per_stratum = np.bincount(units.stratum[forced], weights=units.size[forced], minlength=len(quota))
        cost += STRATUM_OVERFLOW_WEIGHT * float(np.maximum(per_stratum - quota, 0.0).sum())
        if best is None or cost < best[0]:
            best = (cost, arc.order[:k])
    held[best[1]] = True
    return held


def _prefix_for_target(arc: Arc, target: float, eval_records: float) -> tuple[int, float]:
    """How many scenes of the arc to hold out, and the cost: the records forced out of train (plus a
    large penalty for every record missing from the unseen target when the forced records would exceed
    ``eval_records``, and the arc is cut short)."""
    k = min(int(np.searchsorted(arc.records, target)) + 1, len(arc.order))
    if arc.forced[k - 1] <= eval_records:
        return k, float(arc.forced[k - 1])
    fits = np.flatnonzero(arc.forced <= eval_records)
    k = int(fits[-1]) + 1 if len(fits) else 0
    shortfall = target - (arc.records[k - 1] if k else 0)
    return k, float(eval_records + 1000.0 * shortfall)


def allocate(units: Units, forced: np.ndarray, ratios: tuple[float, float, float]) -> np.ndarray:
    """Split code per unit: val+test versus train stratum by stratum (forced units to val+test), then
    val versus test, separately among forced and free units."""
    eval_share = ratios[1] + ratios[2]
    split = np.zeros(len(units.size), dtype=np.int8)
    if eval_share <= 0:
        return split
    to_eval = take_with_carry(units, np.ones(len(units.size), bool), forced, eval_share)
    val_share = ratios[1] / eval_share
    # Forced units are divided between val and test stratum by stratum, so both get the same unseen
    # share; the free ones then fill each stratum's val quota around them.
    forced_val = take_interleaved(units, to_eval & forced, val_share)
    to_val = take_with_carry(units, to_eval, forced_val, val_share, barred=to_eval & forced & ~forced_val)
    split[to_eval] = np.where(to_val[to_eval], 1, 2)
    return split


def take_interleaved(units: Units, among: np.ndarray, share: float) -> np.ndarray:
    """Divide the units (of ``among``) so that ``share`` of each stratum's records are taken: within a
    stratum, largest first, each unit goes to the side further below its target, unless either side
    would keep the stratum within this unit of its target; then it goes to the side further below its
    target over all units so far. Each stratum is then within one unit of its share, and the total
    (which fixes each split's unseen share) within about one unit too."""
    idx = np.flatnonzero(among)
    order = idx[np.lexsort((units.key[idx], -units.size[idx], units.stratum[idx]))]
    take = np.zeros(len(units.size), dtype=bool)
    if len(order) == 0:
        return take
    stratum = units.stratum[order]
    starts = np.flatnonzero(np.r_[True, stratum[1:] != stratum[:-1]])
    totals = np.add.reduceat(units.size[order], starts)
    taken_all = seen_all = 0.0
    for lo, hi, total in zip(starts.tolist(), np.append(starts[1:], len(order)).tolist(), totals.tolist()):
        taken = left = 0.0
        for unit in order[lo:hi].tolist():
            size = float(units.size[unit])
            lead = (share * total - taken) - ((1 - share) * total - left)  # > 0: the taken side is further below
            if abs(lead) < size:  # either side keeps the stratum within this unit: even out the total
                lead = share * (seen_all + size) - (taken_all + size / 2.0)
            if lead > 0:
                take[unit] = True
                taken += size
                taken_all += size
            else:
                left += size
            seen_all += size
    return take


def take_with_carry(
    units: Units, among: np.ndarray, must: np.ndarray, share: float, barred: np.ndarray | None = None
) -> np.ndarray:
    """Choose units (of ``among``) holding ``share`` of the records of each stratum: the ``must`` units
    always, never the ``barred`` ones (they still count in the stratum's size), and free ones in random
    order while their midpoint stays within the stratum's free quota. Where the must units overfill a
    stratum, the other strata's free quotas shrink in proportion so the total stays on target; rounding
    is carried from one stratum to the next."""
    barred = np.zeros(len(units.size), bool) if barred is None else barred
    idx = np.flatnonzero(among)
    order = idx[np.lexsort((units.key[idx], barred[idx], ~must[idx], units.stratum[idx]))]
    size, forced, blocked = units.size[order], must[order], barred[order]
    take = np.zeros(len(units.size), dtype=bool)
    if len(order) == 0:
        return take
    starts = np.concatenate([[0], np.flatnonzero(np.diff(units.stratum[order])) + 1])
    totals = np.add.reduceat(size, starts)
    forced_totals = np.add.reduceat(np.where(forced, size, 0), starts)
    deficit = np.maximum(share * totals - forced_totals, 0.0)
    wanted = max(share * totals.sum() - forced_totals.sum(), 0.0)
    free_quota = deficit * (wanted / deficit.sum() if deficit.sum() > 0 else 0.0)
    take[order[forced]] = True
    carry = 0.0
    ends = np.append(starts[1:], len(order))
    for i, (lo, hi) in enumerate(zip(starts, ends)):
        free = ~forced[lo:hi] & ~blocked[lo:hi]
        free_size = np.where(free, size[lo:hi], 0)
        before = np.cumsum(free_size) - free_size
        room = free_quota[i] + carry
        chosen = free & (before + free_size / 2.0 <= room)
        take[order[lo:hi][chosen]] = True
        carry = room - free_size[chosen].sum()
    return take


def _split_from_file(scene_values: list, mapping: dict[str, str], config: SplitConfig) -> np.ndarray:
    from eqagen.core import DataFileError

    missing = [s for s in scene_values if str(s) not in mapping]
    if missing:
        raise DataFileError(
            config.split_file,
            "scene_id",
            f"{len(missing)} scene(s) of the dataset have no split, e.g. {missing[:3]}",
            "list every scene of the dataset in the split file",
        )
    return np.array([SPLITS.index(mapping[str(s)]) for s in scene_values], dtype=np.int8)


def split_stats(
    assignment: np.ndarray, codes: dict, held_out: np.ndarray, stratum_names: list[str], config: SplitConfig
) -> dict:
    """The split's statistics from the row codes (``scene``, ``group``, ``answer`` or None, ``stratum``)."""
    n, scene = len(assignment), codes["scene"]
    counts = np.bincount(assignment, minlength=3)
    in_train = np.zeros(int(scene.max()) + 1 if n else 0, dtype=bool)
    in_train[scene[assignment == 0]] = True
    unseen_row = ~in_train[scene] if n else np.zeros(0, bool)
    stats = {
        "by": "file" if config.split_file is not None else config.by,
        "records": n,
        "target": dict(zip(SPLITS, config.ratios)),
        "records_per_split": {s: int(counts[i]) for i, s in enumerate(SPLITS)},
        "fraction": {s: float(counts[i] / n) if n else 0.0 for i, s in enumerate(SPLITS)},
        "unseen_target": config.unseen_fraction if config.by == "question" else 1.0,
        "unseen_share": {
            s: float(unseen_row[assignment == i].mean()) if counts[i] else None for i, s in enumerate(SPLITS)
        },
        "held_out_scenes": int(held_out.sum()),
        "scenes_per_split": {s: len(np.unique(scene[assignment == i])) for i, s in enumerate(SPLITS)},
        "groups_straddling_splits": straddling_groups(codes["group"], assignment),
    }
    if codes["answer"] is not None:
        stats["blind_baseline"] = {
            s: blind_baseline_codes(codes["group"][assignment == i], codes["answer"][assignment == i])
            for i, s in enumerate(SPLITS)
            if counts[i]
        }
    stats["strata"] = stratum_table(assignment, codes["stratum"], stratum_names)
    big = [s for s in stats["strata"] if s["records"] >= STRATUM_REPORT_MIN]
    stats["max_stratum_share_deviation"] = max((s["max_share_deviation"] for s in big), default=0.0)
    stats["warnings"] = split_warnings(stats, config)
    return stats


def split_warnings(stats: dict, config: SplitConfig) -> list[str]:
    """Targets this split missed (fractions by more than 2 points, unseen share by more than 5). A split file
    fixes every scene's split, so it has neither target."""
    if stats["by"] == "file":
        return []
    out = []
    for name, target in stats["target"].items():
        if stats["records"] and abs(stats["fraction"][name] - target) > 0.02:
            out.append(f"{name} holds {stats['fraction'][name]:.3f} of the records, target {target:.3f}")
    if stats["by"] == "question" and config.unseen_fraction > 0:
        for name in SPLITS[1:]:
            share = stats["unseen_share"][name]
            if share is not None and abs(share - config.unseen_fraction) > 0.05:
                out.append(
                    f"{name}: {share:.3f} of its records come from scenes unseen in train, target "
                    f"{config.unseen_fraction:.3f} (balance groups span too many scenes, or too few scenes)"
                )
    return out


def straddling_groups(group: np.ndarray, assignment: np.ndarray) -> int:
    """Balance groups whose records are in more than one split."""
    if len(group) == 0:
        return 0
    pairs = np.unique(group * 3 + assignment)
    return int(np.sum(np.bincount(pairs // 3) > 1))


def stratum_table(assignment: np.ndarray, stratum: np.ndarray, names: list[str]) -> list[dict]:
    """Per stratum: records, share overall, fraction going to each split, share within each split."""
    n_strata = len(names)
    table = np.zeros((n_strata, 3), dtype=np.int64)
    np.add.at(table, (stratum, assignment), 1)
    totals, per_split = table.sum(axis=1), table.sum(axis=0)
    rows = []
    for s in np.argsort(-totals, kind="stable"):
        share = totals[s] / max(totals.sum(), 1)
        share_in = {SPLITS[i]: float(table[s, i] / per_split[i]) if per_split[i] else None for i in range(3)}
        deviation = max(abs(v - share) for v in share_in.values() if v is not None) if per_split.any() else 0.0
        rows.append(
            {
                "stratum": names[s],
                "records": int(totals[s]),
                "share": float(share),
                "fraction": {SPLITS[i]: float(table[s, i] / totals[s]) for i in range(3)},
                "share_in": share_in,
                "max_share_deviation": float(deviation),
            }
        )
    return rows
