import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.paraphrase.validator import check_paraphrase, derive_facts
from tests.paraphrase.chat_server import changed_rewrite, dropped_rewrite, good_rewrite
from tests.paraphrase.fixtures import engine_shaped_records, generated_records, sample_records

RECORDS = sample_records()
COUNT_GROUNDED, COUNT_GROUPS, FRIDGE_YES, BOWL_COLOR, LIST_AFTER, KNIFE_WHERE, DRAWER_TIMES, CHAIRS, CABINET_NO = range(
    len(RECORDS)
)


def essential(record):
    return {(f.kind, str(f.label), f.sides) for f in derive_facts(record).essential}


def test_facts_come_from_structure_and_are_placed_on_the_side_that_states_them():
    facts = essential(RECORDS[COUNT_GROUNDED])
    assert ("coordinate", "(0.46, 0.15, -0.83)", ("question",)) in facts
    assert ("number", "3", ("answer",)) in facts
    assert {("type", "Mug", ("question",)), ("type", "CounterTop", ("question",))} <= facts
    # The result mugs' positions are in the structure but not in the text: not essential.
    assert not any(kind == "coordinate" and "0.56" in label for kind, label, _ in facts)


def test_temporal_state_ordinal_and_polarity_facts():
    facts = essential(RECORDS[LIST_AFTER])
    assert ("temporal", "right_after", ("question",)) in facts
    assert ("ordinal", "2", ("question",)) in facts
    assert {("type", t, ("answer",)) for t in ("Apple", "Egg", "Tomato")} <= facts
    assert ("polarity", "yes", ("answer",)) in essential(RECORDS[FRIDGE_YES])
    assert ("state", "closed", ("question",)) in essential(RECORDS[CABINET_NO])


FAITHFUL = [
    (COUNT_GROUNDED, "How many mugs sit on the counter at (x=0.46, y=0.15, z=-0.83)?", "Three of them."),
    (COUNT_GROUPS, "How many mugs can be found on the countertops?",
     "Two on the counter (x=0.46, y=0.15, z=-0.83), and one on the counter (x=-1.2, y=0.9, z=2.05)."),
    (FRIDGE_YES, "Right after you grabbed the apple, was the refrigerator open?", "Yes, it was."),
    (BOWL_COLOR, "Which color does the bowl in the cupboard have?", "It is green."),
    (LIST_AFTER, "Just after opening the fridge the second time, what did you see?", "Apples, an egg, a tomato."),
    (KNIFE_WHERE, "Where can I find the knife?", "It lies on the dining table at (1.20, 0.90, 2.05)."),
    (DRAWER_TIMES, "Before you switched on the lamp, how often did you open the drawer?", "Twice."),
    (CHAIRS, "How many chairs does the kitchen have?", "There are 4."),
    (CABINET_NO, "Is the cupboard to the left of the sink closed?", "No, it isn't."),
]  # fmt: skip


@pytest.mark.parametrize(("index", "question", "answer"), FAITHFUL)
def test_fact_preserving_rewrites_are_accepted(index, question, answer):
    verdict = check_paraphrase(RECORDS[index], question, answer)
    assert verdict.ok, verdict.reason


UNFAITHFUL = [
    (COUNT_GROUNDED, "How many mugs sit on the counter?", "Three.", "dropped coordinate '(0.46, 0.15, -0.83)'"),
    (COUNT_GROUNDED, "How many mugs are on the counter (x=0.5, y=0.2, z=-0.8)?", "3", "introduced number 0.5"),
    (COUNT_GROUNDED, "How many mugs are on the counter (x=0.46, y=0.15, z=-0.83)?", "Four.", "dropped number '3'"),
    (COUNT_GROUNDED, "How many cups are on the counter (x=0.46, y=0.15, z=-0.83)?", "3", "introduced object 'Cup'"),
    (COUNT_GROUNDED, "How many red mugs are on the counter (x=0.46, y=0.15, z=-0.83)?", "3", "introduced color 'red'"),
    (COUNT_GROUPS, "How many mugs are on the countertop?", "2 on one countertop and 1 on another.",
     "dropped coordinate '(0.46, 0.15, -0.83)' from the answer"),
    (FRIDGE_YES, "Right after you grabbed the apple, was the fridge closed?", "Yes.", "introduced state 'closed'"),
    (FRIDGE_YES, "Right before you grabbed the apple, was the fridge open?", "Yes.", "dropped temporal 'right_after'"),
    (FRIDGE_YES, "After you grabbed the apple, was the fridge open?", "Yes.", "introduced temporal 'after'"),
    (FRIDGE_YES, "Right after you grabbed the apple, was the fridge open?", "No.", "dropped polarity 'yes'"),
    (FRIDGE_YES, "Right after you grabbed the apple, was the fridge not open?", "Yes.", "introduced polarity 'no'"),
    (BOWL_COLOR, "What color is the bowl in the cabinet?", "Blue.", "dropped color 'green'"),
    (LIST_AFTER, "What did you see right after opening the fridge for the first time?", "An apple, an egg, a tomato.",
     "dropped ordinal '2'"),
    (LIST_AFTER, "What did you see right after opening the fridge the second time?", "An apple and an egg.",
     "dropped type 'Tomato'"),
    (DRAWER_TIMES, "How many times did you open the drawer before you turned on the lamp?", "Three times.",
     "dropped number '2'"),
    (CHAIRS, "How many chairs are in the bedroom?", "4", "introduced object 'Bedroom'"),
    (CABINET_NO, "Is the cabinet left of the sink open?", "No.", "introduced state 'open'"),
    (CHAIRS, "", "4", "empty question"),
]  # fmt: skip


@pytest.mark.parametrize(("index", "question", "answer", "reason"), UNFAITHFUL)
def test_rewrites_that_drop_or_change_a_fact_are_rejected_with_the_reason(index, question, answer, reason):
    verdict = check_paraphrase(RECORDS[index], question, answer)
    assert not verdict.ok
    assert any(r.startswith(reason) for r in verdict.reasons), verdict.reasons


def test_the_template_text_itself_always_passes():
    for record in RECORDS + generated_records(60, seed=3):
        verdict = check_paraphrase(record, record.question, record.answer)
        assert verdict.ok, (record.question, verdict.reason)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1), index=st.integers(0, 2))
def test_careful_rewrites_pass_and_corrupted_ones_never_do(seed, index):
    record = generated_records(3, seed=seed)[index]
    item = derive_facts(record)
    assert check_paraphrase(record, *good_rewrite(record.question, record.answer), item).ok
    changed = check_paraphrase(record, *changed_rewrite(record.question, record.answer), item)
    dropped = check_paraphrase(record, *dropped_rewrite(record.question, record.answer), item)
    assert not changed.ok and not dropped.ok
    assert any(r.startswith("dropped") for r in dropped.reasons)


ENGINE = engine_shaped_records()
TOGGLE, MATERIAL, UTILITY, TWO_MOMENTS, BIRCH = range(len(ENGINE))

ENGINE_FAITHFUL = [
    (TOGGLE, "Was the plastic thing switched on, or was it switched off?", "It was off."),
    (MATERIAL, "What material was the switched-on object?", "It was made of metal."),
    (UTILITY, "What purpose did the filled object serve?", "It was used to water the plants."),
    (TWO_MOMENTS, "After passing the bookshelf but before passing the plant, which gray objects did you see?",
     "A plant."),
    (BIRCH, "After entering the house, how many birch objects did you see?", "Two."),
]  # fmt: skip
ENGINE_UNFAITHFUL = [
    (TOGGLE, "Was the plastic object switched on or off?", "On.", "dropped state 'off' from the answer"),
    (MATERIAL, "What was the switched-on object made of?", "Wood.", "dropped material 'metal'"),
    (UTILITY, "What was the filled object used for?", "Cleaning dishes.", "dropped utility 'water plant'"),
    (TWO_MOMENTS, "Which gray objects did you see before you passed the bookshelf and after you passed the plant?",
     "A plant.", "moved temporal 'after' away from bookshelf"),
    (BIRCH, "How many oak objects did you see after you entered the house?", "2.", "dropped material 'birch'"),
    (BIRCH, "How many birch objects did you see after you entered the barn?", "2.", "dropped type 'house'"),
]  # fmt: skip


@pytest.mark.parametrize(("index", "question", "answer"), ENGINE_FAITHFUL)
def test_engine_shaped_items_accept_faithful_rewrites(index, question, answer):
    verdict = check_paraphrase(ENGINE[index], question, answer)
    assert verdict.ok, verdict.reason


@pytest.mark.parametrize(("index", "question", "answer", "reason"), ENGINE_UNFAITHFUL)
def test_engine_shaped_items_reject_changed_facts(index, question, answer, reason):
    verdict = check_paraphrase(ENGINE[index], question, answer)
    assert any(r.startswith(reason) for r in verdict.reasons), verdict.reasons


def test_on_the_question_engines_own_output():
    """Items sampled by the question engine from embedded episodes of each world family."""
    from eqagen.core import derive_rng
    from eqagen.generators import get_backend
    from eqagen.paraphrase.offline import offline_paraphrase
    from eqagen.predicates import QuestionConfig
    from eqagen.templates.records import sample_questions

    records = []
    for family in ("household", "navigation", "blockworld"):
        backend = get_backend(family, "embedded")
        episode = backend.run(backend.plan(1, 0, {"max_steps": 120})[0])
        rng = derive_rng(0, "questions", episode.episode_id)
        records += sample_questions(episode, QuestionConfig(), rng)[0]
    assert len({r.family for r in records}) == 3
    for record in records:
        item = derive_facts(record)
        assert offline_paraphrase(record, 0, item).paraphrase.validated
        assert check_paraphrase(record, *good_rewrite(record.question, record.answer), item).ok
        dropped = check_paraphrase(record, *dropped_rewrite(record.question, record.answer), item)
        assert not dropped.ok, (record.question, record.answer)  # every answer states a fact


@pytest.mark.slow
@settings(max_examples=15, deadline=None)
@given(seed=st.integers(0, 10**6), family=st.sampled_from(["household", "navigation", "blockworld"]))
def test_on_the_question_engines_output_over_many_seeds(seed, family):
    from eqagen.core import derive_rng
    from eqagen.generators import get_backend
    from eqagen.paraphrase.offline import offline_paraphrase
    from eqagen.predicates import QuestionConfig
    from eqagen.templates.records import sample_questions

    backend = get_backend(family, "embedded")
    episode = backend.run(backend.plan(1, seed, {"max_steps": 150})[0])
    records, _ = sample_questions(episode, QuestionConfig(), derive_rng(seed, "q"))
    for record in records:
        item = derive_facts(record)
        assert offline_paraphrase(record, seed, item).paraphrase.validated
        assert check_paraphrase(record, *good_rewrite(record.question, record.answer), item).ok
        assert not check_paraphrase(record, *dropped_rewrite(record.question, record.answer), item).ok


@settings(max_examples=150, deadline=None)
@given(index=st.integers(0, len(RECORDS) - 1), question=st.text(max_size=120), answer=st.text(max_size=120))
def test_arbitrary_text_gets_a_verdict_with_reasons_and_is_rejected(index, question, answer):
    verdict = check_paraphrase(RECORDS[index], question, answer)
    assert not verdict.ok and verdict.reasons  # every sample item has essential facts on both sides
    assert {"question", "answer"} <= {side for f in derive_facts(RECORDS[index]).essential for side in f.sides}
