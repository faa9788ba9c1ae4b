"""The method criteria: each function against values computed by hand, and ``eqagen audit`` failing on a
dataset where one criterion's failure is planted (and passing where none is)."""

from __future__ import annotations

from itertools import pairwise
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binom, binomtest

from eqagen.cli import main
from eqagen.curation import criteria as C
from eqagen.curation.compose import normalised_targets
from eqagen.outputs.schemas import ANSWER_GROUP_TYPE, QUESTIONS_SCHEMA
from tests.curation.criteria_fixtures import PLANTS, write_method_dataset

TABLE_SCHEMA = pa.schema([QUESTIONS_SCHEMA.field(c) for c in C.CRITERIA_COLUMNS])
HOUSEHOLD = {"generation": {"family": "household"}}


def row(qid: str, split: str, scene: str, key: str, values: list[str], **extra) -> dict:
    families = extra.pop("families", ["property"])
    text = extra.pop("question", key)
    return {
        "question_id": qid, "scene_id": scene, "family": "household", "split": split,
        "query_type": extra.pop("query_type", "count"), "balance_key": key, "question": text,
        "paraphrase": {"question": extra.pop("paraphrase", text), "answer": "", "model": "", "validated": True,
                       "attempts": 1, "reason": ""},
        "program": {"filters": [{"family": f, "key": "k", "value": "v", "args": {}} for f in families],
                    "query": {"name": "count", "arg": "", "args": {}}},
        "structured_answer": [{"predicate": "", "anchor": None, "result": [], "value": v} for v in values],
        "grounded": extra.pop("grounded", False),
    }  # fmt: skip


def table(rows: list[dict]) -> pa.Table:
    return pa.Table.from_pylist(rows, schema=TABLE_SCHEMA)


def targets(q: pa.Table, config: dict | None = None) -> C.MethodTargets:
    return C.MethodTargets.from_config({**HOUSEHOLD, **(config or {})}, q)


# -- content ---------------------------------------------------------------------------------------------
def test_content_is_the_set_of_distinct_group_values():
    q = table([row("a", "train", "s", "k", ["1", "1"]), row("b", "train", "s", "k", ["2", "1"]),
               row("c", "train", "s", "k", ["1"])])  # fmt: skip
    assert C.answer_contents(q) == ["1", "1 | 2", "1"]


# -- unseen share ----------------------------------------------------------------------------------------
def _split_rows(val_scenes: list[str], test_scenes: list[str]) -> list[dict]:
    rows = [row(f"t{i}", "train", "seen", f"k{i}", ["1"]) for i in range(2)]
    rows += [row(f"v{i}", "validation", s, "kv", ["1"]) for i, s in enumerate(val_scenes)]
    return rows + [row(f"x{i}", "test", s, "kx", ["1"]) for i, s in enumerate(test_scenes)]


def test_unseen_share_counts_records_whose_scene_train_never_uses():
    q = table(_split_rows(["seen", "new1"], ["new2", "seen", "new3", "seen"]))
    result = C.unseen_share(q, targets(q))
    assert result.ok
    assert result.measured == {"validation": {"share": 0.5, "ok": True}, "test": {"share": 0.5, "ok": True}}
    assert result.target == "each of validation and test in [0.45, 0.55]"


def test_unseen_share_misses_a_split_outside_the_target():
    q = table(_split_rows(["seen", "seen", "seen", "new"], ["new", "seen"]))  # val 1/4
    result = C.unseen_share(q, targets(q))
    assert not result.ok and result.measured["validation"] == {"share": 0.25, "ok": False}
    assert "missed: validation" in result.detail
    lower = C.unseen_share(q, targets(q, {"split": {"unseen_fraction": 0.25}}))  # the target is the config's
    assert lower.measured["validation"]["ok"] and not lower.measured["test"]["ok"]


def test_unseen_share_does_not_apply_to_a_split_file_or_an_empty_held_out_split():
    q = table(_split_rows(["seen"], ["seen"]))
    assert C.unseen_share(q, targets(q, {"split": {"split_file": "splits.json"}})).ok
    train_only = table(_split_rows([], []))
    assert "not applicable" in C.unseen_share(train_only, targets(train_only)).detail


def test_unseen_share_of_a_split_by_scene_is_all_of_it():
    q = table(_split_rows(["new1", "new2"], ["new3", "seen"]))
    result = C.unseen_share(q, targets(q, {"split": {"by": "scene"}}))
    assert result.target == "each of validation and test in [0.95, 1.00]"
    assert result.measured == {"validation": {"share": 1.0, "ok": True}, "test": {"share": 0.5, "ok": False}}


# -- content balance -------------------------------------------------------------------------------------
def test_content_balance_fails_groups_balanced_only_in_form_or_unequal():
    q = table([
        row("a", "train", "s", "ok", ["1"]), row("b", "train", "s", "ok", ["2"]),
        row("c", "train", "s", "form", ["1"]), row("d", "train", "s", "form", ["1", "1"]),  # "1" twice
        row("e", "train", "s", "uneven", ["1"]), row("f", "train", "s", "uneven", ["1"]),
        row("g", "train", "s", "uneven", ["2"]),
    ])  # fmt: skip
    result = C.content_balance(q)
    assert not result.ok
    assert result.measured == {"groups": 3, "failing_groups": 2, "failing_records": 5}
    assert "'form': {'1': 2}" in result.detail and "'uneven': {'1': 2, '2': 1}" in result.detail


def test_content_balance_passes_equal_contents():
    q = table([row("a", "train", "s", "k", ["1"]), row("b", "train", "s", "k", ["1", "2"])])
    assert C.content_balance(q).ok


# -- mix -------------------------------------------------------------------------------------------------
def test_mix_targets_weigh_unnamed_names_as_the_average_named_one():
    assert normalised_targets(["a", "b", "c"], {"a": 1.0, "b": 3.0}) == {"a": 0.166667, "b": 0.5, "c": 0.333333}


def test_share_bounds_are_the_binomial_interval_and_at_least_the_tolerance():
    # many items: the binomial interval is narrower than ±0.03, so ±0.03 is the bound
    assert C.share_bounds(0.2, 10_000) == (0.17, 0.23)
    # few items: the 99% binomial interval of 10 draws at 0.2 is 0 to 6 hits
    assert binom.interval(0.99, 10, 0.2) == (0.0, 6.0) and C.share_bounds(0.2, 10) == (0.0, 0.6)
    assert C.share_bounds(0.5, 0) == (0.47, 0.53)  # nothing counted: the tolerance alone


@given(st.floats(0.0, 1.0), st.integers(0, 5_000))
def test_share_bounds_hold_the_target_and_the_tolerance(target, n):
    low, high = C.share_bounds(target, n)
    assert 0.0 <= low <= target <= high <= 1.0
    assert low <= max(target - C.MIX_TOLERANCE, 0.0) + 1e-6 and high >= min(target + C.MIX_TOLERANCE, 1.0) - 1e-6


def _mix_rows(times: int) -> list[dict]:
    # per copy, 10 records: count 4, getState 6; 12 filters: property 4 + 2, moment 3, state 3
    rows = []
    for t in range(times):
        rows += [row(f"c{t}-{i}", "train", "s", "k", ["1"], query_type="count", families=["property"])
                 for i in range(4)]  # fmt: skip
        rows += [row(f"g{t}-{i}", "train", "s", "k", ["1"], query_type="getState", families=["moment", "state"])
                 for i in range(3)]  # fmt: skip
        rows += [row(f"h{t}-{i}", "train", "s", "k", ["1"], query_type="getState", families=["property"])
                 for i in range(2)]  # fmt: skip
        rows.append(row(f"none{t}", "train", "s", "k", ["1"], query_type="getState", families=[]))
    return rows


def test_mix_shares_against_the_config():
    q = table(_mix_rows(10))  # 100 records, 120 filters
    config = {"questions": {"query_mix": {"count": 0.4, "getState": 0.6, "listObjects": 0, "getProperty": 0,
                                          "getLocation": 0},
                            "family_mix": {"property": 0.5, "moment": 0.25, "state": 0.25, "location": 0,
                                           "position": 0, "situation": 0},
                            "n_filters_mix": {1: 2, 2: 1}, "grounded_share": 0.0}}  # fmt: skip
    result = C.mix(q, targets(q, config))
    assert result.ok, result.detail
    low, high = C.share_bounds(0.4, 100)
    assert result.measured["query_type"]["count"] == {"share": 0.4, "target": 0.4, "low": low, "high": high,
                                                      "ok": True}  # fmt: skip
    assert result.measured["filter_family"]["moment"]["share"] == 0.25
    # of the 9 records with filters, 6 have one and 3 two
    assert result.measured["n_filters"]["1"]["share"] == 0.666667 and result.measured["n_filters"]["1"]["ok"]
    assert result.measured["n_filters"]["3"]["share"] == 0.0 and result.measured["n_filters"]["3"]["ok"]
    assert result.measured["moment_floor"] == {"share": 0.25, "minimum": 0.25, "ok": True}
    assert "binomial interval" in result.test
    default = C.mix(q, targets(q))  # the default mix: every query 0.2, moment 0.15
    assert not default.ok
    assert default.measured["query_type"]["getState"]["share"] == 0.6
    assert not default.measured["query_type"]["getState"]["ok"]
    assert f"query getState 0.600 outside [{C.share_bounds(0.2, 100)[0]:.3f}" in default.detail


def test_mix_tolerance_depends_on_the_count():
    # the same shares from 10 records: getState 0.6 against 0.2 is what 10 draws at 0.2 can give (0 to 6 hits)
    q = table(_mix_rows(1))
    small = C.mix(q, targets(q))
    assert small.measured["query_type"]["getState"]["ok"]
    q100 = table(_mix_rows(10))
    assert not C.mix(q100, targets(q100)).measured["query_type"]["getState"]["ok"]


def test_mix_judges_the_grounded_share_where_the_table_says_which_records_are():
    # 1,000 records, so that the binomial bounds (about 0.26 to 0.34 at 0.3) are tighter than 0.05
    rows = [row(f"c{i}", "train", "s", "k", ["1"], families=["property"]) for i in range(1000)]
    q = table(rows)
    others = {"location": 0, "state": 0, "position": 0, "moment": 0, "situation": 0}
    config = {"questions": {"query_mix": {"count": 1.0, "listObjects": 0, "getState": 0, "getProperty": 0,
                                          "getLocation": 0},
                            "family_mix": {"property": 1.0, **others}, "n_filters_mix": {1: 1},
                            "grounded_share": 0.3}}  # fmt: skip
    without = q.drop_columns(["grounded"])
    assert "grounded" not in C.mix(without, targets(without, config)).measured  # no grounded column: not judged
    for n_grounded, ok in ((300, True), (250, False), (350, False)):
        with_column = without.append_column("grounded", pa.array([i < n_grounded for i in range(1000)]))
        result = C.mix(with_column, targets(with_column, config))
        judged = result.measured["grounded"]
        assert (judged["share"], judged["target"], judged["ok"]) == (n_grounded / 1000, 0.3, ok)
        assert judged["low"] <= 0.3 <= judged["high"]
        assert result.ok is ok, result.detail


def test_mix_moment_floor_holds_even_within_the_tolerance():
    # moment 0.13 is within ±0.03 of 0.15 but below the floor
    rows = [row(f"m{i}", "train", "s", "k", ["1"], families=["moment"]) for i in range(13)]
    rows += [row(f"p{i}", "train", "s", "k", ["1"], families=["property"]) for i in range(87)]
    q = table(rows)
    others = {"location": 0, "state": 0, "position": 0, "situation": 0}
    config = {"questions": {"query_mix": {"count": 1.0}, "family_mix": {"property": 0.85, "moment": 0.15, **others}}}
    result = C.mix(q, targets(q, config))
    assert result.measured["filter_family"]["moment"]["ok"]
    assert not result.ok and result.measured["moment_floor"] == {"share": 0.13, "minimum": 0.15, "ok": False}


# -- blind baselines -------------------------------------------------------------------------------------
def test_majority_answers_take_the_most_frequent_content_then_the_smallest():
    keys = ["a", "a", "a", "b", "b"]
    contents = ["2", "2", "1", "y", "x"]
    assert C.majority_answers(keys, contents, np.arange(5)) == ["2", "2", "2", "x", "x"]


def test_text_model_learns_words_and_scores_only_the_choices():
    texts = ["red apple", "red cup", "green apple", "green cup", "red bowl", "green bowl"]
    contents = ["r", "r", "g", "g", "?", "?"]
    choices = [["g", "r"], ["g", "r"], ["q", "z"]]
    answers = C.text_model_answers(texts, contents, choices, np.arange(4), np.array([4, 5, 4]))
    assert answers == ["r", "g", "q"]  # q and z unseen in train: probability 0 both, the smaller wins


def test_blind_baselines_against_chance_by_hand():
    # test: group A (contents 1, 2, 2: k=2), group B (x, y, z: k=3); chance = (3 * 1/2 + 3 * 1/3) / 6
    rows = [row(f"tr{i}", "train", "s", f"T{i}", [v]) for i, v in enumerate("1212")]
    rows += [row("a1", "test", "s", "A", ["1"]), row("a2", "test", "s", "A", ["2"]), row("a3", "test", "s", "A", ["2"])]
    rows += [row("b1", "test", "s", "B", ["x"]), row("b2", "test", "s", "B", ["y"]), row("b3", "test", "s", "B", ["z"])]
    result = C.blind_baselines(table(rows))
    majority = result.measured["majority"]["overall"]
    assert majority["chance"] == pytest.approx(5 / 12, abs=1e-6)
    assert majority["accuracy"] == pytest.approx(3 / 6, abs=1e-6)  # "2" twice in A, "x" once in B
    # 3 hits of 6 at chance 5/12: far from significant (a fixed 2-point rule would have failed it)
    assert majority["p_value"] == pytest.approx(binomtest(3, 6, 5 / 12).pvalue, abs=1e-6)
    assert majority["ok"] and result.ok
    assert majority["within_2_points"] is None  # 6 records: 2 points are far less than 2 standard errors


def test_holm_adjusts_by_rank_and_keeps_the_order():
    # by hand: sorted 0.01, 0.02, 0.04, 0.5 -> 4 * 0.01, max(0.04, 3 * 0.02), max(0.06, 2 * 0.04), 0.5
    assert C.holm([0.04, 0.5, 0.01, 0.02]) == pytest.approx([0.08, 0.5, 0.04, 0.06])
    assert C.holm([]) == []


@given(st.lists(st.floats(0.0, 1.0), max_size=30))
def test_holm_never_lowers_a_p_value_and_keeps_their_order(p_values):
    adjusted = C.holm(p_values)
    assert all(p - 1e-12 <= a <= 1.0 for p, a in zip(p_values, adjusted))
    pairs = sorted(zip(p_values, adjusted))
    assert all(a1 <= a2 + 1e-12 for (_, a1), (_, a2) in pairwise(pairs))


def _answered(n: int, hits: int, query: str = "count") -> dict:
    """accuracy_against_chance of n test records at chance 1/2, ``hits`` of them answered right."""
    truth = ["a"] * n
    answers = ["a"] * hits + ["b"] * (n - hits)
    return C.accuracy_against_chance(answers, truth, np.full(n, 0.5), [query] * n)


def test_two_point_rule_is_judged_only_where_it_is_meaningful():
    # 2,600 records at chance 1/2: one standard error is 0.0098, so 2 points are 2.04 of them
    off = _answered(2600, 1365)  # 0.525: 2.5 standard errors from chance
    assert off["overall"]["within_2_points"] is False
    assert _answered(2600, 1320)["overall"]["within_2_points"] is True  # 0.508
    assert _answered(400, 260)["overall"]["within_2_points"] is None  # 400 records: 2 points are 0.8 SE


def test_judge_blind_fails_a_miss_of_the_two_point_rule_that_holm_does_not_reject():
    # three models, each tested overall and on one query type: Holm multiplies the smallest p by 6
    measured = {"m1": _answered(2600, 1365), "m2": _answered(2600, 1300), "m3": _answered(2600, 1300)}
    p = measured["m1"]["overall"]["p_value"]
    assert p == pytest.approx(binomtest(1365, 2600, 0.5).pvalue, abs=1e-6) and 0.05 / 6 < p < 0.05
    missed = C.judge_blind(measured)
    assert measured["m1"]["overall"]["p_holm"] > 0.05  # not rejected after the correction
    assert measured["m1"]["overall"]["ok"] is False and measured["m2"]["overall"]["ok"] is True
    assert missed == ["m1 overall 0.525 more than 0.02 from chance 0.500 (2600 records)"]


def test_judge_blind_rejects_what_holm_rejects():
    measured = {"m1": _answered(2600, 1420), "m2": _answered(2600, 1300)}  # 0.546: p about 2e-6
    missed = C.judge_blind(measured)
    assert measured["m1"]["overall"]["p_holm"] <= 0.05 and not measured["m1"]["overall"]["ok"]
    assert missed[0].startswith("m1 overall 0.546 vs chance 0.500 (1420 of 2600, Holm p")


def test_blind_baselines_at_chance_where_each_group_shares_one_text():
    rows = [row(f"{s}{g}{m}", s, "s", f"{s}{g}", [str(m)]) for s in ("train", "test") for g in range(5) for m in (1, 2)]
    result = C.blind_baselines(table(rows))
    assert result.ok, result.detail
    assert {m: r["overall"]["accuracy"] for m, r in result.measured.items()} == {
        "majority": 0.5, "tfidf_question": 0.5, "tfidf_paraphrase": 0.5, "coordinate_memory": 0.5,
    }  # fmt: skip


def test_blind_baselines_read_the_paraphrase_where_it_leaks():
    # one template text per group, but each paraphrase names its answer: only the paraphrase model beats chance
    rows = [row(f"{s}{g}{m}", s, "s", f"{s}{g}", [str(m)], paraphrase=f"kind {g} {('alpha', 'beta')[m - 1]}")
            for s in ("train", "test") for g in range(5) for m in (1, 2)]  # fmt: skip
    result = C.blind_baselines(table(rows))
    assert result.measured["tfidf_question"]["overall"]["ok"]
    # 10 of 10 at chance 1/2: p = 2 / 2^10; 8 tests (4 models, overall and one query type): Holm p 8 p
    leaked = result.measured["tfidf_paraphrase"]["overall"]
    assert leaked["p_value"] == pytest.approx(2 / 2**10, abs=1e-6)
    assert leaked["p_holm"] == pytest.approx(8 * 2 / 2**10, abs=1e-6) and leaked["ok"] is False
    assert not result.ok
    assert "tfidf_paraphrase overall 1.000 vs chance 0.500 (10 of 10, Holm p 0.0156)" in result.detail


def test_criteria_do_not_depend_on_row_order():
    rows = [row(f"{s}{g}{m}", s, f"s{g}", f"{s}{g}", [str(m)], question=f"kind {g} {'ab'[m - 1]}")
            for s in ("train", "test") for g in range(6) for m in (1, 2)]  # fmt: skip
    forward, backward = table(rows), table(rows[::-1])
    assert C.method_criteria(forward, HOUSEHOLD) == C.method_criteria(backward, HOUSEHOLD)


# -- eqagen audit ----------------------------------------------------------------------------------------
def _audit(out: Path, capsys) -> tuple[int, str]:
    status = main(["audit", str(out)])
    return status, capsys.readouterr().out


def test_audit_passes_a_dataset_that_meets_every_criterion(tmp_path, capsys):
    status, printed = _audit(write_method_dataset(tmp_path / "ok"), capsys)
    assert status == 0, printed
    for name in PLANTS:
        assert f"ok      criterion {name}: " in printed


@pytest.mark.parametrize("plant", PLANTS)
def test_audit_fails_naming_the_planted_criterion(tmp_path, capsys, plant):
    status, printed = _audit(write_method_dataset(tmp_path / plant, plant), capsys)
    assert status == 1
    assert f"FAILED  criterion {plant}: " in printed
    assert f"method criteria missed: {plant}\n" in printed  # that one alone
    assert "ok      stats.json equals the statistics recomputed from the shards" in printed


def memory_table(twin_split: str) -> pa.Table:
    """Two grounded test records of one balance group (answers A and B), and the ungrounded twin of both,
    whose answer names each anchor with its group's value, in ``twin_split``."""
    groups = [[{"predicate": "", "anchor": [1.0, 2.0, 3.0], "result": [], "value": "A"}],
              [{"predicate": "", "anchor": [4.0, 5.0, 6.0], "result": [], "value": "B"}]]  # fmt: skip
    return pa.table(
        {
            "question_id": ["q1", "q2", "q3", "q4"],
            "split": ["test", "test", twin_split, "train"],
            "balance_key": ["g (x, y, z)", "g (x, y, z)", "g", "g"],
            "query_type": ["count"] * 4,
            "grounded": [True, True, False, False],
            "structured_answer": pa.array(
                [
                    groups[1],
                    groups[0],
                    groups[0] + groups[1],
                    [{"predicate": "", "anchor": None, "result": [], "value": "C"}],
                ],
                pa.list_(ANSWER_GROUP_TYPE),
            ),
        }
    )


def test_the_coordinate_memory_model_answers_from_a_twin_in_train():
    """Its twin in train gives each grounded test record's answer away; in test with them, nothing does (the
    answer is then the majority model's: the smallest of a tie, right once)."""
    for twin_split, right in (("train", 1.0), ("test", 0.5)):
        table = memory_table(twin_split)
        setup = C.blind_setup(table, C.answer_contents(table))
        answers = C.coordinate_memory_answers(table, setup)
        grounded = [k for k, i in enumerate(setup.test) if table["grounded"][int(i)].as_py()]
        assert np.mean([answers[k] == setup.truth[k] for k in grounded]) == right, twin_split


def test_grounded_records_are_tested_apart_and_a_leak_there_is_missed():
    """The grounded test records are a scope of their own: a model right on 260 of 400 grounded records at
    chance 1/2, and on 240 of the 600 others, sits at chance overall (500 of 1,000) but not on the grounded
    ones (planted: no grounded scope, the leak passes)."""
    n, n_grounded = 1000, 400
    truth = ["a"] * n
    grounded = np.arange(n) < n_grounded
    answers = ["a" if (i < 260 or n_grounded <= i < n_grounded + 240) else "b" for i in range(n)]
    result = C.accuracy_against_chance(answers, truth, np.full(n, 0.5), ["count"] * n, grounded)
    assert (result["overall"]["accuracy"], result["grounded"]["accuracy"]) == (0.5, 0.65)
    missed = C.judge_blind({"m": result})
    assert [m.split(" (")[0] for m in missed] == ["m grounded 0.650 vs chance 0.500"]
    without = C.accuracy_against_chance(answers, truth, np.full(n, 0.5), ["count"] * n)
    assert without.keys() == {"overall", "per_query_type"}  # a table that does not say: no such scope
