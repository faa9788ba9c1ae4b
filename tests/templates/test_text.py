"""Text properties on the records of real embedded episodes (household, navigation, Minecraft): number
agreement, either/or answers object by object, coordinates only where they ground an anchor, one text per
program in every scene, every phrasing variant in use, the structured forms naming things alike."""

from __future__ import annotations

import re
from collections import defaultdict
from functools import lru_cache

from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.core import Episode, QARecord, derive_rng
from eqagen.generators.base import get_backend
from eqagen.outputs.schemas import questions_table
from eqagen.predicates import QuestionConfig, context_for
from eqagen.templates.answers import WHOLE_GROUP_ANSWERS, answer_text, readable_value
from eqagen.templates.phrasing import Wording, phrasing, question_keys, question_variants
from eqagen.templates.records import sample_questions
from eqagen.templates.render import conjunct, filter_phrase, program_wording, question_text
from eqagen.templates.words import coords, label, plural
from tests.predicates.helpers import household_episodes

FAMILY_PARAMS = {
    "household": {"max_steps": 250},
    "navigation": {"policy": "express", "n_scenes": 6},
    "blockworld": {},
}


@lru_cache(maxsize=64)
def episode(family: str, seed: int) -> Episode:
    backend = get_backend(family, "embedded")
    (spec,) = backend.plan(1, seed, FAMILY_PARAMS[family])
    return backend.run(spec)


def sampled(ep: Episode) -> list[QARecord]:
    records, _ = sample_questions(ep, QuestionConfig(), derive_rng(0, "text", ep.episode_id))
    return records


@lru_cache(maxsize=64)
def records_of(family: str, seed: int) -> tuple[QARecord, ...]:
    return tuple(sampled(episode(family, seed)))


@lru_cache(maxsize=1)
def many_records() -> tuple[QARecord, ...]:
    """The records of 60 household, 16 navigation and 8 Minecraft episodes (several per scene)."""
    eps = [*household_episodes(60), *(episode("navigation", s) for s in range(16))]
    eps += [episode("blockworld", s) for s in range(8)]
    return tuple(r for ep in eps for r in sampled(ep))


# an episode of one world family, drawn by seed
episodes = st.tuples(st.sampled_from(sorted(FAMILY_PARAMS)), st.integers(0, 5000))


def per_object(record: QARecord) -> bool:
    return record.answer_type not in WHOLE_GROUP_ANSWERS


def value_counts(record: QARecord) -> list[int]:
    """Per group and value, how many of the group's items have it (what one answer sentence is about)."""
    out = []
    for g in record.structured_answer:
        values = [r.value for r in g.result]
        out += [values.count(v) for v in sorted(set(values))]
    return out


@settings(max_examples=30, deadline=None)
@given(ep=episodes)
def test_questions_never_say_how_many_and_answers_agree_with_what_they_name(ep):
    for r in records_of(*ep):
        assert not re.search(r"\b(was|is) (the|a|an)\b", r.question, re.IGNORECASE), r.question
        if per_object(r):
            counts = value_counts(r)
            singular = len(re.findall(r"\b(was|is)\b", r.answer))
            several = len(re.findall(r"\b(were|are)\b", r.answer))
            assert (singular, several) == (counts.count(1), len(counts) - counts.count(1)), (r.answer, counts)


@settings(max_examples=30, deadline=None)
@given(ep=episodes)
def test_answers_about_each_object_name_each_object_and_its_value(ep):
    for r in records_of(*ep):
        if not per_object(r):
            continue
        for g in r.structured_answer:
            assert all(item.value for item in g.result), g
            for item in g.result:
                noun = label(item.type)
                assert re.search(rf"\b({re.escape(noun)}|{re.escape(plural(noun))})\b", r.answer), (r.answer, noun)
                assert label(item.value) in r.answer or item.value.replace("_", " ") in r.answer, (r.answer, item)
        assert not re.search(r"^\w+ and \w+\.$", r.answer), r.answer  # "Off and on."


@settings(max_examples=30, deadline=None)
@given(ep=episodes)
def test_coordinates_only_ground_an_anchor(ep):
    for r in records_of(*ep):
        if "(x=" in r.question:
            assert r.grounded and coords(r.structured_answer[0].anchor) in r.question
        labels_with_anchor = [g.anchor is not None and not r.grounded for g in r.structured_answer]
        parts = r.answer.split("; ")
        if not any(labels_with_anchor):
            assert "(x=" not in r.answer, r.answer
            continue
        assert len(parts) == len(r.structured_answer)
        for part, g in zip(parts, r.structured_answer):
            where, _, said = part.partition(": ")
            assert coords(g.anchor) in where and "(x=" not in said, part


@settings(max_examples=30, deadline=None)
@given(ep=episodes)
def test_structured_question_and_predicates_name_things_alike(ep):
    for r in records_of(*ep):
        for g in r.structured_answer:
            if g.anchor is None:
                assert g.predicate == " AND ".join(conjunct(f) for f in r.program.filters)
                conjuncts = g.predicate.split(" AND ")
            else:
                conjuncts = [g.predicate]
            if r.grounded or g.anchor is None:
                assert all(c in r.structured_question for c in conjuncts), (g.predicate, r.structured_question)
            else:  # an anchored group of an ungrounded record: the filter as its grounded twin names it
                spec = next(f for f in r.program.filters if conjunct(f, g.anchor) == g.predicate)
                assert conjunct(spec) in r.structured_question


def test_answer_key_is_the_distinct_values_a_reader_must_say():
    """The content key balancing compares: one part per distinct value of the record's answer groups, in words
    (two anchors both answering "1" say "1" once), and equal value sets, in any scene and world family, give
    equal keys and different ones different keys."""
    key_of, values_of, repeated = {}, {}, 0
    for r in many_records():
        values = frozenset(readable_value(r.answer_type, g.value) for g in r.structured_answer)  # as the answer says
        assert len(r.answer_key.split(" | ")) == len(values), (r.answer_key, [g.value for g in r.structured_answer])
        assert key_of.setdefault((r.answer_type, values), r.answer_key) == r.answer_key
        assert values_of.setdefault((r.answer_type, r.answer_key), values) == values
        repeated += len(r.structured_answer) > len(values)
    assert repeated >= 10, repeated  # answers whose anchor groups repeat a value, where a count would differ


def content_key(r: QARecord) -> tuple:
    """A program as a reader sees it: query and filters with what they name, without episode indices."""
    q = r.program.query
    filters = tuple(
        (f.family, f.key, f.value, f.args.get("receptacle", ""), f.args.get("figure", "")) for f in r.program.filters
    )
    return q.name, q.arg, tuple(sorted(q.args.items())), filters


def test_the_same_program_reads_the_same_in_every_scene():
    texts, scenes = defaultdict(set), defaultdict(set)
    twins = {(r.episode_id, r.program.signature()): r for r in many_records() if not r.grounded}
    for r in many_records():
        if r.grounded:  # the grounded twin reads like its ungrounded twin, with the anchor named
            twin = twins[(r.episode_id, r.program.signature())]
            assert r.question.replace(f" at {coords(r.structured_answer[0].anchor)}", "") == twin.question
            continue
        texts[content_key(r)].add(r.question)
        scenes[content_key(r)].add(r.scene_id)
    assert all(len(t) == 1 for t in texts.values()), [t for t in texts.values() if len(t) > 1][:3]
    recurring = [k for k, s in scenes.items() if len(s) >= 2]
    assert len(recurring) >= 100 and {k[0] for k in recurring} >= {"listObjects", "count", "getState"}


def used_question_variant(r: QARecord) -> int:
    wording = program_wording(r.program)
    n = len(question_variants(r.program.query) or ())
    found = [i for i in range(n) if question_text(r.program, Wording(i, wording.filters)) == r.question]
    assert len(found) == 1, (r.question, found)
    return found[0]


def data_key(keys: list[str], table: dict) -> str:
    return next(k for k in keys if k in table)


def test_every_phrasing_variant_is_used():
    """Each question text of every query key met, and each phrase of every filter key met often enough (12
    times per variant), is used by some record."""
    questions, filters, seen = defaultdict(list), defaultdict(set), defaultdict(int)
    data = phrasing()
    for r in many_records():
        if r.grounded:
            continue
        questions[data_key(question_keys(r.program.query), data.questions)].append(used_question_variant(r))
        wording = program_wording(r.program)
        for spec, variant in zip(r.program.filters, wording.filters):
            assert filter_phrase(spec, variant) in r.question
            key = data_key([f"{spec.family}.{spec.key}.{spec.value}", f"{spec.family}.{spec.key}"], data.filters)
            filters[key].add(variant)
            seen[key] += 1
    checked = [k for k, used in questions.items() if len(used) >= 12 * len(data.questions[k])]
    # getMaterial is among them only where enough Minecraft questions pass the validity rules
    assert {"listObjects", "count.objects", "getState", "getLocation", "getRoom"} <= set(checked)
    for key in checked:
        assert set(questions[key]) == set(range(len(data.questions[key]))), (key, set(questions[key]))
    common = [k for k in filters if len(data.filters[k].texts) >= 2 and seen[k] >= 12 * len(data.filters[k].texts)]
    assert len(common) >= 10, common
    for key in common:
        assert filters[key] == set(range(len(data.filters[key].texts))), (key, filters[key])


@settings(max_examples=20, deadline=None)
@given(ep=episodes)
def test_answers_are_reproducible_from_the_structured_answer_as_written(ep):
    """Each answer, made again from the structured answer read back from a Parquet table (and the world's
    rule of which receptacle types hold things inside), is the answer."""
    records = records_of(*ep)
    ctx = context_for(episode(*ep))
    for r in map(QARecord.from_dict, questions_table(list(records)).to_pylist()):
        labels = [""] * len(r.structured_answer)
        if not r.grounded and r.structured_answer[0].anchor is not None:
            wording = program_wording(r.program)
            for i, g in enumerate(r.structured_answer):
                where = next(j for j, f in enumerate(r.program.filters) if conjunct(f, g.anchor) == g.predicate)
                labels[i] = filter_phrase(r.program.filters[where], wording.filters[where], g.anchor)
        assert answer_text(ctx, r.program.query, r.answer_type, r.structured_answer, labels) == r.answer
