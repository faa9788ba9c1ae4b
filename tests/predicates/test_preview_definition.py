"""The sampler's one accelerator, the ``bitsets`` preview, equals the definition (``evaluate_raw``) on every
program the sampler accepts and on each of them with one filter dropped, in household, navigation and
Minecraft episodes: the entities the answer names, each one's last selected step, and the number of
distinct values it reports. An ambiguous filter is previewed as the union over its anchors, so it is
compared with the definition evaluated on that union. A world family's own queries (existence, rooms,
biomes) are previewed by the entities their selection holds, which is what is compared for them."""

from __future__ import annotations

import pytest

from eqagen.core import Program, derive_rng
from eqagen.generators.base import get_backend
from eqagen.predicates import REGISTRY, Anchored, QuestionConfig, bitsets
from eqagen.predicates.context import EpisodeContext, spec_key
from eqagen.predicates.evaluator import base_mask, combine, evaluate_raw
from eqagen.predicates.index import EpisodeIndex, build_index, counts_events
from eqagen.predicates.sampler import sample_programs
from tests.predicates.helpers import household_episodes

BUILT_IN = ("listObjects", "count", "getState", "getProperty", "getLocation")


def bits_to_cells(bits: int, index: EpisodeIndex) -> list[int]:
    return [k for k, b in enumerate(index.layout.bit_of_cell.tolist()) if bits >> b & 1]


def union_select(index: EpisodeIndex):
    def select(spec):
        sel = index.selection(spec)
        return sel.union() if isinstance(sel, Anchored) else sel

    return select


def compare(index: EpisodeIndex, program: Program) -> int:
    """Assert the preview equals the definition for one program; return 1 when compared."""
    position = {spec_key(s): i for i, s in enumerate(index.specs)}
    used = [position[spec_key(f)] for f in program.filters]
    view, pv = index.view(program.query)
    sel = view.cells
    for i in used:
        sel &= index.rows[i]
    groups = evaluate_raw(index.ctx, program, union_select(index))
    preview = pv.preview(sel)
    qdef = REGISTRY.query(program.query.name)
    if program.query.name not in BUILT_IN:
        mask, _, _ = combine(index.ctx, program.filters, base_mask(index.ctx, program, qdef), union_select(index))
        assert preview.size == int(mask.any(axis=0).sum()), program.signature()
        return 1
    if counts_events(program.query):
        assert preview.size == sum(int(g.value) for g in groups)
        return 1
    entities = groups[0].entities.tolist() if groups else []
    assert preview.size == len(entities), program.signature()
    last = pv.last(sel) if pv.reported is None else pv.last(sel) & pv.reported
    cells = bits_to_cells(last, index)
    assert sorted(index.ctx.cell_e[cells].tolist()) == entities, program.signature()
    if groups:
        by_entity = dict(zip(index.ctx.cell_e[cells].tolist(), index.ctx.cell_t[cells].tolist()))
        assert [by_entity[e] for e in entities] == groups[0].last_t.tolist(), program.signature()
    if qdef.value_codes is not None and groups:
        codes = qdef.value_codes(index.ctx, program.query)
        expected = {int(codes[t, e]) for e, t in zip(entities, groups[0].last_t.tolist())}
        assert preview.content.bit_count() == len(expected), program.signature()
    return 1


def compare_sampled(episodes, seed: int = 3) -> int:
    compared = 0
    for ep in episodes:
        ctx = EpisodeContext(ep)
        index = build_index(ctx)
        accepted, _ = sample_programs(ctx, QuestionConfig(), derive_rng(seed, "questions", ep.episode_id))
        for acc in accepted:
            p = acc.program
            compared += compare(index, p)
            for k in range(len(p.filters)):
                compared += compare(index, Program(p.filters[:k] + p.filters[k + 1 :], p.query))
    return compared


def world_episodes(family: str, n: int):
    backend = get_backend(family, "embedded")
    return [backend.run(spec) for spec in backend.plan(n, 1, {"max_steps": 120})]


def test_preview_equals_the_definition_on_sampled_programs():
    assert compare_sampled(household_episodes(30)) > 1500
    assert compare_sampled(world_episodes("navigation", 6)) > 100
    assert compare_sampled(world_episodes("blockworld", 4)) > 50


@pytest.mark.slow
def test_preview_equals_the_definition_on_300_household_40_navigation_20_minecraft_episodes():
    assert compare_sampled(household_episodes(300)) > 15000
    assert compare_sampled(world_episodes("navigation", 40)) > 500
    assert compare_sampled(world_episodes("blockworld", 20)) > 200


def test_a_wrong_preview_is_caught():
    """Planted: a preview that ignores the reported cells (getLocation) names entities the answer does not."""
    ep = household_episodes(5)[2]
    index = build_index(EpisodeContext(ep))
    accepted, _ = sample_programs(index.ctx, QuestionConfig(), derive_rng(3, "questions", ep.episode_id))
    located = [a.program for a in accepted if a.program.query.name == "getLocation"]
    assert located
    original = bitsets.Previewer.named
    try:
        bitsets.Previewer.named = lambda self, sel: self.present(sel)
        with pytest.raises(AssertionError):
            for p in located:
                for k in range(len(p.filters) + 1):
                    compare(index, Program(p.filters[:k] + p.filters[k + 1 :], p.query))
    finally:
        bitsets.Previewer.named = original
