"""The program sampler: seeded proposals that can hold, then the checks that make a question worth asking.

Per episode it first indexes which query specs and which filter values are satisfiable (``index``). Each
proposal is seeded with one observation ``(t, e)`` (or one event, for counting events): the query is about
``e`` (or its type), and every filter value is one that holds for ``e`` at ``t``, so the answer is never
empty by construction. Filters are chosen with a preview of their effect (``bitsets``); the proposal is then
evaluated by the definition (``evaluator``) and checked, and every rejection counted by its reason:

``duplicate``, ``forbidden_pair``, ``family_cap``, ``several_ambiguous_filters``, ``empty_answer``,
``too_many_items`` (listObjects), ``too_many_targets`` (getState/getProperty/getLocation), the validity
rules (``validity``), ``grounded_mix`` (the episode's grounded share would exceed its target plus
tolerance), ``no_satisfiable_filter`` (no filter of any allowed family holds at the seed and changes the
answer), ``fewer_filters`` (fewer effective filters than the number drawn), ``no_seed``, ``nothing_to_ask``
(the episode has no query or filter).

Target mixes (query types, filter families, number of filters, grounded share) are steered by deficit:
each draw favours the options furthest below their target share so far. Everything the sampling of an
episode changes as it goes lives in one :class:`SamplingState`.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

import numpy as np

from eqagen.core import Draws, Program, QuerySpec
from eqagen.predicates.bitsets import BitView, Previewer
from eqagen.predicates.config import QuestionConfig
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.evaluator import RawGroup, Select, SeveralAmbiguousFilters, evaluate_raw
from eqagen.predicates.index import EpisodeIndex, build_index, view_key
from eqagen.predicates.registry import REGISTRY, ForbiddenPair
from eqagen.predicates.validity import dropped_answers, first_violation

# While the grounded share is below target, how often the common values must include an ambiguous one: the
# common values alone bring the household share to about 23% (target 35%), always keeping one to 33% but
# fewer questions recur (grounded texts are rarer); half-way gives about 29%.
KEEP_AMBIGUOUS = 0.5
# Proposals of a number of filters that may come short per accepted program of that number before the
# episode stops drawing it (``choose_n_filters``).
SHORT_LIMIT = 6


# -- mixes -----------------------------------------------------------------------------------------------
def target_shares(options: tuple, target: dict) -> tuple[tuple[float, float], ...]:
    """Per option: its normalised target weight, and the small floor (5% of it) that keeps it possible. An
    option the target does not name (a world family's own filter family) weighs as much as the average
    named one."""
    named = [float(w) for w in target.values() if w > 0]
    default = sum(named) / len(named) if named else 1.0
    weights = [max(float(target.get(o, default)), 0.0) for o in options]
    total = sum(weights)
    if total <= 0:
        weights, total = [1.0] * len(options), float(len(options))
    return tuple((w / total, 0.05 * w / total) for w in weights)


def pick_by_shares(options: tuple, shares: tuple[tuple[float, float], ...], counts: Counter, rng: Draws):
    """Draw an option, favouring those furthest below their target share (``target_shares``) of ``counts`` so
    far."""
    used = [counts.get(o, 0) for o in options]
    n = sum(used) + 1.0
    deficit = [max(share * n - c, 0.0) + floor for c, (share, floor) in zip(used, shares)]
    r = rng.random() * sum(deficit)
    for option, d in zip(options, deficit):
        r -= d
        if r < 0:
            return option
    return options[-1]


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


class Candidate(NamedTuple):
    """A spec that keeps every filter's preview effective, with the cells it keeps and the preview's size (a
    named tuple: a proposal makes dozens)."""

    spec: int
    n_cells: int
    size: int


NOT_PREVIEWED = Candidate(-1, 0, 0)  # a first preview not computed yet (``SamplingState.first_previews``)


@dataclass
class SamplingState:
    """What the sampling of one episode changes as it goes (the mix counts, the accepted programs' keys, how
    often each spec has been proposed, how often each seed type has seeded each query view), and the
    target shares of the mixes whose options the episode fixes."""

    mix: MixState
    query_shares: tuple[tuple[float, float], ...]
    n_filter_options: tuple[int, ...]
    n_filter_shares: tuple[tuple[float, float], ...]
    spec_uses: list[int]
    seen: set = field(default_factory=set)
    short: Counter = field(default_factory=Counter)  # per number of filters: proposals that found fewer
    type_uses: dict[tuple, list[int]] = field(default_factory=dict)
    # the preview of each spec as a first filter, per view (query view and subject): a pure function of the
    # episode, kept for the episode because every proposal starts with it (a list indexed by spec, NOT_PREVIEWED
    # until a proposal needs it, None where the spec is no first filter)
    first_previews: dict[tuple, list[Candidate | None]] = field(default_factory=dict)

    @classmethod
    def start(cls, index: EpisodeIndex, config: QuestionConfig) -> SamplingState:
        n_options = tuple(sorted(config.n_filters_mix))
        return cls(
            mix=MixState(),
            query_shares=target_shares(tuple(sorted(index.queries)), config.proposal_mix()),
            n_filter_options=n_options,
            n_filter_shares=target_shares(n_options, config.proposal_n_filters_mix()),
            spec_uses=[0] * len(index.specs),
        )


# -- proposals -------------------------------------------------------------------------------------------
def choose_query(index: EpisodeIndex, state: SamplingState, config: QuestionConfig, rng: Draws) -> QuerySpec:
    names = tuple(sorted(index.queries))
    name = pick_by_shares(names, state.query_shares, state.mix.queries, rng)
    specs = index.queries[name]
    if name == "count":
        events = [q for q in specs if q.arg == "events"]
        objects = [q for q in specs if q.arg != "events"]
        specs = events if events and (not objects or rng.random() < config.event_count_share) else objects
    return specs[rng.below(len(specs))]


def shared_rank(n: int, focus: float, rng: Draws) -> int:
    """A rank among ``n`` options sorted by priority: geometric with parameter ``focus`` (0: uniform), so
    the most shared option is taken most often and the others still occur."""
    if focus <= 0.0 or n == 1:
        return rng.below(n)
    return (rng.geometric(focus) - 1) % n


def pick_shared(index: EpisodeIndex, state: SamplingState, idx: list[int], focus: float, rng: Draws) -> int:
    """One of spec indices ``idx``, favouring those the episode has proposed least so far and, among
    those, low priority (values shared by many scenes): every episode goes down the same order."""
    uses = state.spec_uses
    if focus <= 0.0 or len(idx) == 1:
        chosen = idx[rng.below(len(idx))]
    else:
        ranked = sorted(idx, key=lambda i: (uses[i], index.priority[i]))
        chosen = ranked[shared_rank(len(idx), focus, rng)]
    uses[chosen] += 1
    return chosen


def choose_seed(index: EpisodeIndex, state: SamplingState, q: QuerySpec, config: QuestionConfig, rng: Draws) -> int:
    """The cell (one observation, or one event) the question is built around; -1 if there is none.
    A type is drawn first (the least used so far, the most common first, so that scenes ask about the
    same types), then an entity of it, then one of its cells, so that entities seen often do not dominate."""
    seeds = index.seeds[view_key(q)]
    if not seeds.starts:
        return -1
    uses = state.type_uses.setdefault(view_key(q), [0] * len(seeds.runs_by_type))
    order = sorted(range(len(uses)), key=uses.__getitem__)  # stable: ties keep the priority order
    code = order[shared_rank(len(uses), config.shared_vocabulary, rng)]
    uses[code] += 1
    entity_runs = seeds.runs_by_type[code]
    j = entity_runs[rng.below(len(entity_runs))]
    hi = seeds.starts[j + 1] if j + 1 < len(seeds.starts) else len(seeds.cells)
    return seeds.cells[seeds.starts[j] + rng.below(hi - seeds.starts[j])]


def with_subject(q: QuerySpec, subject: str | None) -> QuerySpec:
    return QuerySpec(q.name, q.arg, {**q.args, "subject": subject}) if subject else q


def candidates(index: EpisodeIndex, config: QuestionConfig, held: list[int], used: list[int]) -> list[int]:
    """Of the specs ``held`` at the seed, those that may join ``used`` (key unused, family under its cap,
    at most one ambiguous filter)."""
    if not used:
        return held
    keys = {index.key_of[i] for i in used}
    one_ambiguous = any(index.ambiguous[i] for i in used)
    families = [index.family_of[i] for i in used]
    capped = {f for f in families if families.count(f) >= config.max_filters_per_family}
    ambiguous, family_of, key_of = index.ambiguous, index.family_of, index.key_of
    return [
        j for j in held if key_of[j] not in keys and not (one_ambiguous and ambiguous[j]) and family_of[j] not in capped
    ]


def selection_bits(index: EpisodeIndex, view: BitView, used: list[int]) -> int:
    sel = view.cells
    for i in used:
        sel &= index.rows[i]
    return sel


def first_candidates(index: EpisodeIndex, state: SamplingState, q: QuerySpec, idx: list[int]) -> list[Candidate]:
    """``effective_candidates`` with no filter yet, each spec's preview kept in ``state`` per view (the
    specs not previewed yet are previewed together, against one preview of the unfiltered view)."""
    key = (view_key(q), q.args.get("subject"))
    known = state.first_previews.get(key) or state.first_previews.setdefault(key, [NOT_PREVIEWED] * len(index.specs))
    new = [j for j in idx if known[j] is NOT_PREVIEWED]
    if new:
        found = {c.spec: c for c in effective_candidates(index, *index.view(q), [], new)}
        for j in new:
            known[j] = found.get(j)
    return [hit for hit in map(known.__getitem__, idx) if hit is not None]


def effective_candidates(
    index: EpisodeIndex, view: BitView, pv: Previewer, used: list[int], idx: list[int]
) -> list[Candidate]:
    """Of candidates ``idx``, those whose preview keeps every filter effective: the candidate changes the
    answer's preview without emptying it, and each earlier filter still changes it with the candidate."""
    current = selection_bits(index, view, used)
    others = [selection_bits(index, view, used[:k] + used[k + 1 :]) for k in range(len(used))]
    before = pv.preview(current).content
    # Every selection here lies within the view's cells, so specs whose rows agree there get one verdict:
    # situational and moment specs often do (they keep whole steps), so each distinct row is previewed once.
    verdicts: dict[int, tuple[int, int] | None] = {}
    out = []
    for j in idx:
        row = index.rows[j] & view.cells
        if row not in verdicts:
            verdicts[row] = effective_preview(pv, current, before, others, row)
        found = verdicts[row]
        if found is not None:
            out.append(Candidate(j, *found))
    return out


def effective_preview(pv: Previewer, current: int, before: int, others: list[int], row: int) -> tuple[int, int] | None:
    """The cells kept and the preview's size where the spec of ``row`` changes the answer's preview without
    emptying it and keeps each earlier filter effective (``effective_candidates``), else None."""
    kept = current & row
    if kept == current:
        return None
    after = pv.preview(kept)
    if after.size == 0 or after.content == before:
        return None
    if any(pv.preview(wide & row).content == after.content for wide in others):
        return None
    return kept.bit_count(), after.size


def answer_limit(q: QuerySpec, config: QuestionConfig) -> int | None:
    if q.name == "listObjects":
        return config.max_list_items
    return config.max_query_targets if REGISTRY.query(q.name).max_targets else None


def prefer_common(index: EpisodeIndex, found: list[Candidate], prefer: bool, config: QuestionConfig, rng: Draws):
    """With probability ``shared_vocabulary``, only the candidates whose values most scenes share (and, while
    grounding is wanted, half the time the ambiguous ones among them), where there are such."""
    bound = 1.0 - config.common_share
    if prefer and any(index.ambiguous[c.spec] for c in found) and rng.random() < KEEP_AMBIGUOUS:
        common = [c for c in found if index.ambiguous[c.spec] and index.priority[c.spec] <= bound]
    else:
        common = [c for c in found if index.priority[c.spec] <= bound]
    return common if common and rng.random() < config.shared_vocabulary else found


def seed_candidates(index: EpisodeIndex, q: QuerySpec, seed: int, holding: list[int]) -> list[int]:
    """Of the specs ``holding`` at the seed (``EpisodeIndex.holding_at``, allowed with the query), those that may
    filter a question about it: a position spec naming one anchor only where the seed's object was never seen
    on the other side of it (else the question would read it both ways: validity's indefinite_moment would
    reject it), and, for getState (the seed is in the answer), no moment named by the seed's own event
    (validity)."""
    idx = [j for j in holding if index.opposite[j] < 0 or not index.seen_opposite(j, seed)]
    if q.name == "getState":
        entity = int(index.ctx.cell_e[seed])
        idx = [j for j in idx if entity not in index.event_entities[j]]
    return idx


def choose_filter(index, state: SamplingState, config, q, used, held: list[int], rng, more: int) -> int:
    """Index of one more spec among the seed's candidates ``held`` (``seed_candidates``) that keeps every filter
    effective, from a family chosen by deficit among those that have one; -1 when none has. With ``more``
    filters still to come, it keeps as many cells as it can, so that they have something left to narrow; the
    last one prefers answers within the size limits."""
    idx = candidates(index, config, held, used)
    if not used:
        found = first_candidates(index, state, q, idx)
    else:
        found = effective_candidates(index, *index.view(q), used, idx) if idx else []
    if not found:
        return -1
    prefer = state.mix.want_grounded(config.grounded_share) and not any(index.ambiguous[i] for i in used)
    found = prefer_common(index, found, prefer, config, rng)
    present = sorted({index.family_of[c.spec] for c in found})
    names = tuple(index.families[f] for f in present)
    family_name = pick_by_shares(names, target_shares(names, config.proposal_family_mix()), state.mix.families, rng)
    family = index.families.index(family_name)
    found = [c for c in found if index.family_of[c.spec] == family]
    best = [c for c in found if index.ambiguous[c.spec] == prefer] or found
    limit = answer_limit(q, config)
    if more > 0:
        most = max(c.n_cells for c in best)
        best = [c for c in best if c.n_cells == most]
    elif limit is not None and any(c.size <= limit for c in best):
        best = [c for c in best if c.size <= limit]
    return pick_shared(index, state, [c.spec for c in best], config.shared_vocabulary, rng)


def choose_subject(index: EpisodeIndex, q: QuerySpec, seed: int, n: int, config: QuestionConfig, rng: Draws):
    """The seed entity's type, or None ("objects") for listObjects, for existence queries (the kind they ask
    about is what they look for among the objects: with it as subject, no place could answer ``no``), for a
    share of questions, and for many filters (which need more entities to narrow)."""
    presence = REGISTRY.query(q.name).asks_presence
    if q.name == "listObjects" or presence or n >= 3 or rng.random() < config.any_subject_share:
        return None
    return str(index.ctx.types[index.ctx.cell_e[seed]])


def too_many_left(index: EpisodeIndex, q: QuerySpec, used: list[int], limit: int | None) -> bool:
    """Whether the cells left by ``used`` hold more entities than the answer may list (a preview: groups
    split them further)."""
    view, pv = index.view(q)
    if limit is None or not used or view.events:
        return False
    return pv.preview(selection_bits(index, view, used)).size > limit


def build_filters(index, state, config, q, held: list[int], n, rng) -> list[int]:
    """Up to ``n`` filters among the seed's candidates ``held``; one more (within 4) when the answer would still
    list too many entities."""
    used: list[int] = []
    for k in range(n):
        i = choose_filter(index, state, config, q, used, held, rng, more=n - k - 1)
        if i < 0:
            break
        used.append(i)
    if len(used) == n < 4 and too_many_left(index, q, used, answer_limit(q, config)):
        i = choose_filter(index, state, config, q, used, held, rng, more=0)
        if i >= 0:
            used.append(i)
    return used


def choose_n_filters(state: SamplingState, config: QuestionConfig, rng: Draws) -> int:
    """The number of filters, by deficit against ``n_filters_mix`` (times its proposal factors) among the
    numbers the episode has not given up on: a number whose proposals came short ``SHORT_LIMIT`` times
    more than they were accepted (an episode with few objects has no effective third filter) is not drawn
    again, so that its deficit does not stall the episode."""
    options = (
        tuple(n for n in state.n_filter_options if state.short[n] < SHORT_LIMIT * (1 + state.mix.n_filters[n]))
        or state.n_filter_options[:1]
    )
    shares = (
        state.n_filter_shares
        if options == state.n_filter_options
        else target_shares(options, config.proposal_n_filters_mix())
    )
    return int(pick_by_shares(options, shares, state.mix.n_filters, rng))


def propose(index: EpisodeIndex, state: SamplingState, config: QuestionConfig, rng: Draws) -> Program | str:
    q = choose_query(index, state, config, rng)
    seed = choose_seed(index, state, q, config, rng)
    if seed < 0:
        return "no_seed"
    n = choose_n_filters(state, config, rng)
    subject = choose_subject(index, q, seed, n, config, rng)
    holding = index.holding_at(seed, index.allowed[(q.name, q.arg)])
    # A subject's view holds whole entities of the view without one, so a spec that changes nothing there
    # changes nothing for the subject either: with no first filter here, neither build below can start.
    if not first_candidates(index, state, q, holding):
        return "no_satisfiable_filter"
    asked, held = with_subject(q, subject), seed_candidates(index, q, seed, holding)
    used = build_filters(index, state, config, asked, held, n, rng)
    if not used and subject is not None:  # nothing narrows this subject: ask about any object instead
        asked = q
        used = build_filters(index, state, config, q, held, n, rng)
    if not used:
        return "no_satisfiable_filter"
    if len(used) < n:  # a shorter program would count against another number's share: the mix drifts to it
        state.short[n] += 1
        return "fewer_filters"
    specs = sorted((index.specs[i] for i in used), key=lambda s: (s.family, s.key, s.value))
    return Program(tuple(specs), asked)


# -- checks ----------------------------------------------------------------------------------------------
def forbidden(program: Program, extra: list[ForbiddenPair]) -> bool:
    """Whether a filter and the query form a forbidden pair."""
    q = program.query
    return any(REGISTRY.is_forbidden(f, q) or any(r.matches(f, q) for r in extra) for f in program.filters)


def answer_problem(program: Program, groups: list[RawGroup], config: QuestionConfig) -> str | None:
    """Why the structured answer is too empty or too long to ask about, or None."""
    if not groups:
        return "empty_answer"
    sizes = [g.entities.size for g in groups]
    if program.query.name == "listObjects" and max(sizes) > config.max_list_items:
        return "too_many_items"
    if REGISTRY.query(program.query.name).max_targets and max(sizes) > config.max_query_targets:
        return "too_many_targets"
    return None


@dataclass(frozen=True)
class Accepted:
    """An accepted program, its answer groups, and which group its grounded twin names (None: no twin)."""

    program: Program
    groups: list[RawGroup]
    grounded: int | None = None

    @property
    def ambiguous(self) -> bool:
        return self.grounded is not None


@dataclass(frozen=True)
class Answered:
    """A valid program's answer groups, and its answers with each filter dropped (``validity.dropped_answers``:
    its grounded twins are judged on them too)."""

    groups: list[RawGroup]
    dropped: list[list[RawGroup]]


def check(
    index: EpisodeIndex, program: Program, config: QuestionConfig, extra: list[ForbiddenPair], seen: set
) -> Answered | str:
    """The program's answers if it is a valid question, else the rejection reason."""
    if program.signature() in seen:
        return "duplicate"
    if forbidden(program, extra):
        return "forbidden_pair"
    families = [f.family for f in program.filters]
    if max(families.count(f) for f in families) > config.max_filters_per_family:
        return "family_cap"
    return judge(index.ctx, program, config, index.selection)


def judge(ctx: EpisodeContext, program: Program, config: QuestionConfig, select: Select) -> Answered | str:
    """The program's answers on this episode if they make a valid question (an answer of a size to ask about,
    every validity rule), else the rejection reason: the exact check, wherever the program was proposed."""
    try:
        groups = evaluate_raw(ctx, program, select)
    except SeveralAmbiguousFilters:
        return "several_ambiguous_filters"
    problem = answer_problem(program, groups, config)
    if problem:
        return problem
    dropped = dropped_answers(ctx, program, select)
    broken = first_violation(ctx, program, None, groups, select, dropped)
    return broken or Answered(groups, dropped)


def grounded_choice(
    ctx: EpisodeContext, select: Select, program: Program, answered: Answered, rng: Draws
) -> int | None:
    """The group a grounded twin names: drawn among the anchored groups whose question, asked about that
    anchor alone, is valid (``validity``); None when the program names no ambiguous object or no anchor
    is valid."""
    groups = answered.groups
    valid = [
        k
        for k, g in enumerate(groups)
        if g.anchor >= 0
        and named_alone(ctx, g.anchor)
        and first_violation(ctx, program, ctx.anchor_position(g.anchor), groups, select, answered.dropped) is None
    ]
    return valid[rng.below(len(valid))] if valid else None


def named_alone(ctx: EpisodeContext, anchor: int) -> bool:
    """Whether an anchor's printed coordinates (``anchor_position``) name it alone among the instances of its
    type the agent saw: real scenes can hold two potatoes at one spot, and "the potato at (x, y, z)" would then
    name both."""
    here = ctx.anchor_position(anchor)
    return all(o == anchor or ctx.anchor_position(o) != here for o in ctx.instances(str(ctx.types[anchor])).tolist())


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
    ctx: EpisodeContext, config: QuestionConfig, rng: np.random.Generator, index: EpisodeIndex | None = None
) -> tuple[list[Accepted], Counter[str]]:
    """Accepted programs for one episode (enough for ``questions_per_episode`` records) and the count of
    every rejection by reason; ``index``: the episode's index, where the caller has built it already."""
    index = index or build_index(ctx)
    rejections: Counter[str] = Counter()
    if not index.queries or not index.specs or index.n_cells == 0:
        rejections["nothing_to_ask"] += 1
        return [], rejections
    extra = [ForbiddenPair(*p) for p in config.forbidden_pairs]
    state = SamplingState.start(index, config)
    accepted: list[Accepted] = []
    draws = Draws(rng)  # the proposals' scalar draws, read from blocks of the episode's generator
    last_accepted = 0
    for attempt in range(config.questions_per_episode * config.attempts_per_question):
        if state.mix.records >= config.questions_per_episode or attempt - last_accepted > config.max_stalled_attempts:
            break
        program = propose(index, state, config, draws)
        verdict = program if isinstance(program, str) else check(index, program, config, extra, state.seen)
        if isinstance(verdict, str):
            rejections[verdict] += 1
            continue
        acc = Accepted(program, verdict.groups, grounded_choice(index.ctx, index.selection, program, verdict, draws))
        problem = mix_problem(acc, config, state.mix)
        if problem:
            rejections[problem] += 1
            continue
        state.seen.add(program.signature())
        accepted.append(acc)
        last_accepted = attempt
        record_accepted(state.mix, acc)
    return accepted, rejections
