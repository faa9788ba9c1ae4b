"""The ask stage on real episodes: questions asked only in other scenes of their partition, rounds resumed only
where a round would ask the same, existence questions' targets alternating."""

from __future__ import annotations

from collections import defaultdict

import numpy as np
import pyarrow.parquet as pq
from hypothesis import given
from hypothesis import strategies as st

from eqagen.config import load_config
from eqagen.core import Program
from eqagen.flows import ask, pipeline, stages
from eqagen.outputs.schemas import QUESTIONS_SCHEMA
from eqagen.predicates.asking import required_names, several_name

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
    assert again.report.stats["rounds"] == [
        {**r, "seconds": a["seconds"]} for r, a in zip(fresh.report.stats["rounds"], again.report.stats["rounds"])
    ]


@given(st.lists(st.booleans(), max_size=40))
def test_alternate_takes_each_side_in_turn_keeping_each_sides_order(sides: list[bool]) -> None:
    order = np.arange(len(sides)) * 7 % 41  # distinct, not sorted
    side = np.array(sides, dtype=bool)
    out = ask.alternate(order, side)
    assert sorted(out.tolist()) == sorted(order.tolist())
    on_side = dict(zip(order.tolist(), sides))
    labels = [on_side[x] for x in out.tolist()]
    n = min(sum(sides), len(sides) - sum(sides))
    assert labels[: 2 * n] == [True, False] * n  # in turn while both sides last
    for flag in (True, False):  # each side in its own order
        assert [x for x in out.tolist() if on_side[x] is flag] == [x for x in order.tolist() if on_side[x] is flag]


def test_an_existence_question_is_asked_alike_where_its_kind_was_seen_several_times_and_elsewhere(tmp_path) -> None:
    """On real navigation episodes: the targets of an existence question alternate between episodes that saw
    several things of its kind and the others; other questions' targets keep their random order."""
    config = load_config("openeqa-hm3d", [*SMALL, "generation.n_episodes=24", "generation.params.n_scenes=12"])
    ctx, names = batches_in(tmp_path, config)
    inputs = ask.PlanInputs().complete(ctx.store, names)
    vocab = inputs.vocabulary(lambda scenes: set())
    proposals = inputs.proposals(vocab)
    orders = ask.target_orders(proposals, vocab, config.seed)
    checked = 0
    for proposal, order in zip(proposals, orders):
        if proposal.program.query.name != "existsObject":
            continue
        several = vocab.episodes_with(frozenset({several_name(proposal.program.query.arg)}))[order]
        n = min(int(several.sum()), int((~several).sum()))
        assert several[: 2 * n].tolist() == [True, False] * n, proposal.key
        checked += n > 0
    assert checked >= 3


def test_questions_are_asked_only_in_other_scenes_of_their_partition(tmp_path) -> None:
    """Every asked record is in a scene of the partition (held out or seen) of the scenes that proposed its
    question, and never in one of those scenes: read back from each round's asked candidates."""
    config = load_config("demo", SMALL)
    ctx, names = batches_in(tmp_path, config)

    def every_other_scene(scenes: list[str]) -> set[str]:
        return set(sorted(scenes)[::2])

    told: list[tuple[str, float | None, str]] = []
    result = ask.run_ask_stage(
        ctx.store, names, ctx.questions, config.seed, ask.AskSettings(scenes=3, rounds=2), every_other_scene,
        lambda files, held: lambda program: True, on_round=lambda *line: told.append(line),
    )  # fmt: skip
    # the progress display hears each round as it starts, as its units finish and as it ends, with the counts
    # stats.json records
    rounds = result.report.stats["rounds"]
    assert len(rounds) == 2 and [name for name, _, _ in told] == sorted(name for name, _, _ in told)
    for r, stats in enumerate(rounds):
        heard = [(seconds, detail) for name, seconds, detail in told if name == f"ask round {r + 1}"]
        questions, asks = f"{stats['proposals']:,} questions", stats["asks"]
        assert heard[0] == (None, f"{questions}, 0 of {asks:,} asks")
        assert heard[-2] == (None, f"{questions}, {asks:,} of {asks:,} asks") and len(heard) >= 4
        assert heard[-1][1] == f"{questions}, {asks:,} asks -> {stats['records']:,} answered"
    held = result.held_out_scenes
    columns = ["balance_key", "scene_id", "grounded"]
    proposed: dict[str, set[str]] = defaultdict(set)
    for table in ctx.store.iter_tables(names, "questions", QUESTIONS_SCHEMA, columns):
        for key, scene, grounded in zip(*(table[c].to_pylist() for c in columns)):
            if not grounded:
                proposed[key].add(scene)
    asked = [
        row
        for d in result.directories
        for n in names
        for row in pq.read_table(d / n / f"{ask.ASKED}.parquet", columns=columns).to_pylist()
        if not row["grounded"]
    ]
    one_partition = {k: s for k, s in proposed.items() if len({x in held for x in s}) == 1}
    checked = [r for r in asked if r["balance_key"] in one_partition]
    assert held and len(checked) >= 50, (len(held), len(checked))
    for r in checked:
        scenes = one_partition[r["balance_key"]]
        assert r["scene_id"] not in scenes, r
        assert (r["scene_id"] in held) == (next(iter(scenes)) in held), (r, sorted(scenes))


def test_only_a_world_with_existence_questions_names_what_its_episodes_saw_several_of(tmp_path) -> None:
    """``several:`` names serve existence questions alone: household episodes (no such query) have none,
    navigation episodes have them for the types seen twice or more."""
    for preset, expected in (("demo", False), ("openeqa-hm3d", True)):
        config = load_config(preset, [*SMALL, "generation.n_episodes=8"])
        ctx, names = batches_in(tmp_path / preset, config)
        vocab = ask.PlanInputs().complete(ctx.store, names).vocabulary(lambda scenes: set())
        has_several = any(n.startswith("several:") for episode in vocab.names for n in episode)
        assert has_several is expected, preset


@given(st.lists(st.tuples(st.integers(0, 5), st.integers(0, 3)), max_size=60))
def test_first_per_scene_is_each_scenes_first_element_of_the_random_order(elements) -> None:
    """Against the definition: sort every element by its draw (stable: a tie goes to the earlier position),
    keep each scene's first, in that order. Draws come from a few values, so ties are common."""
    scene = np.array([s for s, _ in elements], dtype=np.int64)
    draw = np.array([d / 4 for _, d in elements])
    order = np.argsort(draw, kind="stable")
    seen: set[int] = set()
    expected = [int(i) for i in order if not (scene[i] in seen or seen.add(scene[i]))]
    assert ask.first_per_scene(scene, draw).tolist() == expected


def test_plan_inputs_folded_batch_by_batch_are_those_read_at_once(tmp_path) -> None:
    """However many batches the driver folded in before the finish, the plan's vocabulary and proposals are
    the same; the vocabulary is the batches' names tables (each episode in batch order, with its batch,
    scene and names, and every name's mask of episodes), and each proposal is its question's first
    ungrounded row in batch order, with every scene that proposed it and the names a target needs
    (recomputed from the batches' tables)."""
    config = load_config("demo", [*SMALL, "generation.n_episodes=24"])
    ctx, names = batches_in(tmp_path, config)
    whole = ask.PlanInputs().complete(ctx.store, names)
    vocab = whole.vocabulary(lambda scenes: set(sorted(scenes)[::2]))
    proposals = whole.proposals(vocab)
    for folded in range(len(names) + 1):
        partial = ask.PlanInputs()
        for name in names[:folded]:
            partial.add(*ask.read_batches_plan_tables([ctx.store.path(name)])[0])
        partial.complete(ctx.store, names)
        again = partial.vocabulary(lambda scenes: set(sorted(scenes)[::2]))
        assert again.episode_ids == vocab.episode_ids and again.names == vocab.names
        assert np.array_equal(again.held_out, vocab.held_out) and np.array_equal(again.batch, vocab.batch)
        assert partial.proposals(again) == proposals
        assert again.having.keys() == vocab.having.keys()
        assert all(np.array_equal(again.having[n], vocab.having[n]) for n in vocab.having)
    tables = ctx.store.iter_tables(names, ask.NAMES, ask.NAMES_SCHEMA)  # each episode's names, batch by batch
    rows = [(i, r) for i, table in enumerate(tables) for r in table.to_pylist()]
    assert vocab.episode_ids == [r["episode_id"] for _, r in rows] and vocab.batch.tolist() == [i for i, _ in rows]
    assert vocab.names == [frozenset(r["names"]) for _, r in rows] and len(rows) == 24
    every_name = {n for _, r in rows for n in r["names"]}
    assert vocab.having.keys() == every_name
    for name, mask in vocab.having.items():
        assert mask.tolist() == [name in r["names"] for _, r in rows], name
    first: dict[str, tuple[str, dict]] = {}
    scenes: dict[str, set[str]] = defaultdict(set)
    scene_of: dict[str, str] = {}
    columns = ["balance_key", "episode_id", "scene_id", "grounded", "program"]
    for table in ctx.store.iter_tables(names, "questions", QUESTIONS_SCHEMA, columns):
        for row in table.to_pylist():
            scene_of[row["episode_id"]] = row["scene_id"]
            if not row["grounded"]:
                first.setdefault(row["balance_key"], (row["episode_id"], row["program"]))
                scenes[row["balance_key"]].add(row["scene_id"])
    code = {scene_of[e]: int(vocab.scene[i]) for i, e in enumerate(vocab.episode_ids) if e in scene_of}
    assert [p.key for p in proposals] == list(first) and len(proposals) >= 20
    for p in proposals:
        episode, program = first[p.key]
        assert vocab.episode_ids[p.episode] == episode and p.program == Program.from_dict(program)
        assert p.scenes == {code[s] for s in scenes[p.key]}
        assert p.need == required_names(p.program, set(vocab.names[p.episode])) and p.spec == program
