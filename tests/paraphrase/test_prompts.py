import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from eqagen.paraphrase.prompts import (
    ExamplePool,
    ReplyFormatError,
    build_messages,
    parse_reply,
    render_item,
    with_retry,
)
from eqagen.paraphrase.validator import derive_facts
from tests.paraphrase.fixtures import generated_records, sample_records

GOOD = {"question": "How many mugs?", "answer": "Three."}


@pytest.mark.parametrize(
    "reply",
    [
        json.dumps(GOOD),
        "Sure! ```json\n" + json.dumps(GOOD) + "\n``` Anything else?",
        "Here you go: " + json.dumps(GOOD) + " (rewritten)",
        '{"Question": "How many mugs?", "Answer": "Three."}',
        "Question: How many mugs?\nAnswer: Three.",
    ],
)
def test_tolerant_parsing_finds_the_pair(reply):
    assert parse_reply(reply) == ("How many mugs?", "Three.")


def test_braces_inside_strings_do_not_confuse_the_object_scanner():
    reply = 'noise {"question": "What is {x}?", "answer": "a \\"quoted\\" }"} tail'
    assert parse_reply(reply) == ("What is {x}?", 'a "quoted" }')


@pytest.mark.parametrize("reply", ['{"question": "How many mugs?", "answer": ', "I cannot help", '{"q": 1}', ""])
def test_malformed_replies_raise_with_what_was_wrong(reply):
    with pytest.raises(ReplyFormatError, match="malformed reply"):
        parse_reply(reply)


def pick(pool, record, n, seed):
    return pool.pick(record.question_id, record.query_type, n, seed)


def test_few_shot_examples_come_from_train_seeded_and_never_the_item_itself():
    records = generated_records(30, seed=1, split="train") + generated_records(10, seed=2, split="validation")
    pool = ExamplePool(records)
    assert {r.split for r in pool.records} == {"train"}
    target = records[3]
    chosen = pick(pool, target, 4, seed=7)
    assert len(chosen) == 4 and target not in chosen and len({id(r) for r in chosen}) == 4
    assert [r.question_id for r in chosen] == [r.question_id for r in pick(pool, target, 4, seed=7)]
    draws = {tuple(r.question_id for r in pick(pool, target, 4, seed=s)) for s in range(10)}
    assert len(draws) > 5  # the seed matters
    assert sum(r.query_type == target.query_type for r in chosen) == 2  # half share the query type


@settings(max_examples=40, deadline=None)
@given(n_records=st.integers(1, 300), n_shots=st.integers(0, 8), seed=st.integers(0, 10**6))
def test_draws_are_distinct_exclude_the_item_and_fill_up_when_possible(n_records, n_shots, seed):
    records = generated_records(n_records, seed=seed % 7)
    pool = ExamplePool(records)
    target = records[seed % n_records]
    chosen = pick(pool, target, n_shots, seed)
    assert len({r.question_id for r in chosen}) == len(chosen) == min(n_shots, n_records - 1)
    assert target.question_id not in {r.question_id for r in chosen}


def test_pool_falls_back_to_all_records_before_splitting():
    records = generated_records(5, seed=1)
    assert len(ExamplePool(records)) == 5
    assert pick(ExamplePool(records[:1]), records[0], 3, seed=0) == []


def test_messages_hold_system_shots_and_the_item_with_its_facts():
    record = sample_records()[0]
    item = derive_facts(record)
    text = render_item(record, item)
    assert "Template question: How many mugs are on the countertop (x=0.46, y=0.15, z=-0.83)?" in text
    assert "coordinate (0.46, 0.15, -0.83) (in the question)" in text
    messages = build_messages(record, item, [])
    assert [m["role"] for m in messages] == ["system", "user"]
    retried = with_retry(messages, "{bad", ["dropped number '3' from the answer"])
    assert [m["role"] for m in retried] == ["system", "user", "assistant", "user"]
    assert "dropped number '3' from the answer" in retried[-1]["content"]


PROMPT_DIGEST = """
from eqagen.core.rng import stable_hash
from eqagen.paraphrase.prompts import build_messages
from eqagen.paraphrase.validator import derive_facts
from tests.paraphrase.fixtures import sample_records, generated_records
print(stable_hash([build_messages(r, derive_facts(r), []) for r in sample_records() + generated_records(9)]))
"""


def test_prompts_are_byte_identical_across_processes_and_hash_seeds():
    import os
    import subprocess
    import sys

    from tests.conftest import REPO_ROOT

    def digest(hash_seed: int) -> str:
        env = {**os.environ, "PYTHONHASHSEED": str(hash_seed)}
        cmd = [sys.executable, "-c", PROMPT_DIGEST]
        return subprocess.run(cmd, cwd=REPO_ROOT, env=env, capture_output=True, text=True, check=True).stdout

    digests = {digest(s) for s in (1, 2, 3)}
    assert len(digests) == 1


@settings(max_examples=200, deadline=None)
@given(text=st.text(max_size=300))
def test_any_reply_either_parses_or_raises_the_format_error(text):
    try:
        question, answer = parse_reply(text)
    except ReplyFormatError:
        return
    assert isinstance(question, str) and isinstance(answer, str)


@settings(max_examples=100, deadline=None)
@given(question=st.text(min_size=1, max_size=80), answer=st.text(min_size=1, max_size=80), noise=st.text(max_size=40))
def test_a_json_reply_survives_any_surrounding_prose(question, answer, noise):
    noise = noise.replace("{", "").replace("}", "")
    reply = f"{noise}\n{json.dumps({'question': question, 'answer': answer})}\n{noise}"
    assert parse_reply(reply) == (question.strip(), answer.strip())
