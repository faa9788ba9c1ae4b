"""TAG-EQA's validation of its scorer, fast: gold answers of the engine-made dataset perturbed four ways."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import spearmanr

from eqagen.core import derive_rng
from eqagen.outputs.readers import read_questions
from eqagen.scoring.perturb import PERTURBATIONS, Pools, random_answer
from eqagen.scoring.structured import structured_score

STRENGTHS = (0.0, 0.25, 0.5, 0.75, 1.0)


@pytest.fixture(scope="module")
def records(scored_dataset):
    return read_questions(scored_dataset)


@pytest.mark.parametrize("name", list(PERTURBATIONS))
def test_the_score_falls_monotonically_with_each_perturbation(records, name):
    pools, perturb = Pools.of(records), PERTURBATIONS[name]
    scores = np.array([
        [structured_score(perturb(r.structured_answer, s, derive_rng(0, name, r.question_id), pools),
                          r.structured_answer) for s in STRENGTHS]
        for r in records
    ])  # fmt: skip
    means = scores.mean(axis=0)
    assert means[0] == 5.0  # strength 0 is gold
    assert np.all(np.diff(means) < 0), means
    assert np.all(np.diff(scores, axis=1) <= 1e-12)  # every record's score only falls, too
    assert spearmanr(np.tile(STRENGTHS, len(records)), scores.ravel()).statistic < -0.3


def test_a_random_answer_scores_near_the_bottom(records):
    rng = derive_rng(0, "random")
    floor = np.mean(
        [structured_score(random_answer(records, i, rng), r.structured_answer) for i, r in enumerate(records)]
    )
    assert 1.0 <= floor < 1.5
