"""The records stage's caches and shortcuts give what a fresh computation gives, on sampled programs."""

from __future__ import annotations

from functools import lru_cache

from eqagen.core import FilterSpec, QARecord, QuerySpec, ResultItem, derive_rng
from eqagen.predicates import QuestionConfig, context_for
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.evaluator import RawGroup, caption, result_items
from eqagen.predicates.sampler import Accepted, sample_programs
from eqagen.templates import render as render_module
from eqagen.templates.records import make_records
from eqagen.templates.render import (
    Words,
    anchor_text,
    file_template,
    filter_words,
    render,
    render_answer,
    render_question,
    render_structured,
    source_template,
)
from tests.predicates.conftest import make_episode
from tests.predicates.test_filters import kitchen


@lru_cache(maxsize=1)
def sampled() -> list[tuple[EpisodeContext, list[Accepted]]]:
    """Accepted programs of a few small episodes (each with its context)."""
    out = []
    for seed in range(4):
        ep = make_episode(seed, 60)
        ctx = context_for(ep)
        accepted, _ = sample_programs(ctx, QuestionConfig(), derive_rng(0, "text-caches", ep.episode_id))
        out.append((ctx, accepted))
    return out


def fresh_items(ctx: EpisodeContext, g: RawGroup) -> tuple[ResultItem, ...]:
    """The result items of a group read straight from the episode's arrays."""
    ents = ctx.episode.entities
    return tuple(
        ResultItem(
            ents.instance_id[e],
            str(ctx.types[e]),
            tuple(round(float(v), 2) for v in ctx.position[t, e]),
            caption(ctx, e),
        )
        for e, t in zip(g.entities.tolist(), g.last_t.tolist())
    )


def test_result_items_are_the_entities_where_they_are_reported():
    moved = False  # an entity reported at two steps at two positions: a cache keyed by entity alone would fail
    for ctx, accepted in sampled():
        where: dict[int, set[tuple]] = {}
        for acc in accepted:
            for g in acc.groups:
                items = result_items(ctx, g)
                assert items == fresh_items(ctx, g)
                for e, item in zip(g.entities.tolist(), items):
                    where.setdefault(e, set()).add(item.position)
        moved = moved or any(len(p) > 1 for p in where.values())
    assert moved


def clear_text_caches() -> None:
    """Forget every text the records stage keeps across episodes."""
    render_module._SHARED_WORDS.clear()
    render_module._PROGRAM_TEXTS.clear()
    render_module._answer_text.cache_clear()


def fresh_texts(ctx: EpisodeContext, acc: Accepted, record: QARecord) -> tuple[str, str, str]:
    """A record's question, structured question and answer rendered through the templates with no cache: a new
    context of the episode, the caches emptied first."""
    clear_text_caches()
    fresh = EpisodeContext(ctx.episode)
    program, groups = record.program, record.structured_answer
    where = next((g.filter_index for g in acc.groups if g.anchor >= 0), -1)
    anchors = {where: groups[0].anchor} if record.grounded else {}
    return (
        render_question(fresh, program, anchors),
        render_structured(fresh, program, anchors),
        render_answer(fresh, program, groups, record.answer_type, -1 if record.grounded else where),
    )


def test_records_say_what_a_fresh_render_says():
    """Records of several episodes made one after the other (the caches shared across them, as in a run) have
    the text that rendering each through the templates alone gives."""
    clear_text_caches()
    made = []
    for ctx, accepted in sampled():
        rng = derive_rng(1, "text-caches", ctx.episode.episode_id)
        made += [(ctx, acc, r) for acc in accepted for r in make_records(ctx, acc, rng)]
    assert sum(r.grounded for *_, r in made) >= 10 and any(r.program.query.args for *_, r in made)
    for ctx, acc, record in made:
        assert (record.question, record.structured_question, record.answer) == fresh_texts(ctx, acc, record)


def test_filter_words_tell_apart_what_their_text_depends_on():
    """Words cached across episodes are keyed by all their text depends on: args (a receptacle), the anchor as
    written (-0.0 is not 0.0 there)."""
    clear_text_caches()
    ctx = context_for(kitchen())
    on_counter = FilterSpec("location", "on_same", "Apple", {"receptacle": "CounterTop"})
    in_fridge = FilterSpec("location", "on_same", "Apple", {"receptacle": "Fridge"})
    assert filter_words(ctx, on_counter).phrase == "on the same countertop as the apple"
    assert filter_words(ctx, in_fridge).phrase == "on the same fridge as the apple"
    on = FilterSpec("location", "on", "CounterTop")
    assert filter_words(ctx, on).phrase == "on the countertop"
    assert filter_words(ctx, on, anchor_text((0.0, 0.9, 2.0))).phrase == "on the countertop (x=0.00, y=0.90, z=2.00)"
    assert filter_words(ctx, on, anchor_text((-0.0, 0.9, 2.0))).phrase == "on the countertop (x=-0.00, y=0.90, z=2.00)"
    assert filter_words(ctx, on, anchor_text((-0.0, 0.9, 2.0))).conjunct == (
        "(location:on the object = countertop (x=-0.00, y=0.90, z=2.00))"
    )


def test_render_gives_what_jinja2s_own_render_gives():
    """``render``'s shortcut (globals merged once per template, the context made directly) against
    ``Template.render``: on the package's templates, and on sources using globals, assignments and imports."""
    cup = Words(the="the cup", a="a cup", plural="cups", bare="cup", something="something")
    anchored = Words(value="countertop", anchor=" (x=1.00, y=0.90, z=2.00)")
    cases = [
        (file_template("structured.j2"), {"head": "countObjects", "conjuncts": ["(a:b = c)", "(d:e = f)"]}),
        (file_template("answer.j2"), {"groups": [Words(phrase="on x", value="a cup"), Words(phrase="", value="2")]}),
        (source_template("{% for i in range(n) %}{{ i }}{{ cycler('a', 'b').next() }}{% endfor %}"), {"n": 3}),
        (
            source_template('{% from "filters.j2" import location_on %}{{ location_on(f, v) }}'),
            {"f": None, "v": anchored},
        ),
        (
            source_template('{% import "filters.j2" as m %}{{ m.property_color(f, {"value": v}) }}'),
            {"f": 1, "v": "red"},
        ),
    ]
    for name, arg, args in [("count", "events", {"kind": "open"}), ("getState", "open", {}), ("getLocation", "", {})]:
        variables = {"q": QuerySpec(name, arg, args), "np": cup, "when": " after x", "event_verb": "open"}
        cases.append((file_template(f"questions/{name}.j2"), {**variables, "subject": "cup"}))
    for template, variables in cases:
        assert render(template, **variables) == template.render(**variables)


def test_text_caches_stay_bounded(monkeypatch):
    """Full caches are emptied, and what is made after that is still right."""
    monkeypatch.setattr(render_module, "MAX_CACHED_TEXTS", 4)
    monkeypatch.setattr(render_module, "MAX_CACHED_WORDS", 4)
    clear_text_caches()
    made = []
    for ctx, accepted in sampled():
        rng = derive_rng(2, "text-caches", ctx.episode.episode_id)
        for acc in accepted:
            made += [(ctx, acc, r) for r in make_records(ctx, acc, rng)]
            assert len(render_module._PROGRAM_TEXTS) <= 4 and len(render_module._SHARED_WORDS) <= 4
    for ctx, acc, record in made:
        assert (record.question, record.structured_question, record.answer) == fresh_texts(ctx, acc, record)
