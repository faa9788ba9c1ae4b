"""The metrics as formulas: each recomputed by hand, gold at the top, invariants by hypothesis."""

from __future__ import annotations

import math

import hypothesis.strategies as st
import numpy as np
import pytest
from hypothesis import given, settings
from scipy.stats import binomtest

from eqagen.core import AnswerGroup, ResultItem
from eqagen.scoring.breakdown import interval
from eqagen.scoring.choice import binomial_against_chance, p_text
from eqagen.scoring.counts import count_exact, mean_relative_accuracy
from eqagen.scoring.freeform import exact_match, normalise
from eqagen.scoring.judge import express_score, llm_match, parse_mark
from eqagen.scoring.structured import group_match, item_similarity, possim, structured_score

words = st.sampled_from(["Cup", "Mug", "CounterTop", "green plastic cup", "red cup", "open", "closed", "2", ""])
coords = st.tuples(*[st.floats(-20, 20, allow_nan=False)] * 3)
items = st.builds(ResultItem, words, words, coords, words, words)
groups = st.lists(st.builds(AnswerGroup, words, st.none() | coords, st.lists(items, max_size=4).map(tuple), words),
                  max_size=4)  # fmt: skip


def test_possim_is_tag_eqas_gaussian_of_sigma_1_65():
    assert possim(0.0) == 1.0
    assert possim(1.65) == pytest.approx(math.exp(-0.5))
    assert possim(3.3) == pytest.approx(math.exp(-2.0))


@settings(max_examples=150, deadline=None)
@given(groups)
def test_gold_scores_exactly_5_in_both_variants(gold):
    assert structured_score(gold, gold, True) == 5.0
    assert structured_score(gold, gold, False) == 5.0
    assert group_match(gold, gold, True) == 5.0


@settings(max_examples=150, deadline=None)
@given(groups, groups)
def test_every_score_is_on_the_1_to_5_scale(pred, gold):
    for grounding in (True, False):
        assert 1.0 <= structured_score(pred, gold, grounding) <= 5.0 + 1e-12


def test_a_moved_item_scores_its_positional_similarity_by_hand():
    gold = [AnswerGroup("color = green", None, (ResultItem("Cup#1", "Cup", (0, 0, 0), "green cup", "green"),), "green")]
    moved = [AnswerGroup("color = green", None, (ResultItem("Cup#1", "Cup", (1.65, 0, 0), "green cup", "green"),),
                         "green")]  # fmt: skip
    item = (1 + 1 + math.exp(-0.5) + 1) / 4
    assert item_similarity(moved[0].result[0], gold[0].result[0]) == pytest.approx(item)
    assert structured_score(moved, gold) == pytest.approx(1 + 4 * item)
    assert structured_score([], gold) == 1.0  # nothing said: the bottom


def test_grounding_counts_the_anchor_only_in_the_grounded_variant():
    item = (ResultItem("Cup#1", "Cup", (0, 0, 0), "cup", ""),)
    gold = [AnswerGroup("on = CounterTop (x=1.00, y=0.00, z=0.00)", (1.0, 0.0, 0.0), item, "1")]
    far = [AnswerGroup("on = CounterTop (x=9.00, y=0.00, z=0.00)", (9.0, 0.0, 0.0), item, "1")]
    assert structured_score(far, gold, grounding=False) == 5.0  # coordinates removed from the predicate text
    assert structured_score(far, gold, grounding=True) == pytest.approx(1 + 4 * (2 + possim(8.0)) / 3)


def test_mean_relative_accuracy_over_thresholds_by_hand():
    # |8 - 10| / 10 = 0.2 < 1 - θ for θ in 0.50..0.75: 6 of the 10 thresholds
    assert mean_relative_accuracy(8, 10) == pytest.approx(0.6)
    assert mean_relative_accuracy(10, 10) == 1.0
    assert mean_relative_accuracy(20, 10) == 0.0
    assert mean_relative_accuracy(None, 3) == 0.0
    assert count_exact(3.0, 3.0) == 1.0 and count_exact(2.0, 3.0) == 0.0


def test_normalised_exact_match():
    assert normalise("The two drawers were closed.") == "2 drawers were closed"
    assert exact_match("two Drawers were closed", ["The two drawers were closed."]) == 1.0
    assert exact_match("three drawers were closed", ["The two drawers were closed."]) == 0.0
    assert exact_match(None, ["x"]) == 0.0


def test_a_p_value_that_underflows_reads_as_below_1e_300_not_zero():
    """A gold run's p-value underflows to 0.0 (2,253 hits of 2,253 at chance 0.35); it reads "< 1e-300"."""
    gold = binomial_against_chance([1.0] * 2253, [0.35] * 2253)
    assert gold.p_value < 1e-300 and p_text(gold.p_value) == "< 1e-300"
    assert p_text(5.45e-160) == "5.45e-160" and p_text(1.0) == "1" and p_text(0.0498) == "0.0498"


def test_binomial_binomial_against_chance_is_scipys_two_sided_exact_test():
    hits, chances = [1.0] * 30 + [0.0] * 70, [1 / 3] * 100
    test = binomial_against_chance(hits, chances)
    assert (test.n, test.hits, test.accuracy) == (100, 30, 0.3)
    assert test.p_value == pytest.approx(binomtest(30, 100, 1 / 3).pvalue)
    assert test.p_value > 0.05  # 30% against 33%: a blind model's result
    assert binomial_against_chance([1.0] * 80 + [0.0] * 20, chances).p_value < 1e-4


def test_intervals_wilson_for_accuracies_t_for_scores():
    low, high = interval([1.0] * 8 + [0.0] * 2)
    ci = binomtest(8, 10).proportion_ci(0.95, method="wilson")
    assert (low, high) == pytest.approx((ci.low, ci.high))
    values = [4.0, 5.0, 3.0, 4.5]
    low, high = interval(values)
    half = 3.182446305284263 * np.std(values, ddof=1) / 2  # t(0.975, 3) * s / sqrt(4)
    assert (low, high) == pytest.approx((np.mean(values) - half, np.mean(values) + half))


def test_judge_marks_and_openeqas_metric():
    assert parse_mark("4") == 4 and parse_mark("Your mark: 2") == 2 and parse_mark("I'd say 5.") == 5
    assert parse_mark("no idea") is None and parse_mark("0.5") is None
    assert llm_match(1) == 0.0 and llm_match(5) == 100.0 and llm_match(3) == 50.0
    assert express_score(5) == 100.0 and express_score(1) == 20.0


def test_a_score_interval_stays_on_its_scale():
    assert interval([5.0, 5.0, 4.0], (1.0, 5.0))[1] == 5.0  # the t-interval alone reaches past 5
    assert interval([5.0, 5.0, 4.0])[1] > 5.0


@settings(max_examples=100, deadline=None)
@given(groups)
def test_a_structured_answer_reads_back_from_its_json_row_unchanged(tmp_path_factory, gold):
    import json

    from eqagen.scoring.predictions import read_predictions

    path = tmp_path_factory.mktemp("rows") / "p.jsonl"
    path.write_text(json.dumps({"question_id": "q", "structured_answer": [g.to_dict() for g in gold]}) + "\n")
    assert list(read_predictions(path).rows["q"].structured_answer) == gold
