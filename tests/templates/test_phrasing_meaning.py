"""Each phrasing means what its filter or query computes: every text of the phrasing data for the situated
relations, the situations, the moments, on/inside and counting objects is read literally here, from its words, on real
household episodes, and the reading is held to the registered filter's selection.

The readings are written from the words alone ("nearer to you than" is distance from you, "in front of ...
as seen from where you stood" is depth along your line of sight, "came into view" is an object that was not
in view the step before), so a phrasing that states another computation than its filter fails here."""

from __future__ import annotations

import re

import numpy as np
import pytest

from eqagen.core import FilterSpec, QuerySpec
from eqagen.generators.base import get_backend
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.filters import encloses, param
from eqagen.predicates.index import build_index
from eqagen.predicates.registry import Anchored
from eqagen.templates.phrasing import filter_phrases, question_variants
from eqagen.templates.words import label, with_article


@pytest.fixture(scope="module")
def contexts() -> list[EpisodeContext]:
    backend = get_backend("household", "embedded")
    return [EpisodeContext(backend.run(spec)) for spec in backend.plan(4, 0, {"max_steps": 250})]


def specs_of(ctx: EpisodeContext, family: str) -> list[tuple[FilterSpec, np.ndarray | Anchored]]:
    index = build_index(ctx)
    return [(spec, index.selection(spec)) for spec in index.specs if spec.family == family]


# -- literal readings of the words -----------------------------------------------------------------------
def read_you(text: str, ctx: EpisodeContext) -> np.ndarray:
    """ "to your left", "on your right-hand side", "straight ahead of you": where the object was seen then."""
    x, z, side = ctx.ego[..., 0], ctx.ego[..., 2], param(ctx, "agent_side")
    if "left" in text:
        return ctx.data & (x < -side)
    if "right" in text:
        return ctx.data & (x > side)
    if "front of you" in text or "ahead of you" in text:
        return ctx.data & (np.abs(x) <= side) & (z > 0)
    raise AssertionError(f"no reading for {text!r}")


def read_object(text: str, ctx: EpisodeContext, anchor: int) -> np.ndarray:
    """ "to the left of the X (as seen from where you stood)", "nearer to you than the X", ...: at each step both
    seen, within the family's radius, by more than its margin."""
    ego, margin = ctx.ego, param(ctx, "side_margin")
    off = ego - ego[:, anchor : anchor + 1]
    if "nearer to you" in text or "farther from you" in text:  # distance from you
        dist = np.hypot(ego[..., 0], ego[..., 2])
        gap = dist - dist[:, anchor : anchor + 1]
        beyond = -gap if "nearer" in text else gap
    elif "left of" in text:
        beyond = -off[..., 0]
    elif "right of" in text:
        beyond = off[..., 0]
    elif "in front of" in text:  # as the viewer sees it: nearer along the line of sight
        beyond = -off[..., 2]
    elif "behind" in text:
        beyond = off[..., 2]
    else:
        raise AssertionError(f"no reading for {text!r}")
    near = off[..., 0] ** 2 + off[..., 2] ** 2 <= param(ctx, "near_radius") ** 2
    out = ctx.data & ctx.data[:, anchor : anchor + 1] & near & (beyond > margin)
    out[:, anchor] = False
    return out


def read_moment(text: str, ctx: EpisodeContext, spec: FilterSpec) -> np.ndarray:
    """ "before you E", "right after you E", "between the time you E1 and the time you E2": steps, with step t
    the state after action t (the event's own step is after it)."""
    t = np.arange(ctx.T)
    t1 = ctx.events[spec.args["event"]].t
    w = param(ctx, "moment_window")
    if text.startswith("between"):
        steps = (t >= t1) & (t < ctx.events[spec.args["event2"]].t)
    elif re.match(r"(right|just) before", text):
        steps = (t >= t1 - w) & (t < t1)
    elif re.match(r"(right|just) after", text):
        steps = (t >= t1) & (t < t1 + w)
    elif text.startswith("before"):
        steps = t < t1
    elif text.startswith("after"):
        steps = t >= t1
    else:
        raise AssertionError(f"no reading for {text!r}")
    return np.broadcast_to(steps[:, None], (ctx.T, ctx.N))


def read_situation(text: str, ctx: EpisodeContext, spec: FilterSpec, anchor: int) -> np.ndarray:
    """ "when a chair was to the left of the dining table (as you saw them)", "while you had a cup in front of
    you": a time clause (when / while) about some object of the named type, so the steps at which one such
    object stood in the relation the words name (read as above), with every object seen then."""
    assert re.match(r"(when|while) ", text), f"a situation selects steps: {text!r}"
    figure = label(spec.args["figure"])
    assert f"{with_article(figure)} " in text.format(a_figure=with_article(figure), value="X", anchor=""), text
    relation = read_you(text, ctx) if spec.value == "you" else read_object(text, ctx, anchor)
    steps = (relation & ctx.of_type(spec.args["figure"])[None, :]).any(axis=1)
    return np.repeat(steps[:, None], ctx.N, axis=1)


def texts(spec: FilterSpec) -> tuple[str, ...]:
    phrases = filter_phrases(spec)
    assert phrases is not None, spec
    return phrases.texts


# -- held to the filters -----------------------------------------------------------------------------------
def test_every_situated_phrasing_reads_as_its_filter_computes(contexts):
    checked = 0
    for ctx in contexts:
        for spec, sel in specs_of(ctx, "position"):
            for text in texts(spec):
                if spec.value == "you":
                    assert np.array_equal(read_you(text, ctx), sel), (text, spec)
                else:
                    for anchor, mask in zip(sel.anchors.tolist(), sel.masks):
                        assert np.array_equal(read_object(text, ctx, anchor), mask), (text, spec, anchor)
                checked += 1
    assert checked > 50


def test_every_situation_phrasing_reads_as_its_filter_computes(contexts):
    checked = 0
    for ctx in contexts:
        for spec, sel in specs_of(ctx, "situation")[::4]:  # a quarter of them: hundreds per episode
            for text in texts(spec):
                if spec.value == "you":
                    assert np.array_equal(read_situation(text, ctx, spec, -1), sel), (text, spec)
                else:
                    for anchor, mask in zip(sel.anchors.tolist(), sel.masks):
                        assert np.array_equal(read_situation(text, ctx, spec, anchor), mask), (text, spec, anchor)
                checked += 1
    assert checked > 50


def test_a_distance_wording_would_read_otherwise(contexts):
    """Planted: "nearer to you than the X" for a front filter reads another answer on these episodes."""
    differs = 0
    for ctx in contexts:
        for spec, sel in specs_of(ctx, "position"):
            if spec.key == "front" and spec.value != "you":
                for anchor, mask in zip(sel.anchors.tolist(), sel.masks):
                    differs += not np.array_equal(read_object("nearer to you than the X", ctx, anchor), mask)
    assert differs > 0


def test_every_moment_phrasing_names_the_filter_window(contexts):
    checked = 0
    for ctx in contexts:
        for spec, sel in specs_of(ctx, "moment"):
            for text in texts(spec):
                assert np.array_equal(read_moment(text, ctx, spec), np.broadcast_to(sel, (ctx.T, ctx.N))), (text, spec)
                checked += 1
    assert checked > 20


def test_on_and_inside_name_the_receptacle_as_it_holds_things(contexts):
    """ "inside/in the X" only for what encloses its contents, "on/resting on the X" only for what does not, and
    the object is held by an instance of X at that step."""
    for ctx in contexts:
        enclosing = set(ctx.types[encloses(ctx)].tolist())
        for spec, sel in specs_of(ctx, "location"):
            if spec.key not in ("on", "inside"):
                continue
            for text in texts(spec):
                assert text.startswith("in") == (spec.value in enclosing), (text, spec)
            for anchor, mask in zip(sel.anchors.tolist(), sel.masks):
                assert np.array_equal(mask, ctx.parent == anchor), spec


def test_counting_objects_asks_what_was_seen():
    """count(objects) counts distinct objects seen where the filters hold: "did you see/notice", never "came
    into view" (objects in view before a moment came into view before it)."""
    for text in question_variants(QuerySpec("count", "objects")):
        assert re.search(r"\bdid you (see|notice)\b", text) and "came into view" not in text, text
