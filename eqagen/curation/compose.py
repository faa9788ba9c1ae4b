"""Compose the dataset from balanced groups so that the mix survives balancing.

Balancing keeps whole groups (a question with its equally frequent answers); which groups it can keep
depends on how often each kind of question finds other answers in other scenes, so the kept pool drifts
from the configured mix (temporal questions recur least). This stage chooses among the balanced groups,
per partition of scenes, so that the query types' shares of records and the filter families' shares of
filters follow their targets, and the held-out partition supplies its share of the records
(:func:`eqagen.curation.partition.held_out_share`):

- within a partition, a linear program (:func:`choose_groups`) keeps the records wanted and minimises the
  largest distance of any share from its target, in units of the audit's least tolerance (a floor, the
  temporal one, counted four times below itself); its few fractional groups are taken by weight.

The held-out partition is composed first (it is the smaller pool); the seen partition then aims at what
the held-out part leaves of the dataset's mix (:func:`remaining_goal`), and where the held-out part falls
short of its share, the seen partition is cut to keep the held-out share. A question text kept in the
held-out partition is not kept in the seen one (each partition answers it among its own scenes, but one
text in train and in test would be a leak).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from eqagen.core import derive_rng
from eqagen.curation.columns import combined_key, encode, joined_list_column, require_columns
from eqagen.curation.partition import HELD_OUT, held_out_rows
from eqagen.predicates.sampler import target_shares

COMPOSE_COLUMNS = ("balance_key", "query_type", "filter_families", HELD_OUT)
FLOOR_MARGIN = 0.01  # a floor is aimed at this much above itself, so that the share does not end below it


TEMPORAL = "moment"  # the filter family whose share is also a floor: TAG-EQA's temporal questions, lost first


MAX_FILTERS = 4  # a program has 1 to MAX_FILTERS filters


@dataclass(frozen=True)
class MixTargets:
    """Target shares: of records per query type, of filters per family, floors of filter shares, of records
    per number of filters (keys 1..MAX_FILTERS; empty: not steered) and of grounded records (None: not
    steered)."""

    queries: dict[str, float]
    families: dict[str, float]
    floors: dict[str, float] = field(default_factory=dict)
    n_filters: dict[int, float] = field(default_factory=dict)
    grounded: float | None = None


def normalised_targets(names: Sequence[str], mix: Mapping[str, float]) -> dict[str, float]:
    """The mix's share of each name, as the sampler steers towards it (``sampler.target_shares``): names the
    mix does not name weigh as the average named one; the shares sum to 1 over ``names``."""
    return {n: round(share, 6) for n, (share, _) in zip(names, target_shares(tuple(names), dict(mix)))}


def n_filters_targets(n_filters_mix: Mapping[int, float]) -> dict[int, float]:
    """Share of records per number of filters, 1..MAX_FILTERS: the mix normalised over its own keys, as the
    sampler draws from them (a number it does not name: 0)."""
    total = sum(max(float(w), 0.0) for w in n_filters_mix.values())
    return {n: round(max(float(n_filters_mix.get(n, 0.0)), 0.0) / total, 6) for n in range(1, MAX_FILTERS + 1)}


def mix_targets(
    query_mix: Mapping[str, float],
    family_mix: Mapping[str, float],
    queries: Sequence[str],
    families: Sequence[str],
    n_filters_mix: Mapping[int, float] | None = None,
    grounded_share: float | None = None,
) -> MixTargets:
    """What a dataset's mix must be (the composition aims at it, the audit judges it): the config's mixes over
    the query types and filter families named, the temporal family's share as its floor, the shares of
    records per number of filters and the grounded share."""
    family_targets = normalised_targets(families, family_mix)
    floors = {TEMPORAL: family_targets[TEMPORAL]} if family_targets.get(TEMPORAL) else {}
    n_filters = n_filters_targets(n_filters_mix) if n_filters_mix else {}
    return MixTargets(normalised_targets(queries, query_mix), family_targets, floors, n_filters, grounded_share)


@dataclass
class Groups:
    """The balanced groups: per group its rows, size, partition, query type, and filter counts per family."""

    of_row: np.ndarray
    size: np.ndarray
    held: np.ndarray
    key: np.ndarray  # balance_key code (shared by a text's groups in both partitions)
    query: np.ndarray  # index into the query names
    families: np.ndarray  # [groups, families]: filters of each family over the group's records
    n_filters: np.ndarray  # [groups, MAX_FILTERS]: the group's records with 1..MAX_FILTERS filters
    grounded: np.ndarray  # the group's grounded records
    query_names: list[str]
    family_names: list[str]


def read_groups(table: pa.Table, targets: MixTargets) -> Groups:
    """The groups of a balanced table (no :data:`HELD_OUT` column: no scene is held out; ``filter_families``
    as a list per row, or as the key table's joined signature)."""
    require_columns(table, [c for c in COMPOSE_COLUMNS if c != HELD_OUT], "compose input")
    key, _ = encode(table.column("balance_key"))
    has_held = HELD_OUT in table.column_names
    held = held_out_rows(table.column(HELD_OUT)) if has_held else np.zeros(table.num_rows, dtype=bool)
    held = held.astype(np.int64)
    of_row = combined_key(held, key)
    n = int(of_row.max()) + 1 if len(of_row) else 0
    first = np.full(n, -1, dtype=np.int64)
    first[of_row[::-1]] = np.arange(len(of_row))[::-1]  # each group's first row
    queries, query_values = encode(table.column("query_type"))
    families_column = table.column("filter_families")
    if pa.types.is_list(families_column.type):
        families_column = joined_list_column(families_column)
    signatures, signature_values = encode(families_column)
    family_names = sorted(set(targets.families) | {f for s in signature_values for f in str(s).split("+") if f})
    per_signature = np.array(
        [[str(s).split("+").count(f) for f in family_names] for s in signature_values], dtype=np.int64
    ).reshape(len(signature_values), len(family_names))
    counts = np.array([len([f for f in str(v).split("+") if f]) for v in signature_values], dtype=np.int64)
    per_count = np.eye(MAX_FILTERS + 1, dtype=np.int64)[np.minimum(counts, MAX_FILTERS)][:, 1:]
    grounded = (
        np.asarray(table.column("grounded").to_numpy(zero_copy_only=False), dtype=bool)
        if "grounded" in table.column_names
        else np.zeros(table.num_rows, dtype=bool)
    )
    size = np.bincount(of_row, minlength=n)
    query_names = sorted(set(targets.queries) | set(map(str, query_values)))
    query_index = np.array([query_names.index(str(q)) for q in query_values], dtype=np.int64)
    return Groups(
        of_row=of_row,
        size=size,
        held=held[first].astype(bool),
        key=key[first],
        query=query_index[queries[first]],
        families=per_signature[signatures[first]] * size[:, None],
        n_filters=np.stack(
            [np.bincount(of_row, weights=per_count[signatures, k], minlength=n) for k in range(MAX_FILTERS)], axis=1
        ).reshape(n, MAX_FILTERS),
        grounded=np.bincount(of_row, weights=grounded, minlength=n),
        query_names=query_names,
        family_names=family_names,
    )


def target_vector(names: list[str], shares: dict[str, float]) -> np.ndarray:
    return np.array([shares.get(n, 0.0) for n in names], dtype=np.float64)


@dataclass(frozen=True)
class Tally:
    """What some groups hold: records, records per query type, filters per family, records per number of
    filters, grounded records."""

    records: float
    queries: np.ndarray
    families: np.ndarray
    n_filters: np.ndarray
    grounded: float


@dataclass(frozen=True)
class Goal:
    queries: np.ndarray
    families: np.ndarray
    floors: np.ndarray
    n_filters: np.ndarray | None = None  # [MAX_FILTERS] shares of records with 1..MAX_FILTERS filters
    grounded: float | None = None


def tally_of(groups: Groups, chosen: np.ndarray | list[int]) -> Tally:
    """The :class:`Tally` of the groups ``chosen`` (indices)."""
    chosen = np.asarray(chosen, dtype=np.int64)
    size = groups.size[chosen].astype(float)
    return Tally(
        float(size.sum()),
        np.bincount(groups.query[chosen], weights=size, minlength=len(groups.query_names)),
        groups.families[chosen].sum(axis=0).astype(float),
        groups.n_filters[chosen].sum(axis=0).astype(float),
        float(groups.grounded[chosen].sum()),
    )


def remaining_goal(goal: Goal, done: Tally, records: float) -> Goal:
    """The goal of the ``records`` still to choose, so that they and ``done`` together meet ``goal``: the
    dataset's mix is what the audit judges, and the held-out partition (composed first, from the smaller
    pool) can fall short of a scarce kind that the seen partition then makes up for."""
    if done.records <= 0 or records <= 0:
        return goal
    total = done.records + records

    def rest(target: np.ndarray, have: np.ndarray, have_total: float, rest_total: float) -> np.ndarray:
        need = np.maximum(target * (have_total + rest_total) - have, 0.0)
        return need / need.sum() if need.sum() > 0 else target

    filters_done = float(done.families.sum())
    filters_rest = filters_done * records / done.records  # filters per record as in the chosen part
    floors = np.where(
        goal.floors > 0, np.maximum(goal.floors * (filters_done + filters_rest) - done.families, 0.0), 0.0
    ) / max(filters_rest, 1.0)
    return Goal(
        rest(goal.queries, done.queries, done.records, records),
        rest(goal.families, done.families, filters_done, filters_rest),
        floors,
        None if goal.n_filters is None else rest(goal.n_filters, done.n_filters, done.records, records),
        None if goal.grounded is None else float(np.clip((goal.grounded * total - done.grounded) / records, 0, 1)),
    )


FLOOR_WEIGHT = 4.0  # a floor has no tolerance in the audit: its shortfall counts this many times a share's
SHARE_TOLERANCE = 0.03  # a share's distance from its target is counted in units of this (the audit's least)
SPREAD_WEIGHT = 0.01  # beside the largest distance, the sum of all distances counts this much
TIE_WEIGHT = 1e-4  # a seeded cost per record that tells equally good groups apart


def share_rows(
    groups: Groups, idx: np.ndarray, goal: Goal, records: float
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The shares the composition steers, as rows over the groups ``idx``: a row's product with the choice
    vector is the share's distance from its target in its own unit (records, or filters for the families),
    scaled so that ``SHARE_TOLERANCE`` of the share is 1. Also per row whether it is two-sided (a floor
    counts only below, and four times: the audit allows a floor no shortfall)."""
    size = groups.size[idx].astype(float)
    filters = groups.families[idx].sum(axis=1).astype(float)
    filter_unit = SHARE_TOLERANCE * records * filters.sum() / max(size.sum(), 1.0)
    record_unit = SHARE_TOLERANCE * records
    rows, two_sided = [], []

    def add(amount: np.ndarray, base: np.ndarray, target: float, unit: float, both: bool = True) -> None:
        rows.append((amount - target * base) / max(unit, 1e-9))
        two_sided.append(both)

    for q, target in enumerate(goal.queries):
        add(np.where(groups.query[idx] == q, size, 0.0), size, target, record_unit)
    for f, target in enumerate(goal.families):
        add(groups.families[idx, f].astype(float), filters, target, filter_unit)
        if goal.floors[f] > 0:
            floor = goal.floors[f] + FLOOR_MARGIN
            add(groups.families[idx, f].astype(float), filters, floor, filter_unit / FLOOR_WEIGHT, False)
    if goal.n_filters is not None:
        for k, target in enumerate(goal.n_filters):
            add(groups.n_filters[idx, k].astype(float), size, target, record_unit)
    if goal.grounded is not None:
        add(groups.grounded[idx].astype(float), size, goal.grounded, record_unit)
    return np.array(rows).reshape(len(rows), len(idx)), np.array(two_sided, dtype=bool), size


def choose_groups(
    groups: Groups, members: np.ndarray, records: float, goal: Goal, rng: np.random.Generator
) -> list[int]:
    """Groups (of ``members``) holding about ``records`` records whose shares stray least from the goal,
    the most chosen first. A linear program (scipy's HiGHS) over a choice weight per group in [0, 1]
    minimises the largest distance of any share from its target (in units of ``SHARE_TOLERANCE``, as the
    audit judges each share by its bounds), then their sum, then a seeded cost per record; its solution is
    whole but for a few groups (at most one per share), which are taken by weight while they fit."""
    idx = np.flatnonzero(members)
    if len(idx) == 0 or records <= 0:
        return []
    size = groups.size[idx].astype(float)
    if size.sum() <= records:  # the pool is short: all of it
        return idx[np.argsort(rng.random(len(idx)), kind="stable")].tolist()
    rows, two_sided, size = share_rows(groups, idx, goal, records)
    weight = solve_choice(rows, two_sided, size, records, rng.random(len(idx)))
    order = np.lexsort((-rng.random(len(idx)), -weight))
    whole = weight[order] >= 1 - 1e-6
    chosen = list(idx[order][whole])
    total = float(size[order][whole].sum())
    for g in idx[order][~whole]:  # the fractional few by weight, then (rounding left room) the rest
        if total >= records:
            break
        if total + groups.size[g] / 2.0 <= records:
            chosen.append(int(g))
            total += groups.size[g]
    return [int(g) for g in chosen]


def solve_choice(
    rows: np.ndarray, two_sided: np.ndarray, size: np.ndarray, records: float, tie: np.ndarray
) -> np.ndarray:
    """The linear program of :func:`choose_groups`, its choice weight per group. Variables: x (per group),
    then per share row its excess and its shortfall, then the largest distance t. Each row's product with x,
    less its excess, plus its shortfall, is 0; the excess (of a two-sided row) and the shortfall are at
    most t; the records chosen are ``records``."""
    from scipy.optimize import linprog  # imported here: only composition needs it
    from scipy.sparse import csr_matrix, hstack, identity, vstack

    m, n = rows.shape
    eye = identity(m, format="csr")
    t_column = csr_matrix(np.ones((m, 1)))
    shares = hstack([csr_matrix(rows), -eye, eye, csr_matrix((m, 1))])
    total = hstack([csr_matrix(size[None, :]), csr_matrix((1, 2 * m + 1))])
    excess_at_most_t = hstack([csr_matrix((m, n)), eye, csr_matrix((m, m)), -t_column])[np.flatnonzero(two_sided)]
    shortfall_at_most_t = hstack([csr_matrix((m, n)), csr_matrix((m, m)), eye, -t_column])
    cost = np.r_[
        TIE_WEIGHT * tie * size / max(float(size.mean()), 1.0),
        SPREAD_WEIGHT * two_sided,  # a floor's excess costs nothing
        SPREAD_WEIGHT * np.ones(m),
        1.0,
    ]
    upper = vstack([excess_at_most_t, shortfall_at_most_t])
    result = linprog(
        cost,
        A_ub=upper,
        b_ub=np.zeros(upper.shape[0]),
        A_eq=vstack([shares, total]),
        b_eq=np.r_[np.zeros(m), records],
        bounds=[(0.0, 1.0)] * n + [(0.0, None)] * (2 * m + 1),
        method="highs",
    )
    if result.status != 0:  # feasible whenever the pool holds more than the records wanted
        raise RuntimeError(f"composition: the linear program failed: {result.message}")
    return np.clip(result.x[:n], 0.0, 1.0)


def trim_to(groups: Groups, chosen: list[int], records: float) -> list[int]:
    """The chosen groups (in the order chosen) whose records stay within ``records``, less the one that would
    cross it by more than half of its size: the held-out share stays as near its target as whole groups allow."""
    total = np.cumsum(groups.size[chosen]) if chosen else np.zeros(0)
    keep = int(np.searchsorted(total - groups.size[chosen] / 2, records, side="right")) if chosen else 0
    return chosen[:keep]


def partition_records(groups: Groups, records: int | None, held_share: float) -> tuple[float, float]:
    """Records wanted from the seen and the held-out partition: ``records`` in all (None: as many as the
    partitions can supply in the right proportion), ``held_share`` of them held out."""
    seen_pool = float(groups.size[~groups.held].sum())
    held_pool = float(groups.size[groups.held].sum())
    if records is None:
        bounds = [seen_pool / (1 - held_share) if held_share < 1 else np.inf]
        if held_share > 0 and held_pool > 0:  # none at all: the split cannot hold scenes out (the audit says so)
            bounds.append(held_pool / held_share)
        records = int(min(bounds))
    return records * (1 - held_share), records * held_share


@dataclass(frozen=True)
class ComposeConfig:
    """The stage's section: the mix targets, the records wanted (None: as many as the partitions can supply
    in proportion) and the share of them the held-out scenes supply."""

    targets: MixTargets
    records: int | None
    held_share: float


def compose(table: pa.Table, config: ComposeConfig, seed: int) -> tuple[pa.Table, dict]:
    """The rows of the chosen groups (in table order) and the statistics (pools, targets, shares reached):
    the pipeline's ``compose`` stage."""
    targets, records, held_share = config.targets, config.records, config.held_share
    groups = read_groups(table, targets)
    goal = Goal(
        target_vector(groups.query_names, targets.queries),
        target_vector(groups.family_names, targets.families),
        target_vector(groups.family_names, targets.floors),
        np.array([targets.n_filters.get(n, 0.0) for n in range(1, MAX_FILTERS + 1)]) if targets.n_filters else None,
        targets.grounded if "grounded" in table.column_names else None,
    )
    want_seen, want_held = partition_records(groups, records, held_share)
    rng = derive_rng(seed, "curation", "compose")
    # the held-out partition first: it is the smaller pool, and the seen one then fits its size to it
    held = choose_groups(groups, groups.held, want_held, goal, rng)
    got_held = float(groups.size[held].sum())
    if 0 < held_share < 1 and 0 < got_held < want_held:  # keep the held-out share of the records
        want_seen = min(want_seen, got_held * (1 - held_share) / held_share)
    taken_keys = np.zeros(int(groups.key.max()) + 1 if len(groups.key) else 0, dtype=bool)
    taken_keys[groups.key[held]] = True
    seen_goal = remaining_goal(goal, tally_of(groups, held), want_seen)
    seen = choose_groups(groups, ~groups.held & ~taken_keys[groups.key], want_seen, seen_goal, rng)
    if 0 < held_share < 1:  # the seen pool ran short in turn: the held-out groups chosen last go
        held = trim_to(groups, held, float(groups.size[seen].sum()) * held_share / (1 - held_share))

    keep = np.zeros(len(groups.size), dtype=bool)
    keep[seen + held] = True
    rows = np.flatnonzero(keep[groups.of_row])
    stats = compose_stats(groups, keep, seen, held, (want_seen, want_held), targets)
    stats["rejected"] = {"not_chosen": int(table.num_rows - len(rows))}
    return table.take(pa.array(rows, pa.int64())), stats


def shares(groups: Groups, chosen: np.ndarray) -> dict[str, dict[str, float]]:
    tally = tally_of(groups, chosen)
    records, filters = max(tally.records, 1.0), max(float(tally.families.sum()), 1.0)
    return {
        "query_type": {n: round(float(v / records), 4) for n, v in zip(groups.query_names, tally.queries)},
        "filter_family": {n: round(float(v / filters), 4) for n, v in zip(groups.family_names, tally.families)},
        "n_filters": {str(k + 1): round(float(v / records), 4) for k, v in enumerate(tally.n_filters)},
        "grounded": {"share": round(tally.grounded / records, 4)},
    }


def compose_stats(groups: Groups, keep: np.ndarray, seen: list[int], held: list[int], wanted, targets) -> dict:
    return {
        "targets": {
            "query_type": targets.queries,
            "filter_family": targets.families,
            "floors": targets.floors,
            "n_filters": {str(n): v for n, v in targets.n_filters.items()},
            "grounded": targets.grounded,
        },
        "pool_records": {"seen": int(groups.size[~groups.held].sum()), "held_out": int(groups.size[groups.held].sum())},
        "wanted_records": {"seen": round(wanted[0], 1), "held_out": round(wanted[1], 1)},
        "chosen_records": {"seen": int(groups.size[seen].sum()), "held_out": int(groups.size[held].sum())},
        "chosen_groups": {"seen": len(seen), "held_out": len(held)},
        "shares": shares(groups, np.flatnonzero(keep)),
        "pool_shares": shares(groups, np.arange(len(groups.size))),  # what the composition could choose from
    }


# A kind is asked about again while the balanced pool holds fewer than this many times its target, so that
# the composition has groups to choose among.
POOL_SLACK = 1.5
# A family is asked about again only when its share of the pool's filters is below this much of its aim: one
# just under its target (property, in most programs) would bring back nearly every question.
FAMILY_SLACK = 0.9


@dataclass(frozen=True)
class ScarceKinds:
    """What another round of asking should ask more of (:func:`scarce_kinds`)."""

    queries: set[str]
    families: set[str]
    n_filters: set[int]

    def wants(self, query: str, families: list[str]) -> bool:
        """Whether a program of this query type and these filters' families (one per filter) is scarce."""
        return query in self.queries or len(families) in self.n_filters or any(f in self.families for f in families)


def scarce_kinds(table: pa.Table, config: ComposeConfig) -> ScarceKinds:
    """The query types whose balanced records are fewer than ``POOL_SLACK`` times what the composition needs
    of them (with no records given: whose share of the pool is below its target), the filter families whose
    share of the pool's filters is below ``FAMILY_SLACK`` of their target or floor (a family is in most
    questions' programs, so it is judged by its share: asking every question with it again would mostly add
    others), and the numbers of filters whose records are short as the query types' are."""
    groups = read_groups(table, config.targets)
    records = groups.size.sum()
    want = config.records if config.records is not None else records
    queries = np.bincount(groups.query, weights=groups.size, minlength=len(groups.query_names))
    families = groups.families.sum(axis=0)
    slack = POOL_SLACK if config.records is not None else 1.0
    scarce_queries = {
        n for n, have in zip(groups.query_names, queries) if have < slack * config.targets.queries.get(n, 0) * want
    }
    aims = {n: max(config.targets.families.get(n, 0), config.targets.floors.get(n, 0)) for n in groups.family_names}
    share = families / max(families.sum(), 1)
    scarce_families = {n for n, have in zip(groups.family_names, share) if have < FAMILY_SLACK * aims[n]}
    per_count = groups.n_filters.sum(axis=0)
    scarce_counts = {n for n, aim in config.targets.n_filters.items() if per_count[n - 1] < slack * aim * want}
    return ScarceKinds(scarce_queries, scarce_families, scarce_counts)
