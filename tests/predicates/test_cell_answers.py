"""The sampler's evaluation on the index's cells gives exactly ``evaluate_raw``'s groups, for every sampled
program and every program one filter shorter, in all three world families; the registry's anchor
shortcuts agree with the filters' own masks; the preview's size verdicts agree with the evaluated answer."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace

import numpy as np
import pytest

from eqagen.core import Draws, Program, QuerySpec, derive_rng
from eqagen.generators import get_backend
from eqagen.predicates import REGISTRY, Outcome, QuestionConfig
from eqagen.predicates.cell_answers import evaluate_on_cells
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.evaluator import RawGroup, SeveralAmbiguousFilters, evaluate_raw
from eqagen.predicates.index import build_index
from eqagen.predicates.sampler import (
    MixState,
    answer_problem,
    dropped_entity_sets,
    index_ambiguous,
    propose,
    sample_programs,
    too_many_by_preview,
)
from tests.predicates.conftest import make_episode
from tests.predicates.helpers import household_episodes


def same_groups(a: list[RawGroup], b: list[RawGroup]) -> bool:
    return len(a) == len(b) and all(
        (x.anchor, x.filter_index, x.value) == (y.anchor, y.filter_index, y.value)
        and np.array_equal(x.entities, y.entities)
        and np.array_equal(x.last_t, y.last_t)
        for x, y in zip(a, b)
    )


def episodes() -> list:
    nav = get_backend("navigation", "embedded")
    blocks = get_backend("blockworld", "embedded")
    return (
        [make_episode(s, 50) for s in range(4)]
        + list(household_episodes(25))
        + [nav.run(spec) for spec in nav.plan(4, 3, {"policy": "express", "n_scenes": 2})]
        + [blocks.run(spec) for spec in blocks.plan(4, 5, {})]
    )


def test_cell_answers_equal_the_full_masks_on_sampled_programs_and_their_drops():
    compared, families = 0, set()
    for ep in episodes():
        cells_ctx, masks_ctx = EpisodeContext(ep), EpisodeContext(ep)  # separate memos: no shared results
        index = build_index(cells_ctx)
        accepted, _ = sample_programs(cells_ctx, QuestionConfig(), derive_rng(4, "questions", ep.episode_id))
        for acc in accepted:
            p = acc.program
            for variant in [p] + [Program(p.filters[:i] + p.filters[i + 1 :], p.query) for i in range(len(p.filters))]:
                got = evaluate_on_cells(index, variant)
                assert got is not None, variant.signature()
                assert same_groups(got, evaluate_raw(masks_ctx, variant)), (ep.episode_id, variant.signature())
                compared += 1
        families.add(ep.family)
    assert compared > 2000 and families >= {"household", "navigation", "blockworld"}, (compared, families)


def test_cell_answers_equal_the_full_masks_on_rejected_proposals_too():
    """The sampler decides rejections (empty, too many, trivial, ineffective) from the cell answers as well."""
    compared, empty = 0, 0
    for ep in episodes():
        cells_ctx, masks_ctx = EpisodeContext(ep), EpisodeContext(ep)
        index, mix, rng = build_index(cells_ctx), MixState(), Draws(derive_rng(5, "questions", ep.episode_id))
        for _ in range(60):
            program = propose(index, QuestionConfig(), mix, rng)
            if isinstance(program, str):
                continue
            try:
                want = evaluate_raw(masks_ctx, program)
            except SeveralAmbiguousFilters:
                with pytest.raises(SeveralAmbiguousFilters):
                    evaluate_on_cells(index, program)
                continue
            assert same_groups(evaluate_on_cells(index, program), want), (ep.episode_id, program.signature())
            compared, empty = compared + 1, empty + (not want)
    assert compared > 2000 and empty > 0, (compared, empty)


def test_two_ambiguous_filters_raise_on_cells_as_on_masks():
    for ep in household_episodes(30):
        ctx = EpisodeContext(ep)
        index = build_index(ctx)
        ambiguous = [i for i, a in enumerate(index.lists.ambiguous) if a]
        pairs = [(i, j) for i in ambiguous for j in ambiguous if index.key_id[i] < index.key_id[j]]
        if not pairs:
            continue
        i, j = pairs[0]
        program = Program((index.specs[i], index.specs[j]), QuerySpec("listObjects"))
        with pytest.raises(SeveralAmbiguousFilters):
            evaluate_raw(ctx, program)
        with pytest.raises(SeveralAmbiguousFilters):
            evaluate_on_cells(index, program)
        return
    pytest.fail("no episode has two ambiguous filters of different keys")


def test_anchor_shortcuts_agree_with_the_masks():
    checked = set()
    for ep in [make_episode(s, 40) for s in range(3)] + list(household_episodes(6)):
        ctx = EpisodeContext(ep)
        index = build_index(ctx)
        ts, es = ctx.cells
        for i, spec in enumerate(index.specs):
            shortcut = REGISTRY.filter(spec.family, spec.key).anchors_at_cells
            if shortcut is None or not index.lists.ambiguous[i]:
                continue
            anchors, rows = shortcut(ctx, spec)
            sel = REGISTRY.filter(spec.family, spec.key).fn(EpisodeContext(ep), spec)
            assert np.array_equal(anchors, sel.anchors), spec
            assert np.array_equal(rows, sel.masks[:, ts, es]), spec
            checked.add((spec.family, spec.key))
    assert {k for _, k in checked} >= {"on", "on_same", "above", "under", "front", "left"}, checked


def test_size_verdicts_by_preview_agree_with_the_evaluated_answer():
    """Where the preview names exactly the answer's entities, its too-many verdict is the evaluated one."""
    config, decided, exact = QuestionConfig(), Counter(), 0
    for ep in household_episodes(40):
        ctx = EpisodeContext(ep)
        index, mix, rng = build_index(ctx), MixState(), Draws(derive_rng(6, "questions", ep.episode_id))
        for _ in range(100):
            program = propose(index, config, mix, rng)
            if isinstance(program, str):
                continue
            try:
                problem = answer_problem(program, evaluate_raw(ctx, program), config)
            except SeveralAmbiguousFilters:
                continue
            entity_sets = dropped_entity_sets(index, program)
            verdict = too_many_by_preview(index, program, config, entity_sets)
            if verdict:
                decided[verdict] += 1
                assert problem == verdict, program.signature()
            elif entity_sets is not None and not index_ambiguous(index, program):
                exact += 1
                assert problem not in ("too_many_items", "too_many_targets"), program.signature()
    assert decided["too_many_targets"] > 20 and decided["too_many_items"] > 0 and exact > 1000, (decided, exact)


def count_all(ctx, query, mask):
    """Answers every selection, an empty one too ("0"): a query for which an anchor with no cell has a group."""
    ents = np.flatnonzero(mask.any(axis=0))
    return Outcome(ents, str(ents.size))


def test_an_empty_group_is_kept_for_a_query_that_answers_an_empty_selection(monkeypatch):
    """Cell answers skip an ambiguous filter's empty groups only where the query says nothing about an empty
    selection: for one that answers it (listObjects made to count everything, ``count_all``), they are kept,
    as ``evaluate_raw`` keeps them."""
    qdef = REGISTRY.query("listObjects")
    monkeypatch.setitem(REGISTRY.queries, "listObjects", replace(qdef, fn=count_all, at_cells=None))
    empty_groups = 0
    for ep in [make_episode(s, 50) for s in range(4)] + list(household_episodes(5)):
        cells_ctx, masks_ctx = EpisodeContext(ep), EpisodeContext(ep)
        index = build_index(cells_ctx)
        ambiguous = [s for s, a in zip(index.specs, index.lists.ambiguous) if a]
        narrowing = [s for s, a in zip(index.specs, index.lists.ambiguous) if not a][:20]
        for spec in ambiguous[:10]:
            for other in narrowing:
                program = Program((spec, other), QuerySpec("listObjects"))
                got = evaluate_on_cells(index, program)
                assert got is not None and same_groups(got, evaluate_raw(masks_ctx, program))
                empty_groups += sum(g.entities.size == 0 for g in got)
    assert empty_groups > 20
