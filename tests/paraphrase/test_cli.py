"""``eqagen paraphrase IN --out OUT`` on a dataset written with the project's shard writer."""

import json

import pytest

from eqagen.cli import main
from eqagen.outputs.folder import write_dataset
from eqagen.outputs.manifest import read_manifest
from eqagen.outputs.readers import read_questions
from eqagen.outputs.schemas import EPISODES_SCHEMA, questions_table
from eqagen.outputs.shards import sha256_of
from tests.paraphrase.chat_server import ScriptedChatServer, item_text
from tests.paraphrase.fixtures import generated_records


def write_input(root, records):
    fields = {"config": {"output": {"rows_per_shard": 7}}, "seed": 21, "config_hash": "cfg-hash"}
    write_dataset(root, questions_table(records), EPISODES_SCHEMA.empty_table(), fields, 7)


@pytest.fixture
def dataset(tmp_path):
    records = generated_records(12, seed=1, split="train") + generated_records(6, seed=2, split="validation")
    for r in records[-6:]:
        r.episode_id = r.episode_id + "-val"
    write_input(tmp_path / "in", records)
    return tmp_path / "in", records


def test_paraphrase_command_writes_a_verified_dataset_and_a_rerun_asks_nothing(dataset, tmp_path, capsys):
    in_dir, records = dataset
    cache = tmp_path / "cache.sqlite"
    with ScriptedChatServer() as server:
        common = ["--model", "local-model", "--base-url", server.base_url, "--cache", str(cache), "--set", "n_shots=2"]
        assert main(["paraphrase", str(in_dir), "--out", str(tmp_path / "out"), *common]) == 0
        first = server.requests
        assert main(["paraphrase", str(in_dir), "--out", str(tmp_path / "again"), *common]) == 0
        assert server.requests == first == len(records)
        conversations = server.conversations
    printed = json.loads(capsys.readouterr().out.split("}\n")[0] + "}")
    assert printed["validated"] == len(records) and printed["mode"] == "llm"

    out = read_questions(tmp_path / "out")
    assert sorted(r.question_id for r in out) == sorted(r.question_id for r in records)
    assert all(r.paraphrase.validated and r.paraphrase.model == "local-model" for r in out)
    assert all(r.paraphrase.question != r.question for r in out)
    manifest = read_manifest(tmp_path / "out")
    assert (
        manifest["config"]["paraphrase"]["model"] == "local-model" and "api_key" not in manifest["config"]["paraphrase"]
    )
    for shard in manifest["shards"]:
        assert sha256_of(tmp_path / "out" / shard["path"]) == shard["sha256"]
    assert (tmp_path / "out" / "README.md").is_file() and (tmp_path / "out" / "report.html").is_file()
    stats = json.loads((tmp_path / "again" / "stats.json").read_text())["stages"]["paraphrase"]
    assert stats["requests_sent"] == 0 and stats["cache_hits"] == len(records)

    # Few-shot examples come from the train split only.
    train_questions = {r.question for r in records if r.split == "train"}
    for messages in conversations:
        shots = [item_text([m])[0] for m in messages[1:-1] if m["role"] == "user"]
        assert len(shots) == 2 and set(shots) <= train_questions


def test_offline_and_bad_input(dataset, tmp_path, capsys):
    in_dir, _ = dataset
    assert main(["paraphrase", str(in_dir), "--out", str(tmp_path / "off"), "--offline"]) == 0
    out = read_questions(tmp_path / "off")
    assert {r.paraphrase.model for r in out} == {"offline"} and all(r.paraphrase.validated for r in out)
    assert main(["paraphrase", str(in_dir), "--out", str(tmp_path / "off"), "--offline"]) == 0  # the same: redone
    assert main(["paraphrase", str(in_dir), "--out", str(tmp_path / "off"), "--offline", "--seed", "5"]) == 2
    assert main(["paraphrase", str(tmp_path / "nowhere"), "--out", str(tmp_path / "x"), "--offline"]) == 2
    assert main(["paraphrase", str(in_dir), "--out", str(tmp_path / "y"), "--offline", "--set", "temprature=0.1"]) == 2
    err = capsys.readouterr().err
    assert "another config or command" in err and "--overwrite" in err
    assert "no such dataset folder" in err and "paraphrase.temprature" in err
