"""The text on a hand-made kitchen: words, the phrasing data, questions in each variant, grounding, the
structured forms, and answers object by object."""

from __future__ import annotations

import numpy as np
import pytest

from eqagen.core import AnswerGroup, FilterSpec, Program, QuerySpec, ResultItem
from eqagen.predicates import context_for
from eqagen.templates.answers import answer_text, evaluate
from eqagen.templates.phrasing import PhrasingData, Wording, phrasing, wording_for
from eqagen.templates.render import (
    event_phrase,
    filter_text,
    program_wording,
    question_text,
    structured_question,
)
from eqagen.templates.words import coords, label, list_phrase, ordinal, plural, verb
from tests.predicates.conftest import tiny_episode
from tests.predicates.test_filters import kitchen


def test_words():
    assert label("CounterTop") == "countertop" and label("SinkBasin") == "sink basin"
    assert label("TVStand") == "tv stand" and label("AppleSliced") == "apple slice"
    assert label("Box") == "cardboard box" and label("TissueBox") == "tissue box"  # never "in the box"
    assert plural("knife") == "knives" and plural("glass") == "glasses" and plural("butter knife") == "butter knives"
    assert plural("cherry") == "cherries" and plural("toy") == "toys" and plural("box") == "boxes"
    assert plural("bookshelf") == "bookshelves" and plural("wolf") == "wolves" and plural("fungus") == "fungi"
    assert list_phrase(["Cup", "Apple", "Cup"]) == "an apple and two cups"
    assert ordinal(2) == "second" and verb("pickup", past=True) == "picked up" and verb("toggle_on") == "switch on"
    assert event_phrase("open Fridge #2") == "opened the fridge for the second time"
    assert event_phrase("enter_region living room") == "entered the living room"


def test_the_phrasing_data_is_well_formed():
    data = phrasing()
    assert isinstance(data, PhrasingData)
    assert all(len(v) >= 2 for k, v in data.questions.items()), "every query key has several question texts"
    assert all(text.count("{when}") == 1 for texts in data.questions.values() for text in texts)
    assert {"yes", "no", "default"} <= set(data.answers)


def test_structured_question_names_types_as_the_answer_predicates_do():
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
    assert structured_question(p) == (
        "countObjects? (location:inside the object = fridge) AND (when = after open fridge) AND "
        "(property:color = white)"
    )
    (group,) = evaluate(ep, p)
    assert group.predicate == structured_question(p).split("? ", 1)[1]


def test_questions_in_each_variant():
    p = Program((FilterSpec("property", "color", "white"),), QuerySpec("getState", "open", {"subject": "Fridge"}))
    texts = [question_text(p, Wording(i, (0,))) for i in range(3)]
    assert texts == [
        "Were the white fridges open or closed?",
        "Was each white fridge open or closed?",
        "Tell me whether each white fridge was open or closed.",
    ]
    events = Program((FilterSpec("property", "color", "white"),), QuerySpec("count", "events", {"kind": "open"}))
    assert question_text(events, Wording(0, (0,))) == "How many times did you open something white?"
    with_subject = Program(events.filters, QuerySpec("count", "events", {"kind": "open", "subject": "Fridge"}))
    assert question_text(with_subject, Wording(1, (0,))) == "How often did you open a white fridge?"


def test_the_wording_follows_the_program_alone():
    p = Program(
        (FilterSpec("location", "above", "Drawer"), FilterSpec("state", "open", "false")), QuerySpec("listObjects")
    )
    w = program_wording(p)
    assert w == wording_for(p.query, p.filters, structured_question(p))
    # the grounded twins of one program read alike whatever anchor they name: only the coordinates differ
    a, b = (0.5, 0.9, -1.25), (-2.0, 0.4, 3.0)
    twins = [question_text(p, w, {0: xyz}).replace(coords(xyz), "(x, y, z)") for xyz in (a, b)]
    assert twins[0] == twins[1] and coords(a) in question_text(p, w, {0: a})
    drawn = {program_wording(Program((FilterSpec("property", "color", c),), QuerySpec("listObjects"))).question
             for c in ("red", "green", "blue", "white", "black", "gray", "brown", "yellow")}  # fmt: skip
    assert len(drawn) >= 2


def test_grounded_question_names_the_anchor_and_the_answer_labels_each_group():
    ep = kitchen()
    p = Program((FilterSpec("location", "on", "CounterTop"),), QuerySpec("listObjects"))
    groups = evaluate(ep, p)
    wording = Wording(0, (0,))
    assert question_text(p, wording) == "Which objects on the countertop did you see?"
    grounded = question_text(p, wording, {0: groups[1].anchor})
    assert grounded == "Which objects on the countertop at (x=-1.00, y=0.90, z=2.00) did you see?"
    labels = [filter_text(p.filters[0], 0, g.anchor).phrase for g in groups]
    assert answer_text(context_for(ep), p.query, "objects", groups, labels) == (
        "On the countertop at (x=1.00, y=0.90, z=2.00): an apple and a cup; "
        "on the countertop at (x=-1.00, y=0.90, z=2.00): a mug."
    )
    assert structured_question(p, {0: groups[1].anchor}) == (
        "listObjects? (location:on the object = countertop (x=-1.00, y=0.90, z=2.00))"
    )


def lamps_episode():
    """A desk lamp (off), a floor lamp (on) and two white and one black cabinet (one white open)."""
    types = ["DeskLamp", "FloorLamp", "Cabinet", "Cabinet", "Cabinet", "Fridge", "Apple"]
    T, n = 3, len(types)
    position = np.broadcast_to(np.arange(n * 3, dtype=float).reshape(n, 3), (T, n, 3)).copy()
    parent = np.broadcast_to(np.array([-1, -1, -1, -1, -1, -1, 5]), (T, n)).copy()
    toggled = np.broadcast_to(np.array([0, 1, 0, 0, 0, 0, 0], bool), (T, n)).copy()
    opened = np.broadcast_to(np.array([0, 0, 1, 0, 0, 0, 0], bool), (T, n)).copy()
    caps = [("toggleable",), ("toggleable",), ("openable",), ("openable",), ("openable",), ("enclosing",), ()]
    attrs = [{"color": c} for c in ("black", "black", "white", "white", "brown", "white", "red")]
    flags = {"toggled": toggled, "open": opened}
    return tiny_episode(types, position, np.ones((T, n), bool), parent, flags, [], None, attrs, caps)


def answer_of(ep, query: QuerySpec) -> str:
    p = Program((), query)
    groups = evaluate(ep, p)
    return answer_text(context_for(ep), query, "state" if query.name == "getState" else "location", groups, [""])


def test_either_or_questions_are_answered_object_by_object():
    ep = lamps_episode()
    assert answer_of(ep, QuerySpec("getState", "toggled")) == "The desk lamp was off and the floor lamp was on."
    # a white cabinet is open, a white and a brown one closed: color does not tell them apart, so they are counted
    assert answer_of(ep, QuerySpec("getState", "open")) == "Two cabinets were closed and one cabinet was open."
    assert answer_of(ep, QuerySpec("getLocation")) == "The apple was in the fridge."


def one_group_answer(kind: str, captions_values: list[tuple[str, str]], query: QuerySpec, answer_type: str) -> str:
    """The answer sentence of one group of ``kind`` items, each a (caption, value) pair."""
    items = tuple(ResultItem(f"{kind}#{i}", kind, (0.0, 0.0, float(i)), caption, value)
                  for i, (caption, value) in enumerate(captions_values))  # fmt: skip
    group = AnswerGroup("(predicate)", None, items, ", ".join(sorted({v for _, v in captions_values})))
    return answer_text(None, query, answer_type, [group], [""])  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kind", "captions_values", "query", "answer_type", "expected"),
    [
        # nothing tells the cabinets apart: they are counted
        ("Cabinet", [("white cabinet", "open"), ("white cabinet", "closed"), ("white cabinet", "closed")],
         QuerySpec("getState", "open"), "state", "Two cabinets were closed and one cabinet was open."),
        # told apart by color
        ("Cabinet", [("white wood cabinet", "open"), ("brown wood cabinet", "closed")],
         QuerySpec("getState", "open"), "state", "The brown cabinet was closed and the white cabinet was open."),
        # never told apart by the value asked (their color, when the color is asked)
        ("Drawer", [("white wood drawer", "white"), ("brown wood drawer", "brown")],
         QuerySpec("getProperty", "color"), "color", "One drawer was brown and one drawer was white."),
    ],
)  # fmt: skip
def test_items_of_one_type_are_named_apart_or_counted(kind, captions_values, query, answer_type, expected):
    assert one_group_answer(kind, captions_values, query, answer_type) == expected


@pytest.mark.parametrize(
    ("value", "kind", "expected"),
    [("1", "events", "Once."), ("2", "events", "Twice."), ("5", "events", "Five times."), ("2", "objects", "Two.")],
)
def test_counts_are_words(value, kind, expected):
    group = AnswerGroup("(property:color = red)", None, (), value)
    args = {"kind": "open"} if kind == "events" else {}
    assert answer_text(None, QuerySpec("count", kind, args), "number", [group], [""]) == expected  # type: ignore[arg-type]
