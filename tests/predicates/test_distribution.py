"""On 300 household episodes: the mixes of query types, filter families, filter counts and grounding."""

from __future__ import annotations

from collections import Counter

import pytest

from eqagen.core import derive_rng
from eqagen.predicates import QuestionConfig
from eqagen.templates.records import sample_questions
from tests.predicates.helpers import household_episodes

QUERIES = ("listObjects", "count", "getState", "getProperty", "getLocation")
FAMILIES = ("property", "location", "state", "position", "moment")
# TAG-EQA's filter keys (docs/DESIGN.md, "Programs"), each of which household questions use
FILTER_KEYS = {
    "property": ("color", "material", "utility"),
    "location": ("on", "inside", "on_same", "inside_same", "above", "under"),
    "state": ("open", "toggled", "broken", "sliced", "filled"),
    "position": ("front", "behind", "left", "right"),
    "moment": ("before", "after", "right_before", "right_after", "between"),
}
# the query args household questions ask (utility is one per type and sliced never read: neither is asked)
QUERY_ARGS = {("count", "objects"), ("count", "events"), ("getProperty", "color"), ("getProperty", "material")}
QUERY_ARGS |= {("getState", s) for s in ("open", "toggled", "broken", "filled")}


@pytest.mark.slow  # 15 s: 300 episodes sampled (the default suite's sampler tests use a dozen)
def test_mixes_on_300_household_episodes():
    config = QuestionConfig()
    records = []
    for ep in household_episodes(300):
        recs, _ = sample_questions(ep, config, derive_rng(0, "questions", ep.episode_id))
        records.extend(recs)
    n = len(records)
    queries = Counter(r.query_type for r in records)
    families = Counter(f for r in records for f in r.predicate_families)
    n_filters = Counter(r.n_filters for r in records)
    grounded = sum(r.grounded for r in records) / n
    summary = f"{n} questions; {dict(queries)}; {dict(families)}; {dict(n_filters)}; grounded {grounded:.2f}"
    for q in QUERIES:
        assert queries[q] / n >= 0.05, summary
    for f in FAMILIES:
        assert families[f] / n >= 0.05, summary
    assert 0.20 <= grounded <= 0.60, summary
    assert all(n_filters[k] > 0 for k in (1, 2, 3, 4)), summary
    assert len({r.category for r in records}) >= 5, summary
    keys = Counter((f.family, f.key) for r in records for f in r.program.filters)
    rare = {(f, k): keys[(f, k)] for f, ks in FILTER_KEYS.items() for k in ks if keys[(f, k)] < 10}
    assert not rare, f"filter keys (nearly) never used: {rare}"
    assert {(r.program.query.name, r.program.query.arg) for r in records} >= QUERY_ARGS
