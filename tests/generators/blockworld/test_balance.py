"""pqb-minecraft: every kept question has environments with different answers; yes/no is blind-proof.

Candidates are the question records of the preset's embedded worlds (``sample_questions``, and the
existence questions asked in the other worlds, as the ask stage asks them); the curation stage's
``balance`` keeps, per question text (``balance_key``), environments whose answers
are equally frequent.
"""

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from eqagen.config import read_preset, validate_config
from eqagen.core import derive_rng
from eqagen.curation.balance import balance, blind_baseline
from eqagen.curation.config import BalanceConfig
from eqagen.generators import get_backend
from eqagen.predicates import context_for
from eqagen.predicates.asking import accept, ask
from eqagen.templates.records import make_records, sample_questions


def _candidates(n_episodes: int, seed: int) -> pa.Table:
    """The proposed records of the preset's worlds, and each existence question asked in every other world
    (the ask stage asks every question so; an existence question is proposed where its kind was seen, so
    its ``no`` answers come from the other worlds)."""
    config = validate_config(read_preset("pqb-minecraft"), "pqb-minecraft")
    questions = config.questions.model_copy(update={"questions_per_episode": 10})
    backend = get_backend("blockworld", "embedded")
    columns = ("question_id", "scene_id", "balance_key", "answer_key", "answer_type", "question", "grounded")
    rows: dict[str, list] = {c: [] for c in columns}

    def add(records) -> None:
        for r in records:
            d = r.to_dict()
            for c in columns:
                rows[c].append(d[c])

    contexts, existence = [], {}
    for spec in backend.plan(n_episodes, seed, {"max_steps": config.generation.max_steps}):
        ep = backend.run(spec)
        records, _ = sample_questions(ep, questions, derive_rng(seed, "questions", ep.episode_id))
        add(records)
        contexts.append(context_for(ep))
        for r in records:
            if r.query_type == "existsKind" and not r.grounded:
                existence.setdefault(r.balance_key, (r.program, r.scene_id))
    for program, proposed_in in existence.values():
        for ctx in contexts:
            verdict = ask(ctx, program, questions) if ctx.episode.scene_id != proposed_in else "proposed here"
            if not isinstance(verdict, str):
                here, answered = verdict
                rng = derive_rng(seed, "ask", ctx.episode.episode_id, program.signature())
                add(make_records(ctx, accept(ctx, here, answered, lambda rng=rng: rng)))
    return pa.table(rows)


def _check(table: pa.Table, min_questions: int) -> None:
    config = BalanceConfig(mode="exact", min_answers=2, max_per_answer=4, min_window_scenes=40)
    kept, _stats = balance(table, config, seed=0)
    assert kept.num_rows > 0
    by_question: dict[str, dict[str, set]] = {}
    for key, scene, answer in zip(*(kept.column(c).to_pylist() for c in ("balance_key", "scene_id", "answer_key"))):
        by_question.setdefault(key, {}).setdefault(answer, set()).add(scene)
    assert len(by_question) >= min_questions
    for key, answers in by_question.items():
        assert len(answers) >= 2, key
        sizes = {len(s) for s in answers.values()}
        assert len(sizes) == 1, (key, answers)  # every answer equally often
    yes_no = kept.filter(pc.equal(kept.column("answer_type"), "yes/no"))
    assert yes_no.num_rows > 0
    assert blind_baseline(yes_no)["accuracy"] <= 0.51
    pool_yes_no = table.filter(pc.equal(table.column("answer_type"), "yes/no"))
    assert blind_baseline(pool_yes_no)["accuracy"] > blind_baseline(yes_no)["accuracy"]


def test_pool_is_balanceable_and_balanced():
    table = _candidates(32, 0)
    keys = np.array(table.column("balance_key").to_pylist())
    answers = np.array(table.column("answer_key").to_pylist())
    scenes = np.array(table.column("scene_id").to_pylist())
    several = [k for k in set(keys) if len(set(answers[keys == k])) >= 2 and len(set(scenes[keys == k])) >= 2]
    assert len(several) >= 10
    _check(table, min_questions=8)


@pytest.mark.slow
def test_larger_pool_is_balanced():
    _check(_candidates(160, 1), min_questions=40)
