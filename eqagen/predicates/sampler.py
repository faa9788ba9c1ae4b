"""The program sampler: seeded proposals that can hold, then the checks that make a question worth asking.

Per episode it first indexes which query specs and which filter values are satisfiable. Each proposal is
seeded with one observation ``(t, e)`` (or one event, for counting events): the query is about ``e`` (or
its type), and every filter value is one that holds for ``e`` at ``t``, so the answer is never empty by
construction. A proposal is then checked, and every rejection counted by its reason:

``duplicate``, ``forbidden_pair``, ``family_cap``, ``several_ambiguous_filters``, ``empty_answer``,
``too_many_items`` (listObjects), ``too_many_targets`` (getState/getProperty/getLocation),
``trivial_answer`` (the answer is a value the question names), ``ineffective_filter`` (dropping some
filter leaves the structured answer unchanged), ``grounded_mix`` (the episode's grounded share would
exceed its target plus tolerance), ``no_satisfiable_filter`` (no filter of any allowed family holds at
the seed and narrows the answer), ``no_seed``, ``nothing_to_ask`` (the episode has no query or filter).

Target mixes (query types, filter families, number of filters, grounded share) are steered by deficit:
each draw favours the options furthest below their target share so far.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from functools import cached_property, lru_cache

import numpy as np

from eqagen.core import Draws, Program, QuerySpec
from eqagen.predicates.bitsets import BitView, Previewer
from eqagen.predicates.cell_answers import evaluate_on_cells
from eqagen.predicates.config import QuestionConfig
from eqagen.predicates.context import EpisodeContext, query_key, spec_key
from eqagen.predicates.evaluator import RawGroup, SeveralAmbiguousFilters, answer_key, evaluate_raw
from eqagen.predicates.index import EpisodeIndex, build_index, shared_vocabulary
from eqagen.predicates.queries import count, get_location, get_property, get_state, list_objects
from eqagen.predicates.registry import REGISTRY, ForbiddenPair
from eqagen.predicates.vocabulary import type_priority

# While the grounded share is below target, how often the common values must include an ambiguous one: the
# common values alone bring the household share to about 23% (target 35%), always keeping one to 33% but
# fewer questions recur (grounded texts are rarer); half-way gives about 29%.
KEEP_AMBIGUOUS = 0.5


# -- mixes -----------------------------------------------------------------------------------------------
def pick_by_shares(options, shares: tuple[tuple[float, float], ...], counts: Counter, rng: Draws):
    """Draw an option, favouring those furthest below their target share (``_target_shares``) of ``counts``
    so far. Plain Python: the lists are a handful long, where numpy's per-call cost dominates."""
    get = counts.get
    used = [get(o, 0) for o in options]
    n = sum(used) + 1.0
    deficit = []
    for c, (share, floor) in zip(used, shares):
        d = share * n - c
        deficit.append((d if d > 0.0 else 0.0) + floor)
    r = rng.random() * sum(deficit)
    for option, d in zip(options, deficit):
        r -= d
        if r < 0:
            return option
    return options[-1]


def episode_pick(index: EpisodeIndex, options: tuple, target: dict, counts: Counter, rng: Draws):
    """``pick_by_shares`` with the options' target shares memoised per episode (the config does not change while
    an episode is sampled)."""
    key = ("shares", options, id(target))
    shares = index._memo.get(key)
    if shares is None:
        shares = index._memo[key] = _target_shares(options, tuple(target.items()))
    return pick_by_shares(options, shares, counts, rng)


@lru_cache(maxsize=4096)
def _target_shares(options: tuple, target: tuple) -> tuple[tuple[float, float], ...]:
    """Per option: its normalised target weight, and the small floor (5% of it) that keeps it possible. An
    option the target does not name (a world family's own filter family) weighs as much as the average
    named one."""
    named = [float(w) for _, w in target if w > 0]
    default = sum(named) / len(named) if named else 1.0
    weights = [max(float(dict(target).get(o, default)), 0.0) for o in options]
    total = sum(weights)
    if total <= 0:
        weights, total = [1.0] * len(options), float(len(options))
    return tuple((w / total, 0.05 * w / total) for w in weights)


@dataclass
class MixState:
    """Counts of what the episode has accepted so far (steers the mixes)."""

    queries: Counter = field(default_factory=Counter)
    families: Counter = field(default_factory=Counter)
    n_filters: Counter = field(default_factory=Counter)
    grounded: int = 0
    records: int = 0

    def want_grounded(self, target: float) -> bool:
        return self.grounded < target * (self.records + 2)


# -- proposals -------------------------------------------------------------------------------------------
def choose_query(index: EpisodeIndex, config: QuestionConfig, mix: MixState, rng: Draws) -> QuerySpec:
    names, events, objects = query_options(index)
    name = episode_pick(index, names, config.query_mix, mix.queries, rng)
    specs = index.queries[name]
    if name == "count":
        specs = events if events and (not objects or rng.random() < config.event_count_share) else objects
    return specs[rng.below(len(specs))]


def query_options(index: EpisodeIndex) -> tuple[tuple[str, ...], list[QuerySpec], list[QuerySpec]]:
    """The query names (sorted), and the count specs that count events and those that do not (memoised)."""
    hit = index._memo.get(("query_options",))
    if hit is None:
        counts = index.queries.get("count", [])
        events = [q for q in counts if q.arg == "events"]
        objects = [q for q in counts if q.arg != "events"]
        hit = index._memo[("query_options",)] = tuple(sorted(index.queries)), events, objects
    return hit


def n_filter_options(index: EpisodeIndex, config: QuestionConfig) -> tuple[int, ...]:
    """The numbers of filters the config's mix names, sorted (memoised per episode)."""
    key = ("n_filter_options", id(config.n_filters_mix))
    hit = index._memo.get(key)
    if hit is None:
        hit = index._memo[key] = tuple(sorted(config.n_filters_mix))
    return hit


def shared_rank(n: int, focus: float, rng: Draws) -> int:
    """A rank among ``n`` options sorted by priority: geometric with parameter ``focus`` (0: uniform), so
    the most shared option is taken most often and the others still occur."""
    if focus <= 0.0 or n == 1:
        return rng.below(n)
    return (rng.geometric(focus) - 1) % n


def pick_shared(index: EpisodeIndex, idx: list[int], focus: float, rng: Draws) -> int:
    """One of spec indices ``idx``, favouring those the episode has proposed least so far and, among
    those, low priority (values shared by many scenes): every episode goes down the same order."""
    uses = spec_uses(index)
    if focus <= 0.0 or len(idx) == 1:
        chosen = idx[rng.below(len(idx))]
    else:
        priority = index.lists.priority
        ranked = sorted(idx, key=lambda i: (uses[i], priority[i]))  # stable, like a lexsort
        chosen = ranked[shared_rank(len(idx), focus, rng)]
    uses[chosen] += 1
    return chosen


def spec_uses(index: EpisodeIndex) -> list[int]:
    """How often each spec has been proposed in the episode."""
    uses = index._memo.get(("spec_uses",))
    if uses is None:
        uses = index._memo[("spec_uses",)] = [0] * len(index.specs)
    return uses


def seed_types(index: EpisodeIndex, q: QuerySpec) -> tuple[list[int], list[int], dict[int, list[int]], list[int]]:
    """For the query's seed cells: the cells, the start of each entity's run among them, the runs of each
    type (type codes in the order of the types' priority), and how often each type has seeded a proposal
    of this query so far (memoised per query; plain lists, read a few entries at a time)."""
    key = ("seed_types", q.name, q.arg, q.args.get("kind"))
    if key not in index._memo:
        ks, starts = index.seed_cells(q)
        names = index.ctx.types[index.cell_e[ks[starts]]].tolist() if starts.size else []
        priorities = type_priorities(index)
        ranked = sorted((priorities[t], t) for t in set(names))
        code = {t: i for i, (_, t) in enumerate(ranked)}
        runs: dict[int, list[int]] = {}
        for j, t in enumerate(names):
            runs.setdefault(code[t], []).append(j)
        index._memo[key] = ks.tolist(), starts.tolist(), runs, [0] * len(ranked)
    return index._memo[key]


def type_priorities(index: EpisodeIndex) -> dict[str, float]:
    """``type_priority`` of every type of the episode's entities (memoised per episode)."""
    hit = index._memo.get(("type_priorities",))
    if hit is None:
        shares = shared_vocabulary(index.ctx)
        hit = index._memo[("type_priorities",)] = {t: type_priority(t, shares) for t in set(index.ctx.types.tolist())}
    return hit


def choose_seed(index: EpisodeIndex, q: QuerySpec, config: QuestionConfig, rng: Draws) -> int:
    """The cell (one observation, or one event) the question is built around; -1 if there is none.
    A type is drawn first (the least used so far, the most common first, so that scenes ask about the
    same types), then an entity of it, then one of its cells, so that entities seen often do not dominate.
    (Restricting seeds to common types was tried: it made more questions single-answer, not fewer.)"""
    ks, starts, runs, uses = seed_types(index, q)
    if not starts:
        return -1
    order = sorted(range(len(uses)), key=uses.__getitem__)  # stable: ties keep the priority order
    code = order[shared_rank(len(uses), config.shared_vocabulary, rng)]
    uses[code] += 1
    entity_runs = runs[code]
    j = entity_runs[rng.below(len(entity_runs))]
    hi = starts[j + 1] if j + 1 < len(starts) else len(ks)
    return ks[starts[j] + rng.below(hi - starts[j])]


def with_subject(q: QuerySpec, subject: str | None) -> QuerySpec:
    return QuerySpec(q.name, q.arg, {**q.args, "subject": subject}) if subject else q


def candidates(index: EpisodeIndex, config: QuestionConfig, held: list[int], used: list[int]) -> list[int]:
    """Of the specs ``held`` at the seed (ascending, not forbidden with the query), those that may join
    ``used`` (key unused, family under its cap, at most one ambiguous filter)."""
    if not used:
        return held
    lists = index.lists
    amb, fam, key = lists.ambiguous, lists.family_of, lists.key_id
    keys = {key[i] for i in used}
    one_ambiguous = any(amb[i] for i in used)
    families = [fam[i] for i in used]
    capped = {f for f in families if families.count(f) >= config.max_filters_per_family}
    return [j for j in held if key[j] not in keys and not (one_ambiguous and amb[j]) and fam[j] not in capped]


def effective_candidates(index: EpisodeIndex, bits: tuple[BitView, Previewer], used: list[int], idx: list[int]):
    """Of candidates ``idx``, those that keep every filter effective on the query's cells (the candidate
    changes the answer preview, and each earlier filter still does with it), with the number of cells and
    of entities (counting events: cells) each keeps. Selections are ints (``bitsets``); with no filter
    yet, the result per spec is memoised per view."""
    view, pv = bits
    rows = index.cell_bits()[1]
    if not used:
        return _first_filters(view, pv, rows, idx)
    current = view.cells
    for i in used:
        current &= rows[i]
    others = []
    for pos in range(len(used)):
        wide = view.cells
        for j, i in enumerate(used):
            if j != pos:
                wide &= rows[i]
        others.append(wide)
    if pv.is_set:
        return _effective_by_sets(pv, rows, current, others, idx)
    ok, n_kept, n_entities = [], [], []
    before = pv.summary(current)
    differs, summary = pv.differs, pv.summary
    for j in idx:
        row = rows[j]
        kept = current & row
        if kept == current:
            continue
        after = summary(kept)
        if not differs(before, after):
            continue
        for wide in others:  # each earlier filter must still change the answer with this one
            if not differs(summary(wide & row), after):
                break
        else:
            ok.append(j)
            n_kept.append(kept.bit_count())
            n_entities.append(pv.size(after))
    return ok, n_kept, n_entities


def _effective_by_sets(pv: Previewer, rows: list[int], current: int, others: list[int], idx: list[int]):
    """``effective_candidates`` where the preview is a set (no value planes), inlined: with narrow a subset
    of wide, ``differs`` is then "other cells" (counting events) or "other entities" (the rest), and
    ``size`` the number of those."""
    ok, n_kept, n_entities = [], [], []
    if pv.events:
        for j in idx:
            row = rows[j]
            kept = current & row
            if kept == current:
                continue
            for wide in others:
                if wide & row == kept:
                    break
            else:
                ok.append(j)
                n = kept.bit_count()
                n_kept.append(n)
                n_entities.append(n)
        return ok, n_kept, n_entities
    fill, guards = pv.fill, pv.guards
    before = (current + fill) & guards
    for j in idx:
        row = rows[j]
        kept = current & row
        after = (kept + fill) & guards
        if after == before:
            continue
        for wide in others:
            if ((wide & row) + fill) & guards == after:
                break
        else:
            ok.append(j)
            n_kept.append(kept.bit_count())
            n_entities.append(after.bit_count())
    return ok, n_kept, n_entities


def _first_filters(view: BitView, pv: Previewer, rows: list[int], idx: list[int]):
    """``effective_candidates`` with no filter yet: each spec against the whole view, memoised per spec, and
    the lists per candidate list (``holding_at``'s lists recur: one per seed cell and query)."""
    hit = view.first_lists.get(id(idx))
    if hit is not None and hit[0] is idx:
        return hit[1]
    first = view.first
    missing = [j for j in idx if j not in first]
    if missing and view.wider_first is not None:
        missing = _narrowing_elsewhere(view.wider_first, missing, first)
    if missing:
        cells = view.cells
        if pv.is_set:
            _first_by_sets(pv, cells, rows, missing, first)
        else:
            whole = pv.summary(cells)
            for j in missing:
                kept = cells & rows[j]
                after = pv.summary(kept)
                first[j] = (pv.differs(whole, after), kept.bit_count(), pv.size(after))
    ok, n_kept, n_entities = [], [], []
    for j in idx:
        hit = first[j]
        if hit[0]:
            ok.append(j)
            n_kept.append(hit[1])
            n_entities.append(hit[2])
    view.first_lists[id(idx)] = (idx, (ok, n_kept, n_entities))
    return ok, n_kept, n_entities


def _narrowing_elsewhere(wider_first: dict, missing: list[int], first: dict) -> list[int]:
    """Of specs ``missing`` from a subject's view, those to compute: one that narrows nothing on the view without
    a subject narrows nothing here either (``first_filter_exists`` says why), so it is recorded as such at once
    (its counts are never read)."""
    out = []
    for j in missing:
        hit = wider_first.get(j)
        if hit is not None and not hit[0]:
            first[j] = (False, 0, 0)
        else:
            out.append(j)
    return out


def _first_by_sets(pv: Previewer, cells: int, rows: list[int], missing: list[int], first: dict) -> None:
    """``_first_filters``' memo entries where the preview is a set, inlined like ``_effective_by_sets``:
    counting events, a spec narrows when it drops a cell; otherwise when it drops an entity."""
    if pv.events:
        for j in missing:
            kept = cells & rows[j]
            n = kept.bit_count()
            first[j] = (kept != cells, n, n)
        return
    fill, guards = pv.fill, pv.guards
    whole = (cells + fill) & guards
    for j in missing:
        kept = cells & rows[j]
        after = (kept + fill) & guards
        first[j] = (after != whole, kept.bit_count(), after.bit_count())


def answer_limit(q: QuerySpec, config: QuestionConfig) -> int | None:
    if q.name == "listObjects":
        return config.max_list_items
    return config.max_query_targets if REGISTRY.query(q.name).max_targets else None


def choose_filter(index, config, q, bits, used, seed, mix, rng, more: int) -> int:
    """Index of one more spec that holds at the seed and keeps every filter effective, from a family
    chosen by deficit among those that have one; -1 when none has. With ``more`` filters still to come,
    it keeps as many cells as it can, so that they have something left to narrow; the last one prefers
    answers within the size limits. (Plain lists: a dozen candidates, where numpy's per-call cost
    dominates.)"""
    idx = candidates(index, config, index.holding_at(seed, q), used)
    if not idx:
        return -1
    idx, n_kept, n_entities = effective_candidates(index, bits, used, idx)
    if not idx:
        return -1
    lists = index.lists
    amb, fam, priority = lists.ambiguous, lists.family_of, lists.priority
    prefer = mix.want_grounded(config.grounded_share) and not any(amb[i] for i in used)
    bound = 1.0 - config.common_share
    rows = list(zip(idx, n_kept, n_entities))
    if prefer and any(amb[i] for i in idx) and rng.random() < KEEP_AMBIGUOUS:
        common = [r for r in rows if amb[r[0]] and priority[r[0]] <= bound]  # grounding wanted: ambiguous ones
    else:
        common = [r for r in rows if priority[r[0]] <= bound]
    if common and rng.random() < config.shared_vocabulary:  # values most scenes share, where there are
        rows = common
    family = pick_family(index, {fam[r[0]] for r in rows}, config, mix, rng)
    rows = [r for r in rows if fam[r[0]] == family]
    best = [r for r in rows if amb[r[0]] == prefer] or rows
    limit = answer_limit(q, config)
    if more > 0:
        most = max(r[1] for r in best)
        best = [r for r in best if r[1] == most]
    elif limit is not None and any(r[2] <= limit for r in best):
        best = [r for r in best if r[2] <= limit]
    return pick_shared(index, [r[0] for r in best], config.shared_vocabulary, rng)


def pick_family(index: EpisodeIndex, codes: set[int], config: QuestionConfig, mix: MixState, rng: Draws) -> int:
    """The code of one of the families ``codes`` (``index.families`` positions), drawn by deficit; the family
    names in sorted order are the codes in order (``index.families`` is sorted)."""
    present = sorted(codes)
    key = ("family_names", *present)
    names = index._memo.get(key)
    if names is None:
        names = index._memo[key] = tuple(index.families[f] for f in present)
    return present[names.index(episode_pick(index, names, config.family_mix, mix.families, rng))]


def choose_subject(
    index: EpisodeIndex, q: QuerySpec, seed: int, n: int, config: QuestionConfig, rng: Draws
) -> str | None:
    """The seed entity's type, or None ("objects") for listObjects, for a share of questions, and for
    many filters (which need more entities to narrow)."""
    if q.name == "listObjects" or n >= 3 or rng.random() < config.any_subject_share:
        return None
    return str(index.ctx.types[index.cell_e[seed]])


def too_many_left(index: EpisodeIndex, bits: tuple[BitView, Previewer], used: list[int], limit: int | None) -> bool:
    """Whether the cells left by ``used`` hold more entities than the answer may list (a preview: groups
    split them further)."""
    view, pv = bits
    if limit is None or not used or view.events:
        return False
    rows = index.cell_bits()[1]
    kept = view.cells
    for i in used:
        kept &= rows[i]
    return pv.size(pv.summary(kept)) > limit


def build_filters(index, config, q, seed, n, mix, rng) -> list[int]:
    """Up to ``n`` filters; one more (within 4) when the answer would still list too many entities."""
    used: list[int] = []
    bits = index.bit_view(q)
    for k in range(n):
        i = choose_filter(index, config, q, bits, used, seed, mix, rng, more=n - k - 1)
        if i < 0:
            break
        used.append(i)
    if len(used) == n < 4 and too_many_left(index, bits, used, answer_limit(q, config)):
        i = choose_filter(index, config, q, bits, used, seed, mix, rng, more=0)
        if i >= 0:
            used.append(i)
    return used


def propose(index: EpisodeIndex, config: QuestionConfig, mix: MixState, rng: Draws) -> Program | str:
    q = choose_query(index, config, mix, rng)
    seed = choose_seed(index, q, config, rng)
    if seed < 0:
        return "no_seed"
    n = int(episode_pick(index, n_filter_options(index, config), config.n_filters_mix, mix.n_filters, rng))
    subject = choose_subject(index, q, seed, n, config, rng)
    if not first_filter_exists(index, q, seed):
        return "no_satisfiable_filter"
    asked = subject_query(index, q, subject)
    used = build_filters(index, config, asked, seed, n, mix, rng)
    if not used and subject is not None:  # nothing narrows this subject: ask about any object instead
        asked = q
        used = build_filters(index, config, q, seed, n, mix, rng)
    if not used:
        return "no_satisfiable_filter"
    specs = sorted((index.specs[i] for i in used), key=lambda s: (s.family, s.key, s.value))
    return Program(tuple(specs), asked)


def first_filter_exists(index: EpisodeIndex, q: QuerySpec, seed: int) -> bool:
    """Whether some spec held at the seed narrows the answer of ``q`` without a subject. A subject's view holds
    whole entities of the view without one, so a spec that leaves the answer preview unchanged there leaves it
    unchanged for the subject too: without one here, neither build can start (the rejection comes cheaper)."""
    return bool(effective_candidates(index, index.bit_view(q), [], index.holding_at(seed, q))[0])


def subject_query(index: EpisodeIndex, q: QuerySpec, subject: str | None) -> QuerySpec:
    """``with_subject``, memoised per episode (the same query objects and subjects recur)."""
    key = ("subject_query", id(q), subject)
    hit = index._memo.get(key)
    if hit is None or hit[0] is not q:
        hit = index._memo[key] = (q, with_subject(q, subject))
    return hit[1]


# -- checks ----------------------------------------------------------------------------------------------
def forbidden(program: Program, extra: list[ForbiddenPair], memo: dict | None = None) -> bool:
    """Whether a filter and the query form a forbidden pair (the rules read family, key, query name and
    arg only: decided once per such combination when ``memo`` is given)."""
    q = program.query
    for f in program.filters:
        key = (f.family, f.key, q.name, q.arg)
        hit = memo.get(key) if memo is not None else None
        if hit is None:
            hit = REGISTRY.is_forbidden(f, q) or any(r.matches(f, q) for r in extra)
            if memo is not None:
                memo[key] = hit
        if hit:
            return True
    return False


def answer_problem(program: Program, groups: list[RawGroup], config: QuestionConfig) -> str | None:
    """Why the structured answer makes a bad question, or None."""
    if not groups:
        return "empty_answer"
    qdef = REGISTRY.query(program.query.name)
    sizes = [g.entities.size for g in groups]
    if program.query.name == "listObjects" and max(sizes) > config.max_list_items:
        return "too_many_items"
    if qdef.max_targets and max(sizes) > config.max_query_targets:
        return "too_many_targets"
    named = {f.value for f in program.filters} | {program.query.args.get("subject")}
    if all(g.value in named for g in groups):
        return "trivial_answer"
    return None


def evaluate_cached(ctx: EpisodeContext, program: Program, index: EpisodeIndex | None = None) -> list[RawGroup]:
    """``evaluate_raw``, memoised per episode: the sub-programs of the effectiveness check recur often.
    With the episode's ``index``, computed on its cells where possible (``cell_answers``: the same groups).
    Raises SeveralAmbiguousFilters like ``evaluate_raw`` (not memoised then)."""
    positions = index.positions(program.filters) if index is not None else [None]
    if None in positions:
        key = ("raw", query_key(program.query), frozenset(spec_key(f) for f in program.filters))
    else:  # the index's specs are distinct: their positions identify them
        key = ("raw_at", query_key(program.query), frozenset(positions))

    def compute() -> list[RawGroup]:
        groups = evaluate_on_cells(index, program) if index is not None else None
        return groups if groups is not None else evaluate_raw(ctx, program)

    return ctx.memo(key, compute)


def ineffective_filter(
    ctx: EpisodeContext, program: Program, groups: list[RawGroup], index=None, entity_sets: list[int] | None = None
) -> int:
    """Index of the first filter whose removal leaves the answer unchanged, or -1 when all are effective.
    With the episode's ``index`` and the program's ``dropped_entity_sets``, a removal that changes which
    entities the answer names at all is known to change the answer without evaluating it."""
    key = answer_key(groups)
    for i in range(len(program.filters)):
        if entity_sets is not None and entity_sets[i] != entity_sets[-1]:
            continue  # the answer names other entities without filter i: it differs
        dropped = Program(program.filters[:i] + program.filters[i + 1 :], program.query)
        if answer_key(evaluate_cached(ctx, dropped, index)) == key:
            return i
    return -1


def dropped_entity_sets(index: EpisodeIndex, program: Program) -> list[int] | None:
    """The entities the answer would name without each filter and, last, with all of them (``bitsets``
    entity sets), where the query allows it (``answer_entities``); else None. Another set means another
    structured answer: a sound shortcut past the exact evaluation, never a substitute for it (equal sets
    are evaluated)."""
    used = index.positions(program.filters)
    if any(i is None for i in used):
        return None
    entities = answer_entities(index, program.query, any(index.lists.ambiguous[i] for i in used))
    if entities is None:
        return None
    view, _ = index.bit_view(program.query)
    rows = index.cell_bits()[1]
    out = []
    for pos in range(len(used) + 1):
        sel = view.cells
        for j, i in enumerate(used):
            if j != pos:
                sel &= rows[i]
        out.append(entities(sel))
    return out


def too_many_by_preview(
    index: EpisodeIndex, program: Program, config: QuestionConfig, entity_sets: list[int] | None
) -> str | None:
    """``answer_problem``'s size verdict, known before evaluating where the preview names exactly the answer's
    entities (``entity_sets``: the program's ``dropped_entity_sets``; one group: no ambiguous filter); None
    when it cannot tell or the size is within the limit."""
    limit = answer_limit(program.query, config)
    if limit is None or entity_sets is None or entity_sets[-1].bit_count() <= limit or index_ambiguous(index, program):
        return None
    return "too_many_items" if program.query.name == "listObjects" else "too_many_targets"


def index_ambiguous(index: EpisodeIndex, program: Program) -> bool:
    return any(index.lists.ambiguous[i] for i in index.positions(program.filters))


def answer_entities(index: EpisodeIndex, q: QuerySpec, ambiguous: bool):
    """A function from a selection of the query's cells to the entities its answer names (as ``bitsets``
    guard bits), for the built-in queries where that is exact, else None:

    - listObjects, getProperty, getState, counting objects name every entity seen in a group, so the
      union over groups is what the selection holds, whatever the anchors;
    - getLocation, with no ambiguous filter (one group), names the entities held by something at their
      last selected cell."""
    fn = REGISTRY.query(q.name).fn
    _, pv = index.bit_view(q)
    if fn in (list_objects, get_property, get_state) or (fn is count and q.arg == "objects"):
        return pv.present
    if fn is get_location and not ambiguous:
        return lambda sel: pv.summary(sel)[1]  # the entities held by something at their last selected cell
    return None


def check(ctx, program, config, extra_forbidden, seen, index=None, signature=None) -> list[RawGroup] | str:
    """The program's answer groups if it is accepted, else the rejection reason. ``seen`` holds the
    accepted programs' ``signature`` (default ``Program.signature``; the sampler passes ``program_key``)."""
    if (signature or program.signature()) in seen:
        return "duplicate"
    if forbidden(program, extra_forbidden, ctx.memo(("forbidden_pairs", id(extra_forbidden)), dict)):
        return "forbidden_pair"
    families = [f.family for f in program.filters]
    if max(families.count(f) for f in families) > config.max_filters_per_family:
        return "family_cap"
    entity_sets = dropped_entity_sets(index, program) if index is not None else None
    too_many = too_many_by_preview(index, program, config, entity_sets)
    if too_many:
        return too_many
    try:
        groups = evaluate_cached(ctx, program, index)
    except SeveralAmbiguousFilters:
        return "several_ambiguous_filters"
    problem = answer_problem(program, groups, config)
    if problem:
        return problem
    if ineffective_filter(ctx, program, groups, index, entity_sets) >= 0:
        return "ineffective_filter"
    return groups


def program_key(index: EpisodeIndex, program: Program) -> tuple | str:
    """What the duplicate check compares within an episode: the query's content and the filters' positions
    among the index's specs (distinct specs, so equal keys mean equal signatures), cheaper than
    ``Program.signature``; the signature where a filter is not the index's."""
    positions = index.positions(program.filters)
    if any(i is None for i in positions):
        return program.signature()
    return (query_key(program.query), tuple(sorted(positions)))


@dataclass(frozen=True)
class Accepted:
    """An accepted program, its answer groups, and whether it names an ambiguous object."""

    program: Program
    groups: list[RawGroup]

    @cached_property
    def ambiguous(self) -> bool:
        return any(g.anchor >= 0 for g in self.groups)


def mix_problem(acc: Accepted, config: QuestionConfig, mix: MixState) -> str | None:
    """Keep the episode's grounded share under its target plus tolerance (an ambiguous program makes two
    records); below target, proposals already favour ambiguous filters."""
    share_if = (mix.grounded + acc.ambiguous) / (mix.records + 1 + acc.ambiguous)
    if acc.ambiguous and mix.records >= 2 and share_if > config.grounded_share + config.grounded_tolerance:
        return "grounded_mix"
    return None


def record_accepted(mix: MixState, acc: Accepted) -> None:
    p = acc.program
    mix.queries[p.query.name] += 1
    mix.families.update(f.family for f in p.filters)
    mix.n_filters[len(p.filters)] += 1
    mix.records += 1 + acc.ambiguous
    mix.grounded += acc.ambiguous


def sample_programs(
    ctx: EpisodeContext, config: QuestionConfig, rng: np.random.Generator
) -> tuple[list[Accepted], Counter[str]]:
    """Accepted programs for one episode (enough for ``questions_per_episode`` records) and the count of
    every rejection by reason."""
    index = build_index(ctx)
    rejections: Counter[str] = Counter()
    if not index.queries or not index.specs or index.n_cells == 0:
        rejections["nothing_to_ask"] += 1
        return [], rejections
    extra = [ForbiddenPair(*p) for p in config.forbidden_pairs]
    mix, seen, accepted = MixState(), set(), []
    draws = Draws(rng)  # the proposals' scalar draws, read from blocks of the episode's generator
    budget = config.questions_per_episode * config.attempts_per_question
    last_accepted = 0
    for attempt in range(budget):
        if mix.records >= config.questions_per_episode or attempt - last_accepted > config.max_stalled_attempts:
            break
        program = propose(index, config, mix, draws)
        signature = "" if isinstance(program, str) else program_key(index, program)
        verdict = program if isinstance(program, str) else check(ctx, program, config, extra, seen, index, signature)
        if isinstance(verdict, str):
            rejections[verdict] += 1
            continue
        acc = Accepted(program, verdict)
        problem = mix_problem(acc, config, mix)
        if problem:
            rejections[problem] += 1
            continue
        seen.add(signature)
        accepted.append(acc)
        last_accepted = attempt
        record_accepted(mix, acc)
    return accepted, rejections
