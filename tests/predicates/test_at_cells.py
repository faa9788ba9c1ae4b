"""The sampler's shortcuts (``at_cells``) agree with the filters' own masks on every satisfiable spec."""

from __future__ import annotations

import numpy as np

from eqagen.predicates import REGISTRY, Anchored
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.index import satisfiable_specs
from tests.predicates.conftest import make_episode
from tests.predicates.helpers import household_episodes


def mask_at_cells(ctx: EpisodeContext, sel, ts: np.ndarray, es: np.ndarray) -> tuple[np.ndarray, bool]:
    """A filter's selection reduced to the cells the plain way: union over anchors, then gathered."""
    if isinstance(sel, Anchored):
        return sel.union()[ts, es] if len(sel) else np.zeros(ts.size, dtype=bool), len(sel) >= 2
    return np.asarray(sel)[ts, es], False


def test_every_shortcut_agrees_with_its_filter():
    episodes = [make_episode(s, 40) for s in range(4)] + list(household_episodes(6))
    checked = set()
    for ep in episodes:
        ctx = EpisodeContext(ep)  # fresh: shortcuts first, masks after, so neither reuses the other
        ts, es = ctx.cells
        specs = satisfiable_specs(ctx)
        fast = {}
        for spec in specs:
            shortcut = REGISTRY.filter(spec.family, spec.key).at_cells
            if shortcut is not None:
                fast[id(spec)] = shortcut(ctx, spec)
        for spec in specs:
            if id(spec) not in fast:
                continue
            sel = REGISTRY.filter(spec.family, spec.key).fn(ctx, spec)
            cells, ambiguous = mask_at_cells(ctx, sel, ts, es)
            got_cells, got_ambiguous = fast[id(spec)]
            assert np.array_equal(got_cells, cells), (ep.episode_id, spec)
            assert got_ambiguous == ambiguous, (ep.episode_id, spec)
            checked.add((spec.family, spec.key))
    assert {f for f, _ in checked} >= {"property", "state", "location", "position", "moment"}, checked
