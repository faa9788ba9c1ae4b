"""Blockworld questions: answers recomputed by brute force from the worlds' voxels agree 100%.

The brute force builds its own table of things from the world (mobs and chests from the world's lists,
cacti and trees by looping over the voxel array, quadrants and containing structures by comparing
coordinates) and evaluates programs with plain loops. It shares only the episode's visibility and
event steps with the engine (both are checked against loops elsewhere).
"""

import numpy as np
import pytest

from eqagen.core import derive_rng
from eqagen.generators import get_backend
from eqagen.generators.blockworld.embedded import generate_world
from eqagen.generators.blockworld.world import BIOMES
from eqagen.predicates import QuestionConfig, context_for
from eqagen.predicates.asking import ask
from eqagen.predicates.blockworld import CATEGORY_OF
from eqagen.predicates.evaluator import evaluate_raw
from eqagen.predicates.sampler import sample_programs

CONFIG = QuestionConfig(
    questions_per_episode=30,
    any_subject_share=0.4,
    query_mix={"existsKind": 0.3, "count": 0.2, "getMaterial": 0.2, "getBiome": 0.1, "getRegion": 0.2},
    family_mix={"region": 0.5, "property": 0.25, "moment": 0.25},
    n_filters_mix={1: 0.5, 2: 0.5},
)


def _name(state: str) -> str:
    return state.split("[")[0].split(":")[1]


def _brute_things(world) -> dict[str, dict]:
    """native id -> {type, pos, material} found without the feature detector."""
    things = {}
    for m in world.mobs:
        things["-".join(f"{v & 0xFFFFFFFF:08x}" for v in m.uuid)] = {
            "type": m.kind,
            "pos": m.position,
            "material": None,
        }
    for c in world.chests:
        things[",".join(map(str, c.position))] = {
            "type": "chest",
            "pos": tuple(v + 0.5 for v in c.position),
            "material": "wood",
        }
    for s in world.structures:
        centre = tuple((s.bbox[i] + s.bbox[i + 3]) / 2 for i in range(3))
        mat = s.material
        for suffix in ("_fence", "_log"):
            mat = mat.removesuffix(suffix)
        things[s.structure_id] = {"type": s.kind, "pos": centre, "material": mat.replace("_", " "), "bbox": s.bbox}
    sx, sy, sz = world.shape
    names = [_name(s) for s in world.palette.states]
    for x in range(sx):
        for z in range(sz):
            for y in range(1, sy):
                here, below = names[world.blocks[x, y, z]], names[world.blocks[x, y - 1, z]]
                if here == "cactus" and below != "cactus":
                    things[f"{x},{y},{z}"] = {"type": "cactus", "pos": (x + 0.5, y, z + 0.5), "material": "cactus"}
                log = here.endswith(("_log", "_stem")) and not here.startswith("stripped")
                if log and not below.endswith(("_log", "_stem")):
                    top = y
                    while top + 1 < sy and names[world.blocks[x, top + 1, z]] == here:
                        top += 1
                    near = [
                        names[world.blocks[i, j, k]]
                        for i in range(max(x - 1, 0), min(x + 2, sx))
                        for j in range(top, min(top + 2, sy))
                        for k in range(max(z - 1, 0), min(z + 2, sz))
                    ]
                    if any(n.endswith(("_leaves", "_wart_block")) for n in near):
                        kind = "fungus" if here.endswith("_stem") else "tree"
                        wood = here.removesuffix("_log").removesuffix("_stem").replace("_", " ")
                        things[f"{x},{y},{z}"] = {"type": kind, "pos": (x + 0.5, y, z + 0.5), "material": wood}
    for t in things.values():
        x, _, z = t["pos"]
        t["quadrant"] = ("north" if z < sz / 2 else "south") + ("west" if x < sx / 2 else "east")
        t["inside"] = next(
            (
                s.structure_id
                for s in world.structures
                if "bbox" not in t and all(s.bbox[i] <= t["pos"][i] < s.bbox[i + 3] for i in range(3))
            ),
            "",
        )
        t["biome"] = world.biome
    return things


def _window(ep, spec) -> np.ndarray:
    named = sorted((e for e in ep.events if e.entity >= 0), key=lambda e: (e.t, e.kind, e.entity, e.target))
    t = np.arange(ep.n_steps)
    t1 = named[spec.args["event"]].t
    if spec.key == "between":
        return (t >= t1) & (t < named[spec.args["event2"]].t)
    w = 4
    return {
        "before": t < t1,
        "after": t >= t1,
        "right_before": (t >= t1 - w) & (t < t1),
        "right_after": (t >= t1) & (t < t1 + w),
    }[spec.key]


def _brute_answer(ep, world, things, program):
    ids = ep.entities.native_id
    rows = [things[i] for i in ids]
    visible = ep.timeline.field("visible")
    q = program.query
    subject = q.args.get("subject")
    keep = np.ones((ep.n_steps, len(ids)), bool)
    groups = [(-1, None)]
    for f in program.filters:
        if f.family == "region" and f.key == "quadrant":
            keep &= np.array([r["quadrant"] == f.value for r in rows])[None]
        elif f.family == "property":
            keep &= np.array([r["material"] == f.value for r in rows])[None]
        elif f.family == "moment":
            keep &= _window(ep, f)[:, None]
        elif f.key == "in_structure":
            anchors = [i for i, r in enumerate(rows) if r["type"] == f.value and visible[:, i].any()]
            if len(anchors) == 1:
                keep &= np.array([r["inside"] == ids[anchors[0]] for r in rows])[None]
            else:
                groups = [(a, np.array([r["inside"] == ids[a] for r in rows])) for a in anchors]
    out = []
    for anchor, col in groups:
        if q.name == "count" and q.arg == "events":
            value = _count_events(ep, rows, keep if col is None else keep & col[None], q)
            if value is not None:
                out.append((anchor, tuple(value[0]), value[1]))
            continue
        m = keep & visible if col is None else keep & visible & col[None]
        ents = [i for i in range(len(ids)) if m[:, i].any() and (not subject or rows[i]["type"] == subject)]
        value = _query(q, rows, ents, subject)
        if value is not None:
            out.append((anchor, tuple(value[0]), value[1]))
    return sorted(out)


def _query(q, rows, ents, subject):
    if q.name == "existsKind":
        if subject and subject != q.arg:
            return None
        pool = [i for i in ents if CATEGORY_OF.get(rows[i]["type"]) == CATEGORY_OF[q.arg]]
        hits = [i for i in pool if rows[i]["type"] == q.arg]
        return (hits, "yes") if hits else ((pool, "no") if pool else None)
    if q.name == "count":
        return (ents, str(len(ents))) if ents else None
    if q.name == "listObjects":
        return (ents, ", ".join(sorted(rows[i]["type"] for i in ents))) if ents else None
    if q.name == "getMaterial":
        pool = [i for i in ents if rows[i]["material"] and CATEGORY_OF.get(rows[i]["type"]) in ("plant", "structure")]
        return (pool, ", ".join(sorted({rows[i]["material"] for i in pool}))) if pool else None
    if q.name == "getBiome":
        return (ents, ", ".join(sorted({rows[i]["biome"] for i in ents}))) if ents else None
    if q.arg == "quadrant":
        return (ents, ", ".join(sorted({rows[i]["quadrant"] for i in ents}))) if ents else None
    pool = [i for i in ents if "bbox" not in rows[i]]
    kinds = {rows[i]["inside_type"] or "outside" for i in pool}
    return (pool, ", ".join(sorted(kinds))) if pool else None


def _count_events(ep, rows, keep, q):
    subject = q.args.get("subject")
    named = sorted((e for e in ep.events if e.entity >= 0), key=lambda e: (e.t, e.kind, e.entity, e.target))
    hits = [
        e
        for e in named
        if e.kind == q.args["kind"] and keep[e.t, e.entity] and (not subject or rows[e.entity]["type"] == subject)
    ]
    return (sorted({e.entity for e in hits}), str(len(hits))) if hits else None


@pytest.fixture(scope="module")
def episodes():
    b = get_backend("blockworld", "embedded")
    out = []
    for spec in b.plan(len(BIOMES) * 2, 21, {}):
        world = generate_world(spec.params["biome"], spec.params["world_seed"], spec.scene_id)
        out.append((b.run(spec), world))
    return out


def test_things_found_by_brute_force_are_the_episode_entities(episodes):
    for ep, world in episodes:
        things = _brute_things(world)
        assert sorted(things) == sorted(ep.entities.native_id)
        for i, nid in enumerate(ep.entities.native_id):
            attrs = ep.entities.attributes[i]
            assert ep.entities.type[i] == things[nid]["type"]
            assert attrs["quadrant"] == things[nid]["quadrant"]
            assert attrs.get("material") == (things[nid]["material"] or None)


def test_answers_agree_with_brute_force(episodes):
    compared, by_query, exists_answers = 0, {}, set()
    for ep, world in episodes:
        things = _brute_things(world)
        for row in things.values():
            row["inside_type"] = things[row["inside"]]["type"] if row["inside"] else ""
        ctx = context_for(ep)
        accepted, _ = sample_programs(ctx, CONFIG, derive_rng(3, "bw-brute", ep.episode_id))
        for acc in accepted:
            if any(f.family == "position" for f in acc.program.filters):
                continue
            engine = sorted((g.anchor, tuple(g.entities.tolist()), g.value) for g in evaluate_raw(ctx, acc.program))
            assert engine == _brute_answer(ep, world, things, acc.program), acc.program.signature()
            compared += 1
            by_query[acc.program.query.name] = by_query.get(acc.program.query.name, 0) + 1
            if acc.program.query.name == "existsKind":
                exists_answers.update(v for _, _, v in engine)
                # its kind is what it looks for among the things: as the subject, no world could say "no"
                assert "subject" not in acc.program.query.args, acc.program.signature()
    assert compared >= 100
    # getBiome is never asked: a world has one biome, so no filter changes its answer (validity rules)
    assert set(by_query) == {"existsKind", "count", "getMaterial", "getRegion", "listObjects"}
    # an existence question is built around a sighting of its kind (then asked in other worlds: below)
    assert exists_answers == {"yes"}


def test_existence_questions_asked_in_other_worlds_get_both_answers_as_brute_force_says(episodes):
    """The ask stage's premise for existence questions: asked in other worlds, the same question is answered
    ``yes`` in some and ``no`` in others, each answer as the brute force finds it."""
    contexts = [(ep, world, context_for(ep), _brute_things(world)) for ep, world in episodes]
    for *_, things in contexts:
        for row in things.values():
            row["inside_type"] = things[row["inside"]]["type"] if row["inside"] else ""
    answers: dict[str, int] = {}
    for ep, _, ctx, _ in contexts:
        accepted, _ = sample_programs(ctx, CONFIG, derive_rng(3, "bw-brute", ep.episode_id))
        existence = [
            a.program
            for a in accepted
            if a.program.query.name == "existsKind" and not any(f.family == "position" for f in a.program.filters)
        ]
        for question in existence[:3]:
            for other, world, other_ctx, things in contexts:
                if other is ep:
                    continue
                asked = ask(other_ctx, question, CONFIG)
                if isinstance(asked, str):
                    continue
                program, answered = asked
                engine = sorted((g.anchor, tuple(g.entities.tolist()), g.value) for g in answered.groups)
                assert engine == _brute_answer(other, world, things, program), program.signature()
                for _, _, value in engine:
                    answers[value] = answers.get(value, 0) + 1
    assert answers.get("yes", 0) >= 5 and answers.get("no", 0) >= 5, answers
