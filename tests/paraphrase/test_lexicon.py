import re

from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.paraphrase import lexicon as lx


def test_numbers_read_numerals_words_and_compounds_in_order():
    assert lx.scan_numbers("twenty-one mugs, 3 cups and x=-0.83") == [21.0, 3.0, -0.83]
    assert lx.scan_numbers("you opened it twice") == [2.0]


def test_ambiguous_number_words_count_only_when_asked():
    text = "the one on the left, once you opened it"
    assert lx.scan_numbers(text) == [1.0, 1.0]
    assert lx.scan_numbers(text, include_ambiguous=False) == []


def test_numbers_inside_ordinals_and_identifiers_are_not_numbers():
    assert lx.scan_numbers("the 2nd time, Mug3") == []
    assert lx.scan_ordinals("the 2nd time and the third time") == [2, 3]


def test_longest_temporal_relation_wins():
    assert lx.scan("temporal", "right after you opened it, and after that") == ["right_after", "after"]
    assert lx.scan("temporal", "just before and prior to") == ["right_before", "before"]


def test_states_and_colors_map_synonyms_to_one_id():
    assert lx.scan("state", "the fridge was shut, the lamp switched on") == ["closed", "on"]
    assert lx.scan("color", "a grey and a gray mug") == ["gray", "gray"]


def test_type_forms_cover_spacing_plurals_and_synonyms():
    forms = lx.type_forms("CounterTop")
    assert {"counter top", "countertop", "countertops", "counter", "counters"} <= forms
    assert "knives" in lx.type_forms("ButterKnife") or "butter knives" in lx.type_forms("ButterKnife")
    mentions = lx.scan_types("Is the refrigerator next to the counter tops?")
    assert [sorted(m) for m in mentions] == [["Fridge"], ["CounterTop"]]


def test_unknown_types_are_recognised_when_the_item_names_them():
    assert lx.scan_types("a wooden crate") == []
    assert lx.scan_types("a wooden crate", frozenset({"WoodenCrate"})) == [frozenset({"WoodenCrate"})]


def test_plural_rules():
    assert [lx.plural(w) for w in ("mug", "box", "potato", "shelf", "strawberry", "dining table")] == [
        "mugs", "boxes", "potatoes", "shelves", "strawberries", "dining tables",
    ]  # fmt: skip


def test_every_household_type_is_recognised_in_the_template_singular_and_plural():
    from eqagen.generators.household.objects import catalog
    from eqagen.templates.words import label, plural

    for name in catalog().index:
        forms = lx.type_forms(name)
        assert label(name) in forms and plural(label(name)) in forms, name


def test_irregular_plurals_are_the_ones_the_templates_write():
    assert {"cacti", "mice", "knives"} <= lx.type_forms("Cactus") | lx.type_forms("Mouse") | lx.type_forms("Knife")


def _flat_alternation(forms: list[str]) -> re.Pattern[str]:
    """The definition the compiled vocabularies must keep: every form in turn, the longest first."""
    body = "|".join(re.escape(f).replace(r"\ ", "[ -]") for f in sorted(set(forms), key=lambda f: (-len(f), f)))
    return re.compile(rf"(?<![\w-])(?:{body})(?![\w-])")


def _spans(pattern: re.Pattern[str], text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in pattern.finditer(text)]


def _text_of(forms: list[str]) -> st.SearchStrategy[str]:
    """Texts made of the forms (their spaces written as spaces or hyphens), parts of them and separators."""
    parts = st.sampled_from([*forms, "a", "b", "s", "x", "-", ",", "  "])
    hyphenated = st.tuples(parts, st.booleans()).map(lambda p: p[0].replace(" ", "-") if p[1] else p[0])
    return st.tuples(st.lists(hyphenated, max_size=10), st.sampled_from([" ", "-", ""])).map(lambda t: t[1].join(t[0]))


_SHORT_FORMS = st.lists(
    st.lists(st.text("ab", min_size=1, max_size=3), min_size=1, max_size=3).map(" ".join), min_size=1
)


@settings(max_examples=500)
@given(st.data(), _SHORT_FORMS)
def test_a_compiled_vocabulary_matches_what_trying_every_form_longest_first_matches(data, forms):
    # Forms over two letters are often prefixes of each other: where the longest-first order matters.
    text = data.draw(_text_of(forms))
    assert _spans(lx._alternation(forms), text) == _spans(_flat_alternation(forms), text)


_TYPE_FORMS = sorted({f for t in lx.TYPE_SYNONYMS for f in lx.type_forms(t)})


@settings(max_examples=300)
@given(_text_of(_TYPE_FORMS))
def test_the_compiled_type_vocabulary_matches_what_trying_every_form_longest_first_matches(text):
    assert _spans(lx._alternation(_TYPE_FORMS), text) == _spans(_flat_alternation(_TYPE_FORMS), text)


_KINDS = ("color", "state", "bare_state", "material", "temporal", "polarity", "relation", "direction")
_ALL_WORDS = sorted(
    {w for kind in _KINDS for w in lx._vocabulary_pattern(kind)[1]} | set(lx.NUMBER_WORDS) | set(lx.ORDINALS)
)


def _text_of_words() -> st.SearchStrategy[str]:
    """Texts of vocabulary words, parts of them, numerals and separators (words glued to others too)."""
    parts = st.sampled_from([*_ALL_WORDS, "do", "n't", "x", "3", "2nd", "-", "'", ".", ",", "  ", "Mug"])
    return st.tuples(st.lists(parts, max_size=12), st.sampled_from([" ", "-", ""])).map(lambda t: t[1].join(t[0]))


@settings(max_examples=400)
@given(st.sampled_from(_KINDS), _text_of_words())
def test_a_scan_skipped_for_want_of_its_words_first_letters_finds_what_its_pattern_finds(kind, text):
    pattern, table, _ = lx._vocabulary_pattern(kind)
    norm = lx.normalize_text(text)
    if kind == "polarity":
        norm = norm.replace("n't", " n't")
    assert lx.scan(kind, text) == [table[m.group(0).replace("-", " ")] for m in pattern.finditer(norm)]


@settings(max_examples=400)
@given(_text_of_words())
def test_number_and_ordinal_words_skipped_for_want_of_their_letters_are_none_of_the_texts_words(text):
    norm = lx.normalize_text(text)
    words = [m for m in lx._WORD.finditer(norm)]
    numbers = [m.start() for m in words if all(p in lx.NUMBER_WORDS for p in m.group(0).split("-"))]
    numerals = [m.start() for m in lx._NUMERAL.finditer(norm)]
    assert len(lx.number_mentions(text)) == len(numbers) + len(numerals)
    ordinals = [lx.ORDINALS[m.group(0)] for m in words if m.group(0) in lx.ORDINALS]
    assert sorted(lx.scan_ordinals(text)) == sorted(
        ordinals + [int(m.group(1)) for m in lx._ORDINAL_NUMERAL.finditer(norm)]
    )
