"""The text: words, templates with strict variables, questions, grounding, answers, balance keys."""

from __future__ import annotations

import jinja2
import pytest

from eqagen.core import FilterSpec, Program, QuerySpec, derive_rng
from eqagen.predicates import QuestionConfig, context_for, evaluate, sample_questions
from eqagen.templates.render import (
    FilterWords,
    environment,
    noun_phrase,
    render_answer,
    render_question,
    render_structured,
)
from eqagen.templates.words import label, list_phrase, ordinal, plural, verb
from tests.predicates.conftest import make_episode
from tests.predicates.test_filters import kitchen


def test_words():
    assert label("CounterTop") == "countertop" and label("SinkBasin") == "sink basin"
    assert label("TVStand") == "tv stand" and label("AppleSliced") == "apple slice"
    assert plural("knife") == "knives" and plural("glass") == "glasses" and plural("butter knife") == "butter knives"
    assert plural("cherry") == "cherries" and plural("toy") == "toys" and plural("box") == "boxes"
    assert list_phrase(["Cup", "Apple", "Cup"]) == "an apple and 2 cups"
    assert ordinal(2) == "second" and verb("pickup", past=True) == "picked up" and verb("toggle_on") == "switch on"


def test_templates_are_strict():
    with pytest.raises(jinja2.UndefinedError):
        environment().from_string("{{ missing }}").render()
    with pytest.raises(jinja2.UndefinedError):
        environment().get_template("questions/count.j2").render(np={})


def test_tag_eqa_structured_question_and_canonical_question():
    ep = kitchen()
    ctx = context_for(ep)
    p = Program(
        (
            FilterSpec("location", "inside", "Fridge"),
            FilterSpec("moment", "after", ctx.events[0].name, {"event": 0}),
            FilterSpec("property", "color", "white"),
        ),
        QuerySpec("count", "objects"),
    )
    assert render_structured(ctx, p) == (
        "countObjects? (location:inside the object = fridge) AND (when = after open fridge) AND "
        "(property:color = white)"
    )
    assert (
        render_question(ctx, p) == "How many white objects inside the fridge did you see after you opened the fridge?"
    )
    groups = evaluate(ep, p)
    assert render_answer(ctx, p, groups, "number", -1) == "1."


def test_grounded_question_names_the_anchor_and_answers_per_group():
    ep = kitchen()
    ctx = context_for(ep)
    p = Program((FilterSpec("location", "on", "CounterTop"),), QuerySpec("listObjects"))
    groups = evaluate(ep, p)
    assert render_question(ctx, p) == "Which objects on the countertop did you see?"
    grounded = render_question(ctx, p, {0: groups[1].anchor})
    assert grounded == "Which objects on the countertop (x=-1.00, y=0.90, z=2.00) did you see?"
    assert render_answer(ctx, p, groups, "objects", 0) == (
        "On the countertop (x=1.00, y=0.90, z=2.00): an apple and a cup; "
        "on the countertop (x=-1.00, y=0.90, z=2.00): a mug."
    )


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        (QuerySpec("getState", "open", {"subject": "Fridge"}), "Was the white fridge open or closed?"),
        (QuerySpec("getProperty", "material", {"subject": "Fridge"}), "What was the white fridge made of?"),
        (QuerySpec("getLocation", "", {"subject": "Cup"}), "Where was the white cup?"),
        (QuerySpec("count", "events", {"kind": "open"}), "How many times did you open something white?"),
        (
            QuerySpec("count", "events", {"kind": "open", "subject": "Fridge"}),
            "How many times did you open a white fridge?",
        ),
    ],
)
def test_each_query_has_a_question(query, expected):
    ctx = context_for(kitchen())
    assert render_question(ctx, Program((FilterSpec("property", "color", "white"),), query)) == expected


def test_balance_key_is_the_same_text_across_scenes_for_the_same_program():
    by_key: dict[str, set[str]] = {}
    for seed in range(6):
        ep = make_episode(seed, 60)
        records, _ = sample_questions(ep, QuestionConfig(), derive_rng(0, "q", ep.episode_id))
        for r in records:
            key = r.program.signature().split("{")[0] + r.query_type + str(r.grounded)
            by_key.setdefault(key, set()).add(r.balance_key)
            if not r.grounded:
                assert r.balance_key == render_question(context_for(ep), r.program)
    shared = [k for k, v in by_key.items() if len(v) == 1]
    assert shared


def test_noun_phrase_orders_adjectives_and_joins_clauses():
    words = [
        FilterWords("pre", 1, "green", ""),
        FilterWords("post", 1, "on the table", ""),
        FilterWords("when", 1, "after you opened the fridge", ""),
        FilterWords("pre", 0, "open", ""),
        FilterWords("post", 1, "to your left", ""),
        FilterWords("when", 1, "before you closed the fridge", ""),
    ]
    np, when = noun_phrase(QuerySpec("getState", "open", {"subject": "Apple"}), words)
    assert {form: np[form] for form in np.FORMS} == {
        "something": "something open green on the table to your left",
        "bare": "open green apple on the table to your left",
        "the": "the open green apple on the table to your left",
        "a": "an open green apple on the table to your left",
        "plural": "open green apples on the table to your left",
    }
    assert when == " after you opened the fridge and before you closed the fridge"
    np, when = noun_phrase(QuerySpec("listObjects"), [])
    assert (np.a, np.plural, np.something, when) == ("an object", "objects", "something", "")
    with pytest.raises(jinja2.UndefinedError):  # strict, like any missing variable
        environment().from_string("{{ np.nope }}").render(np=np)
