"""The ask stage's rounds on real household episodes: resumed only where a round would ask the same."""

from __future__ import annotations

import pyarrow.parquet as pq

from eqagen.config import load_config
from eqagen.flows import ask, pipeline, stages

SMALL = ["generation.n_episodes=16", "generation.batch_size=8", "generation.max_steps=80", "runner.kind=inline"]


def batches_in(root, config) -> tuple[pipeline.RunContext, list[str]]:
    ctx = pipeline.make_context(config, root)
    plan = stages.plan_batches(config.generation, config.seed)
    for batch in plan:
        pipeline.run_batch(ctx, batch)
    return ctx, [b.name for b in plan]


def asked_ids(result: ask.AskResult, names: list[str]) -> list[list[str]]:
    """Per round, the ids of its asked candidates."""
    return [
        sorted(i for n in names for i in pq.read_table(d / n / f"{ask.ASKED}.parquet")["question_id"].to_pylist())
        for d in result.directories
    ]


def test_a_round_is_reused_only_where_it_asks_the_same_questions(tmp_path) -> None:
    """A rerun whose balancing wants other questions in round 1 asks them, rather than taking the earlier
    run's round 1 (which asked only what that run wanted): it gives what a fresh run gives."""
    config = load_config("demo", SMALL)
    settings = ask.AskSettings(scenes=2, rounds=2)

    def nothing_held(scenes: list[str]) -> set[str]:
        return set()

    def only_state(files, held):
        return lambda program: program.query.name == "getState"

    def everything(files, held):
        return lambda program: True

    def run(ctx, names, wanted) -> ask.AskResult:
        return ask.run_ask_stage(ctx.store, names, ctx.questions, config.seed, settings, nothing_held, wanted)

    ctx, names = batches_in(tmp_path / "a", config)
    first = run(ctx, names, only_state)
    again = run(ctx, names, everything)
    fresh_ctx, fresh_names = batches_in(tmp_path / "b", config)
    fresh = run(fresh_ctx, fresh_names, everything)
    assert len(asked_ids(first, names)[1]) < len(asked_ids(fresh, fresh_names)[1])  # the rounds differ
    assert asked_ids(again, names) == asked_ids(fresh, fresh_names)
    assert again.stats["rounds"] == [
        {**r, "seconds": a["seconds"]} for r, a in zip(fresh.stats["rounds"], again.stats["rounds"])
    ]
