"""Policy statistics: every attempt is accepted or rejected for a named reason; summaries add up."""

from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from eqagen.core import ConfigError, TaskError
from eqagen.generators.navigation.backend import embedded_house, policy_from_params
from eqagen.generators.navigation.policies import EXPRESS, OPENEQA, PolicyStats, sample_route, summarise


def test_stats_and_summary_add_up():
    pf = embedded_house(0, 1).pathfinder
    rng, stats = np.random.default_rng(0), PolicyStats()
    routes = [sample_route(pf, rng, EXPRESS, stats) for _ in range(30)]
    summary = summarise(routes, stats)
    assert summary["n"] == stats.accepted == 30
    assert stats.attempts == 30 + sum(stats.rejected.values())
    n_actions = np.array([len(r.trajectory.actions) for r in routes])
    geodesic = np.array([r.geodesic for r in routes])
    assert summary["actions"]["max"] == n_actions.max() <= 100 and summary["actions"]["min"] >= 10
    assert summary["actions_per_geodesic_m"] == pytest.approx(n_actions.sum() / geodesic.sum())
    assert summary["geodesic_over_euclidean"]["min"] >= 1.0 - 1e-9
    assert set(stats.rejected) <= {"geodesic_too_long", "no_action_sequence_within_limit", "too_few_actions"}


def test_impossible_policy_is_a_task_error_naming_the_rejections():
    pf = embedded_house(0, 2).pathfinder
    policy = replace(OPENEQA, min_geodesic=500.0, max_tries=20)
    stats = PolicyStats()
    with pytest.raises(TaskError, match="geodesic_too_short"):
        sample_route(pf, np.random.default_rng(1), policy, stats)
    assert stats.attempts == 20 and stats.rejected["geodesic_too_short"] == 20


def test_policy_params():
    assert policy_from_params({"policy": "openeqa", "turn_degrees": 10}).turn_degrees == 10
    assert policy_from_params({}).name == "express"
    with pytest.raises(ConfigError, match="unknown navigation policy"):
        policy_from_params({"policy": "wander"})
