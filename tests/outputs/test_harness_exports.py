"""VLMEvalKit's TSV and the lmms-eval task: read back as those harnesses read them (pandas for the TSV, the
datasets library's json loader for lmms-eval's data file, the task's own utils.py for its prompt and score).

Neither harness runs here (VLMEvalKit is not on PyPI; lmms-eval's modules import torch and transformers): the
files are checked against their documented columns and keys (VLMEvalKit's TextMCQDataset: ``index, question,
answer, A, B, ...``, optional ``hint``; lmms-eval's task YAML: the fields of its ``TaskConfig``, as lmms-eval
0.7.3's ``api/task.py`` declares them)."""

from __future__ import annotations

import importlib.util
import json
import string
import subprocess
import sys

import pandas as pd
import pytest
import yaml

from eqagen.core import ConfigError
from eqagen.outputs.exports import export
from eqagen.outputs.harness import COORDINATES, choice_result, options_of, parse_choice
from tests.outputs.model_fixtures import episodes_and_records, write_family_dataset


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    return write_family_dataset(tmp_path_factory.mktemp("families") / "ds")


@pytest.fixture(scope="module")
def tsv(dataset, tmp_path_factory):
    path = tmp_path_factory.mktemp("vlm") / "eqagen.tsv"
    n = export(dataset, "vlmevalkit", path)
    return path, n


def records_by_id():
    return {r.question_id: r for r in episodes_and_records()[1]}


def test_vlmevalkit_tsv_has_the_documented_columns_and_one_row_per_test_question(tsv):
    path, n = tsv
    frame = pd.read_csv(path, sep="\t")  # VLMEvalKit's load() of a .tsv
    records = records_by_id()
    assert n == len(frame) == sum(r.split == "test" for r in records.values())
    assert list(frame.columns[:4]) == ["index", "question", "answer", "A"]
    assert {"hint", "category", "split", "question_id"} <= set(frame.columns)
    assert frame["index"].tolist() == list(range(n)) and set(frame["split"]) == {"test"}


def test_each_row_is_answerable_alone_and_its_letter_names_its_own_answer(tsv):
    """The right option is the record's own answer content (as a sentence); every option is the answer text
    of a record of the same group, without coordinates; the history is in the row."""
    path, _ = tsv
    frame = pd.read_csv(path, sep="\t", keep_default_na=False)
    by_id = records_by_id()
    records = list(by_id.values())
    for row in frame.to_dict("records"):
        r = by_id[row["question_id"]]
        options = [row[c] for c in string.ascii_uppercase if c in row and row[c] != ""]
        assert len(options) == max(1, len(r.choices)) and len(set(options)) == len(options)
        group = [x for x in records if x.balance_key == r.balance_key]
        right = {COORDINATES.sub("", x.answer) for x in group if x.answer_key == r.answer_key}
        assert row[row["answer"]] in right
        texts = {COORDINATES.sub("", x.answer) for x in group}
        assert set(options) <= texts and not any(COORDINATES.search(o) for o in options)
        assert row["hint"].startswith(f"Episode {r.episode_id} ")


def test_option_order_is_seeded_and_varies(dataset, tsv, tmp_path):
    path, _ = tsv
    again = tmp_path / "again.tsv"
    export(dataset, "vlmevalkit", again)
    assert again.read_bytes() == path.read_bytes()
    frame = pd.read_csv(path, sep="\t", keep_default_na=False)
    several = frame[frame["B"] != ""]
    assert len(set(several["answer"])) > 1  # the right answer is not always in one place


# lmms-eval 0.7.3's TaskConfig fields (lmms_eval/api/task.py): a task YAML may set these and no others
TASK_CONFIG_FIELDS = {
    "task", "task_alias", "tag", "group", "group_alias", "dataset_path", "dataset_name", "dataset_kwargs",
    "training_split", "validation_split", "test_split", "fewshot_split", "full_docs", "process_results_use_image",
    "process_docs", "doc_to_visual", "doc_to_text", "doc_to_target", "doc_to_choice", "doc_to_messages",
    "process_results", "use_prompt", "description", "target_delimiter", "fewshot_delimiter", "fewshot_config",
    "num_fewshot", "metric_list", "output_type", "generation_kwargs", "repeats", "filter_list",
    "should_decontaminate", "doc_to_decontamination_query", "cluster_key", "score_key", "metadata",
    "lmms_eval_specific_kwargs", "model_specific_generation_kwargs", "model_specific_target_kwargs",
    "reasoning_tags", "auto_strip_thinking",
}  # fmt: skip


def load_task_yaml(path):
    """The task YAML with lmms-eval's ``!function module.name`` tag resolved to the module beside it."""

    class Loader(yaml.SafeLoader):
        pass

    def function(loader, node):
        module_name, name = loader.construct_scalar(node).split(".")
        spec = importlib.util.spec_from_file_location(module_name, path.parent / f"{module_name}.py")
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        return getattr(module, name)

    Loader.add_constructor("!function", function)
    return yaml.load(path.read_text(), Loader=Loader)


def test_lmms_eval_task_loads_and_scores_through_its_own_functions(dataset, tmp_path):
    from datasets import load_dataset

    n = export(dataset, "lmms-eval", tmp_path / "task", split="test", max_observations=10)
    config = load_task_yaml(tmp_path / "task" / "eqagen_test.yaml")
    assert {"task", "dataset_path", "test_split", "doc_to_text", "doc_to_target", "process_results"} <= set(config)
    assert set(config) <= TASK_CONFIG_FIELDS
    docs = load_dataset(config["dataset_path"], **config["dataset_kwargs"])[config["test_split"]]
    assert len(docs) == n == sum(r.split == "test" for r in records_by_id().values())
    doc = docs[0]
    prompt = config["doc_to_text"](doc)
    assert doc["question"] in prompt and doc["history"] in prompt
    assert all(f"{c}. {o}" in prompt for c, o in zip(string.ascii_uppercase, doc["options"]))
    target = doc[config["doc_to_target"]]
    assert config["process_results"](doc, [target]) == {"accuracy": 1.0}
    wrong = next((c for c in string.ascii_uppercase[: len(doc["options"])] if c != target), "Z")
    assert config["process_results"](doc, [f"The answer is {wrong}."]) == {"accuracy": 0.0}
    assert [m["metric"] for m in config["metric_list"]] == ["accuracy"]


@pytest.mark.parametrize(
    ("response", "letter"),
    [
        ("B", "B"),
        ("(B)", "B"),
        ("B. The drawer was open.", "B"),
        ("(C) a mug", "C"),
        ("The answer is C", "C"),
        ("Answer: a", "A"),
        ("no idea", None),
        ("A drawer.", None),  # the article, not option A
        ("A drawer, so C.", "C"),
        ("A", "A"),
        ("A.", "A"),
        ("I would say B", "B"),
        ("B or C", None),  # two letters: no single answer
    ],
)
def test_parse_choice(response, letter):
    assert parse_choice(response, 3) == letter


def test_choice_result_is_eqagen_scores_accuracy_of_the_choice_the_letter_names():
    choices = ["open", "closed"]  # A, B
    assert choice_result("B", choices, "closed") == {"accuracy": 1.0}
    assert choice_result("The answer is A.", choices, "closed") == {"accuracy": 0.0}
    assert choice_result("C", choices, "closed") == {"accuracy": 0.0}  # C is no option of two
    assert choice_result("no idea", choices, "closed") == {"accuracy": 0.0}


RUN_UTILS = """import json, string, sys
from utils import process_results
out = []
for line in open(sys.argv[1]):
    doc = json.loads(line)
    letters = string.ascii_uppercase[: len(doc["options"])]
    out.append([process_results(doc, [f"The answer is {c}."])["accuracy"] for c in letters])
print(json.dumps(out))
"""


def test_lmms_eval_utils_runs_from_its_folder_with_the_installed_package(dataset, tmp_path):
    """The exported utils.py, imported by a fresh interpreter from the task's folder as lmms-eval imports it
    (eqagen from the installed package), scores 1 for exactly the letter whose option is the question's
    answer content (recomputed from the records) and 0 for every other."""
    export(dataset, "lmms-eval", tmp_path / "task", split="test", max_observations=1)
    data = tmp_path / "task" / "eqagen_test.jsonl"
    proc = subprocess.run([sys.executable, "-c", RUN_UTILS, str(data)], cwd=tmp_path / "task", capture_output=True,
                          text=True, timeout=120)  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    docs, by_id = [json.loads(x) for x in data.read_text().splitlines()], records_by_id()
    for doc, marks in zip(docs, json.loads(proc.stdout), strict=True):
        record = by_id[doc["question_id"]]
        assert set(doc["choices"]) <= set(record.choices) and doc["answer_key"] == record.answer_key
        assert marks == [float(c == record.answer_key) for c in doc["choices"]] and sum(marks) == 1
        assert doc["answer"] == string.ascii_uppercase[marks.index(1.0)]


def test_a_split_without_questions_is_refused(dataset, tmp_path):
    with pytest.raises(ConfigError, match="--split"):
        export(dataset, "vlmevalkit", tmp_path / "x.tsv", split="dev")  # a split the dataset has no questions in


def test_openeqa_names_its_split_by_default_test(dataset, tmp_path):
    export(dataset, "openeqa", tmp_path / "oe.json")
    ids = {i["question_id"] for i in json.loads((tmp_path / "oe.json").read_text())}
    assert ids == {q for q, r in records_by_id().items() if r.split == "test"}


def test_more_choices_than_letters_keep_the_answer_and_draw_the_rest():
    from dataclasses import replace

    record = next(iter(records_by_id().values()))
    contents = [f"value {i:02d}" for i in range(30)]
    record = replace(record, choices=contents, answer_key=contents[17])
    sentences = {(record.balance_key, c): f"It was {c}." for c in contents}
    options, choices, letter = options_of(record, sentences, seed=0)
    assert (
        len(options) == 26
        and len(set(options)) == 26
        and options[string.ascii_uppercase.index(letter)] == ("It was value 17.")
        and options == [f"It was {c}." for c in choices]
    )
    assert (options, choices, letter) == options_of(record, sentences, seed=0) != options_of(record, sentences, seed=1)


def test_parse_choice_reads_the_pronoun_i_as_a_word_where_i_is_an_option():
    assert parse_choice("I think it is D", 10) == "D"
    assert parse_choice("I", 10) == "I" and parse_choice("The answer is I.", 10) == "I"
