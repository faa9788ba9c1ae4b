"""Exports for evaluation harnesses: VLMEvalKit's text multiple-choice TSV and an lmms-eval task.

Both present a question as text multiple choice. The options are the question's ``choices`` (the answer
contents its balance group holds, :mod:`eqagen.curation.balance`) as sentences a person reads: for each
content, the answer text of a record of the same group with that content (the one whose answer names
fewest coordinates, then the lowest question id), with any anchor's coordinates taken out, so that no
option gives away the scene it came from. The option order is drawn per question from the dataset's seed.
A question with more than 26 choices (A-Z; 32 of tag-eqa's 2,270 test questions) offers its own answer and
25 others drawn with the same generator.

Every row carries the episode's history as text (TAG-EQA's K-observation subsample, K = 50 by default:
:mod:`eqagen.outputs.subsample`), so the row alone is answerable.

- ``vlmevalkit``: a TSV with VLMEvalKit's columns ``index, question, answer, A, B, ...`` plus ``hint``
  (the history, which VLMEvalKit's text MCQ prompt puts before the question), ``category``, ``split``,
  ``question_id`` and ``episode_id``.
- ``lmms-eval``: a folder ``<task>.yaml`` + ``utils.py`` + ``<task>.jsonl``, the task reading the JSON
  lines as its ``test`` split and scoring each response with :func:`choice_result`, which is ``eqagen
  score``'s accuracy (:func:`eqagen.scoring.choice.accuracy`) of the choice the response's letter names.

A reply's letter becomes the record's choice it stands for at one place, :func:`reply_choice`: the
lmms-eval task and ``eqagen baseline``'s predictions file both go through it.
"""

from __future__ import annotations

import csv
import io
import json
import re
import string
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eqagen.core import ConfigError, DataFileError, QARecord, derive_rng
from eqagen.outputs.atomic import write_text_atomic
from eqagen.outputs.dataset import open_dataset
from eqagen.outputs.history import history_text
from eqagen.outputs.model_inputs import history_of
from eqagen.outputs.readers import iter_episodes, read_questions
from eqagen.scoring.choice import accuracy

DEFAULT_OBSERVATIONS = 50  # TAG-EQA's K
LETTERS = string.ascii_uppercase
COORDINATES = re.compile(r" at \(x=-?[\d.]+, y=-?[\d.]+, z=-?[\d.]+\)")  # templates.words.coords, after " at"
INSTRUCTION = "Answer with the option's letter from the given choices directly."
Render = Callable[[dict[str, Any]], Any]


@dataclass(frozen=True)
class McqItem:
    """One question as text multiple choice."""

    record: QARecord
    options: list[str]  # sentences, in the drawn order
    choices: list[str]  # the record's choice (a content, as its ``choices`` store it) each option says
    answer: str  # the letter of the record's own answer
    history: Any  # the episode's history as the caller rendered it (text for the exports)


def option_sentence(answer: str) -> str:
    """An answer text as an option: the anchors' coordinates taken out."""
    return COORDINATES.sub("", answer)


def representatives(records: list[QARecord]) -> dict[tuple[str, str], str]:
    """``(balance_key, answer_key)`` -> the option sentence of that content in that group."""
    best: dict[tuple[str, str], tuple[int, str, str]] = {}
    for r in records:
        key, rank = (r.balance_key, r.answer_key), (len(COORDINATES.findall(r.answer)), r.question_id, r.answer)
        if key not in best or rank < best[key]:
            best[key] = rank
    return {key: option_sentence(rank[2]) for key, rank in best.items()}


def options_of(record: QARecord, sentences: dict[tuple[str, str], str], seed: int) -> tuple[list[str], list[str], str]:
    """The record's options in their drawn order, the choice each stands for, and its answer's letter."""
    contents = list(record.choices) or [record.answer_key]
    if record.answer_key not in contents:
        raise DataFileError(
            "questions", "choices", f"question {record.question_id}'s own answer is not among its choices"
        )
    missing = [c for c in contents if (record.balance_key, c) not in sentences]
    if missing:
        raise DataFileError(
            "questions", "choices", f"question {record.question_id} offers '{missing[0]}', which no question of its "
            "group answers", "export the whole dataset (every split), as balancing wrote it",
        )  # fmt: skip
    rng = derive_rng(seed, "options", record.question_id)
    if len(contents) > len(LETTERS):  # more than A-Z: the answer and len(LETTERS) - 1 others, drawn
        others = [c for c in contents if c != record.answer_key]
        keep = rng.choice(len(others), size=len(LETTERS) - 1, replace=False)
        contents = [record.answer_key, *(others[i] for i in sorted(keep.tolist()))]
    drawn = [contents[i] for i in rng.permutation(len(contents)).tolist()]
    return [sentences[(record.balance_key, c)] for c in drawn], drawn, LETTERS[drawn.index(record.answer_key)]


def mcq_items(
    out_dir: Path, split: str | None, max_observations: int | None, render: Render | None = history_text
) -> Iterator[McqItem]:
    """The questions of ``split`` (all when None) as multiple choice, by question id, each with its episode's
    history (``max_observations`` steps, None: every step) as ``render`` makes it (None: no history)."""
    dataset = open_dataset(Path(out_dir))
    every = read_questions(dataset)  # options come from the whole group, whatever the split
    sentences = representatives(every)
    present = sorted({r.split for r in every})
    if split is not None and split not in present:
        raise ConfigError("--split", f"no questions in split '{split}'", ", ".join(present))
    chosen = sorted((r for r in every if split is None or r.split == split), key=lambda r: r.question_id)
    wanted = {r.episode_id for r in chosen} if render is not None else set()
    histories = {
        ep.episode_id: render(history_of(ep, max_observations))
        for ep in iter_episodes(dataset)
        if ep.episode_id in wanted
    }
    seed = int(dataset.manifest.seed)
    for r in chosen:
        options, choices, letter = options_of(r, sentences, seed)
        yield McqItem(r, options, choices, letter, histories.get(r.episode_id))


def question_text(record: QARecord) -> str:
    """The validated paraphrase where there is one, else the template text (as the OpenEQA export)."""
    para = record.paraphrase
    return para.question if para is not None and para.validated else record.question


# -- VLMEvalKit ------------------------------------------------------------------------------------------
def vlmevalkit_rows(items: list[McqItem]) -> tuple[list[str], list[dict[str, Any]]]:
    width = max((len(i.options) for i in items), default=0)
    header = ["index", "question", "answer", *LETTERS[:width], "hint", "category", "split", "question_id", "episode_id"]
    rows = []
    for n, item in enumerate(items):
        r = item.record
        row = {"index": n, "question": question_text(r), "answer": item.answer, "hint": item.history}
        row |= dict(zip(LETTERS, item.options))
        row |= {"category": r.category, "split": r.split, "question_id": r.question_id, "episode_id": r.episode_id}
        rows.append(row)
    return header, rows


def export_vlmevalkit(out_dir: Path, dest: Path, split: str | None = None, max_observations: int | None = None) -> int:
    header, rows = vlmevalkit_rows(list(mcq_items(out_dir, split, max_observations or DEFAULT_OBSERVATIONS)))
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header, delimiter="\t", lineterminator="\n", restval="")
    writer.writeheader()
    writer.writerows(rows)
    write_text_atomic(Path(dest), buf.getvalue())
    return len(rows)


# -- lmms-eval -------------------------------------------------------------------------------------------
WORD_LETTERS = frozenset("AI")  # option letters that are also English words ("A drawer", "I think")


def parse_choice(response: str, n_options: int) -> str | None:
    """The option letter a response gives, or None when it gives none or several.

    - the response is the letter: "B", "B.", "(B)";
    - it starts with the letter as a label: "B. The drawer", "(B) the drawer", "B: open";
    - it names the option: "The answer is B", "option (C)", "answer: C";
    - else the one letter among the options that stands alone in it, not counting the words "A" and "I"
      (:data:`WORD_LETTERS`: read as options unless a lower-case word follows): "I think C" is C, "A
      drawer" is no answer, "B or C" is none (it names two).
    """
    letters = LETTERS[:n_options]
    text = response.strip()
    bare = text.strip("().: ").upper()
    if len(bare) == 1 and bare in letters:
        return bare
    labelled = re.match(rf"\(?([{letters}])(?:[.):]|\s*$)", text)
    if labelled:
        return labelled.group(1)
    named = re.search(rf"\b(?:answer(?: is)?|option|choice)\s*:?\s*\(?([{letters}])\b", text, re.IGNORECASE)
    if named and named.group(1).upper() in letters:
        return named.group(1).upper()
    standalone = {
        m.group(1)
        for m in re.finditer(rf"\b([{letters}])\b", text)
        if not (m.group(1) in WORD_LETTERS and re.match(r"\s+[a-z]", text[m.end() :]))
    }
    return standalone.pop() if len(standalone) == 1 else None


def reply_choice(response: str, choices: Sequence[str]) -> str | None:
    """The choice a response names: the one its option letter stands for (``choices`` in the options'
    order); None when it gives no option's letter."""
    letter = parse_choice(response, len(choices))
    return choices[LETTERS.index(letter)] if letter else None


def choice_result(response: str, choices: Sequence[str], answer_key: str) -> dict[str, float]:
    """The per-question result of a multiple-choice response: ``eqagen score``'s ``accuracy`` of the choice
    it names (no letter counts as wrong). lmms-eval's ``process_results`` returns it and averages
    ``accuracy`` over the questions."""
    return {"accuracy": accuracy(reply_choice(response, choices), answer_key)}


def lmms_doc(item: McqItem) -> dict[str, Any]:
    r = item.record
    return {
        "question_id": r.question_id,
        "episode_id": r.episode_id,
        "split": r.split,
        "category": r.category,
        "question": question_text(r),
        "options": item.options,
        "choices": item.choices,
        "answer": item.answer,
        "answer_key": r.answer_key,
        "history": item.history,
    }


LMMS_UTILS = '''"""doc_to_text and process_results of the eqagen task (written by eqagen export --format lmms-eval)."""

import string

from eqagen.outputs.harness import INSTRUCTION, choice_result


def doc_to_text(doc):
    options = "\\n".join(f"{letter}. {text}" for letter, text in zip(string.ascii_uppercase, doc["options"]))
    return f"{doc['history']}\\n\\nQuestion: {doc['question']}\\nOptions:\\n{options}\\n{INSTRUCTION}"


def process_results(doc, results):
    return choice_result(results[0], doc["choices"], doc["answer_key"])
'''


def lmms_yaml(task: str, data_file: str, split_name: str) -> str:
    return (
        f"task: {task}\n"
        "dataset_path: json\n"
        f"dataset_kwargs:\n  data_files:\n    test: {data_file}\n"
        "test_split: test\n"
        "output_type: generate_until\n"
        "doc_to_text: !function utils.doc_to_text\n"
        'doc_to_target: "answer"\n'
        "generation_kwargs:\n  max_new_tokens: 16\n  temperature: 0\n  do_sample: false\n"
        "process_results: !function utils.process_results\n"
        "metric_list:\n  - metric: accuracy\n    aggregation: mean\n    higher_is_better: true\n"
        f"metadata:\n  eqagen_split: {split_name}\n"
    )


def export_lmms_eval(out_dir: Path, dest: Path, split: str | None = None, max_observations: int | None = None) -> int:
    """``dest/eqagen_<split>.yaml``, ``dest/utils.py`` and ``dest/eqagen_<split>.jsonl``."""
    docs = [lmms_doc(i) for i in mcq_items(out_dir, split, max_observations or DEFAULT_OBSERVATIONS)]
    name = f"eqagen_{split or 'all'}"
    dest = Path(dest)
    data = dest / f"{name}.jsonl"
    write_text_atomic(data, "".join(json.dumps(d, ensure_ascii=False) + "\n" for d in docs))
    write_text_atomic(dest / "utils.py", LMMS_UTILS)
    write_text_atomic(dest / f"{name}.yaml", lmms_yaml(name, str(data.resolve()), split or "all"))
    return len(docs)
