"""Does each question say what its program computes, and can a blind model exploit the splits? From the shards.

    python benchmarks/check_semantics.py OUT_DIR [--examples N]

Reads a dataset through ``eqagen.outputs.readers`` only and prints each measured count:

- situated relations read literally, at every step their words name: each position filter replaced by a
  reading written here from the positions alone (at a step, both seen, within the family's radius, offset
  in the agent's frame beyond the margin; "nearer to you than": horizontally nearer to the agent; "to your
  left": left of the line of sight), ANDed with the other filters, so with a moment the relation is read at
  the steps the moment admits; the answers whose objects change, the objects left out; situations ("when a
  chair was in front of the table") read the same way, as the steps at which an object of the named type
  stood in the relation;
- "came into view": the objects that came into view (not seen at the step before) where the question admits;
- above/under, read from the boxes (the extent table's rows, the rule restated here from docs/questions.md):
  each answer object found at a step where it and the anchor stood at their printed coordinates, whether the
  boxes hold the relation there, those within 0.15 m of the anchor's centre height (and also 0.3 m or more
  to the side), the issue's examples (counter parts under a faucet, boxes overlapping in height, a sink
  basin and its countertop, furniture and its drawer, one unit), and twenty random answers with both boxes;
- twin pairs (records of the same episode and program) in different splits;
- the coordinate-memorising blind model (``eqagen.curation.criteria``) against chance, overall and on
  grounded test records, with a one-sided binomial test;
- the mix: filters per question, grounded share, count-of-events questions, balance groups with exactly two
  answers.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections import Counter, defaultdict
from functools import partial
from pathlib import Path

import numpy as np
from scipy.stats import binomtest

from eqagen.core import FilterSpec, QARecord
from eqagen.curation.criteria import answer_contents, blind_setup, coordinate_memory_answers
from eqagen.outputs.dataset import read_shards
from eqagen.outputs.readers import as_dataset, read_episodes, read_questions
from eqagen.outputs.schemas import QUESTIONS_SCHEMA
from eqagen.predicates.context import EpisodeContext
from eqagen.predicates.evaluator import evaluate_raw
from eqagen.predicates.filters import param
from eqagen.predicates.household import object_extent
from eqagen.predicates.registry import Anchored, selection

NEARER = re.compile(r"(nearer to you than|farther from you than)")


# -- literal readings, from the positions alone -----------------------------------------------------------
def literal_object_relation(ctx: EpisodeContext, key: str, anchor: int, by_distance: bool) -> np.ndarray:
    """``[T, N]``: at step t both seen, and e to the left / right / in front of / behind the anchor as the
    agent saw them at t (``by_distance``: horizontally nearer to / farther from the agent than the anchor)."""
    ego = ctx.ego  # [T, N, 3]: x right, z forward
    off = ego - ego[:, anchor : anchor + 1, :]
    near = off[..., 0] ** 2 + off[..., 2] ** 2 <= param(ctx, "near_radius") ** 2
    margin = param(ctx, "side_margin")
    if by_distance:
        dist = np.hypot(ego[..., 0], ego[..., 2])
        gap = dist - dist[:, anchor : anchor + 1]
        side = {"front": -gap, "behind": gap}[key]
    else:
        side = {"left": -off[..., 0], "right": off[..., 0], "front": -off[..., 2], "behind": off[..., 2]}[key]
    both = ctx.data & ctx.data[:, anchor : anchor + 1]
    out = both & near & (side > margin)
    out[:, anchor] = False
    return out


def literal_agent_relation(ctx: EpisodeContext, key: str) -> np.ndarray:
    x, z = ctx.ego[..., 0], ctx.ego[..., 2]
    s = param(ctx, "agent_side")
    return ctx.data & {"left": x < -s, "right": x > s, "front": (np.abs(x) <= s) & (z > 0)}[key]


def literal_select(ctx: EpisodeContext, by_distance: bool, spec: FilterSpec):
    """A filter's selection, position and situation filters read literally."""
    if spec.family not in ("position", "situation"):
        return selection(ctx, spec)
    if spec.value == "you":
        return literal_situation(ctx, spec, literal_agent_relation(ctx, spec.key)[None])[0]
    anchors = ctx.instances(spec.value)
    masks = np.stack([literal_object_relation(ctx, spec.key, int(a), by_distance) for a in anchors.tolist()])
    masks = masks.reshape(len(anchors), ctx.T, ctx.N)
    return Anchored(anchors, literal_situation(ctx, spec, masks))


def literal_situation(ctx: EpisodeContext, spec: FilterSpec, relation: np.ndarray) -> np.ndarray:
    """``[G, T, N]``: a position filter's relation as it is; a situation's ("when a chair was left of the table")
    the steps at which some object of its figure's type stood in that relation, with everything seen then."""
    if spec.family != "situation":
        return relation
    steps = (relation & ctx.of_type(spec.args["figure"])[None, None, :]).any(axis=2)
    return np.repeat(steps[:, :, None], ctx.N, axis=2)


def answered(ctx: EpisodeContext, groups, record: QARecord) -> dict[tuple, set[str]]:
    """Raw groups as {anchor position (None): instance ids}, the grounded record's anchor only."""
    ids = ctx.episode.entities.instance_id
    out = {
        (ctx.anchor_position(g.anchor) if g.anchor >= 0 else None): {ids[e] for e in g.entities.tolist()}
        for g in groups
    }
    if record.grounded:
        anchor = record.structured_answer[0].anchor
        out = {anchor: out.get(anchor, set())}
    return out


def stored(record: QARecord) -> dict[tuple, set[str]]:
    return {g.anchor: {i.entity for i in g.result} for g in record.structured_answer}


def came_into_view(ctx: EpisodeContext) -> np.ndarray:
    """``[T, N]``: seen at t and not at t - 1 (everything seen at the first step came into view then)."""
    new = ctx.data.copy()
    new[1:] &= ~ctx.data[:-1]
    return new


# -- per record -------------------------------------------------------------------------------------------
class Tally:
    def __init__(self) -> None:
        self.n = Counter()
        self.examples: dict[str, list[str]] = defaultdict(list)

    def add(self, name: str, k: int = 1, example: str | None = None, limit: int = 3) -> None:
        self.n[name] += k
        if example and len(self.examples[name]) < limit:
            self.examples[name].append(example)


def check_positions(ctx: EpisodeContext, r: QARecord, tally: Tally) -> None:
    families = {f.family for f in r.program.filters}
    if families.isdisjoint(("position", "situation")):
        return
    if "situation" in families:
        check_situations(ctx, r, tally)
    if "position" not in families:
        return
    moment = "moment" in families
    by_distance = bool(NEARER.search(r.question))
    literal = answered(ctx, evaluate_raw(ctx, r.program, partial(literal_select, ctx, by_distance)), r)
    have = stored(r)
    missing = sum(len(literal.get(a, set()) - have.get(a, set())) for a in literal)
    extra = sum(len(have.get(a, set()) - literal.get(a, set())) for a in have)
    scope = "nearer/farther wording" if by_distance else ("with a moment" if moment else "without a moment")
    tally.add(f"position questions {scope}")
    tally.add(f"position objects in the literal answer {scope}", sum(len(v) for v in literal.values()))
    if literal != have:
        tally.add(f"position answers that change when read literally {scope}", 1, f"{r.question} -- {r.answer}")
        tally.add(f"position objects left out {scope}", missing)
        tally.add(f"position objects not in the literal answer {scope}", extra)


def check_situations(ctx: EpisodeContext, r: QARecord, tally: Tally) -> None:
    """A situational question read literally (every position and situation filter from the positions alone):
    the answers whose objects change."""
    literal = answered(ctx, evaluate_raw(ctx, r.program, partial(literal_select, ctx, False)), r)
    tally.add("situation questions")
    tally.add("situation answer objects in the literal answer", sum(len(v) for v in literal.values()))
    if literal != stored(r):
        tally.add("situation answers that change when read literally", 1, f"{r.question} -- {r.answer}")


def check_came_into_view(ctx: EpisodeContext, r: QARecord, tally: Tally) -> None:
    if "came into view" not in r.question:
        return
    moment = any(f.family == "moment" for f in r.program.filters)
    scope = "with a moment" if moment else "without a moment"
    tally.add(f"came-into-view questions {scope}")
    mask = ctx.data.copy()
    for spec in r.program.filters:
        sel = selection(ctx, spec)
        if isinstance(sel, Anchored):
            if len(sel) != 1:
                return  # several anchor groups: compared where the program has one group only
            sel = sel.masks[0]
        mask &= sel
    if r.program.query.args.get("subject"):
        mask &= ctx.of_type(r.program.query.args["subject"])[None, :]
    literal = int((mask & came_into_view(ctx)).any(axis=0).sum())
    if len(r.structured_answer) == 1 and r.structured_answer[0].value != str(literal):
        tally.add(f"came-into-view answers that change when read literally {scope}", 1, f"{r.question} -- {r.answer}")


# -- above/under, read from the boxes (docs/questions.md, "Above and under") ------------------------------
VERTICAL = re.compile(r"\b(above|under) the object\b")
MARGIN, MAX_GAP, HOST_REACH, HOST_SLACK = 0.05, 1.0, 0.25, 0.5
EPS = 1e-6  # m: positions on the 0.25 m grid put footprints exactly at the margin; float sums differ below this
PART_OF_COUNTER = {"StoveBurner", "StoveKnob", "CoffeeMachine", "Pot", "Pan", "SinkBasin", "Sink", "CounterTop"}
FURNITURE_WITH_DRAWERS = {"Desk", "SideTable", "Dresser", "CounterTop"}


def box(type_name: str) -> tuple[float, float, float, str]:
    """(half footprint, bottom, top relative to the position, mount): the world family's ``object_extent``."""
    width, bottom, top, mount = object_extent(type_name) or (0.0, 0.0, 0.0, "loose")
    return width / 2, bottom, top, mount


def unit_of(ctx: EpisodeContext, t: int, e: int) -> int:
    """Up e's receptacle chain at t, then to the floor piece a fixed part stands in or on (at step 0)."""
    for _ in range(8):
        if ctx.parent[t, e] < 0:
            break
        e = int(ctx.parent[t, e])
    return host_of(ctx, e)


def enclosed(ctx: EpisodeContext, e: int) -> bool:
    """A fixed part whose box lies within its host's height at step 0 (a cabinet under a counter)."""
    h = host_of(ctx, e)
    (_, b, top, _), (_, hb, ht, _) = box(str(ctx.types[e])), box(str(ctx.types[h]))
    y, hy = ctx.position[0, e, 1], ctx.position[0, h, 1]
    return h != e and y + b >= hy + hb - EPS and y + top <= hy + ht + EPS


def host_of(ctx: EpisodeContext, e: int) -> int:
    """The floor piece a fixed part stands in or on at step 0 (itself for the others, or where none does)."""
    _, bottom, top, mount = box(str(ctx.types[e]))
    if mount != "fixed":
        return e
    x, y, z = ctx.position[0, e]
    best, best_d = e, np.inf
    for f in range(ctx.N):
        fh, fb, ft, fm = box(str(ctx.types[f]))
        fx, fy, fz = ctx.position[0, f]
        d = float(np.hypot(x - fx, z - fz))
        inside = fm == "floor" and abs(x - fx) <= fh + HOST_SLACK and abs(z - fz) <= fh + HOST_SLACK
        if inside and y + bottom <= fy + ft + HOST_REACH and y + top >= fy + fb and d < best_d:
            best, best_d = f, d
    return best


def box_relation(ctx: EpisodeContext, key: str, t: int, e: int, a: int) -> dict[str, float | bool]:
    """How e's box stands to a's at t: footprints apart (m, <= 0 where they overlap), open air between (m), one
    unit, and whether the relation holds."""
    (he, be, te, _), (ha, ba, ta, _) = box(str(ctx.types[e])), box(str(ctx.types[a]))
    pe, pa = ctx.position[t, e], ctx.position[t, a]
    apart = max(abs(pe[0] - pa[0]), abs(pe[2] - pa[2])) - he - ha
    gap = (pe[1] + be) - (pa[1] + ta) if key == "above" else (pa[1] + ba) - (pe[1] + te)
    one_unit = unit_of(ctx, t, e) == unit_of(ctx, t, a)
    inside = enclosed(ctx, e) or enclosed(ctx, a)
    holds = apart <= MARGIN + EPS and EPS < gap <= MAX_GAP + EPS and not one_unit and not inside
    return {"apart": float(apart), "gap": float(gap), "one_unit": one_unit, "enclosed": inside, "holds": holds}


def vertical_groups(ctx: EpisodeContext, r: QARecord):
    """(key, anchor type, anchor entity, group) for each group of an above/under filter, the anchor found where
    the answer prints it (or the type's only seen instance)."""
    spec = next((f for f in r.program.filters if f.family == "location" and f.key in ("above", "under")), None)
    if spec is None:
        return
    anchors = ctx.instances(spec.value)
    for g in r.structured_answer:
        if g.anchor is None:
            if len(anchors) == 1:
                yield spec.key, spec.value, int(anchors[0]), g
            continue
        hit = [int(a) for a in anchors.tolist() if ctx.anchor_position(int(a)) == tuple(g.anchor)]
        if hit:
            yield spec.key, spec.value, hit[0], g


def printed_steps(ctx: EpisodeContext, e: int, a: int, item, anchor) -> list[int]:
    """The steps at which e stood at the item's printed position and a at the anchor's (where printed)."""
    at_e = (np.round(ctx.position[:, e], 2) == np.asarray(item.position)).all(axis=1)
    at_a = (np.round(ctx.position[:, a], 2) == np.asarray(anchor)).all(axis=1) if anchor is not None else True
    return np.flatnonzero(at_e & at_a).tolist()


def check_vertical(ctx: EpisodeContext, r: QARecord, tally: Tally, sample: list) -> None:
    ids = list(ctx.episode.entities.instance_id)
    for key, anchor_type, a, g in vertical_groups(ctx, r):
        for item in g.result:
            e = ids.index(item.entity)
            steps = printed_steps(ctx, e, a, item, g.anchor)
            tally.add("above/under answer objects")
            if not steps:
                tally.add("  printed where the object and the anchor never stood at one step", 1, r.answer)
                continue
            held = [t for t in steps if box_relation(ctx, key, t, e, a)["holds"]]
            if not held:
                tally.add("  printed at steps where the boxes do not hold the relation", 1, f"{r.question} -- {item}")
            t = (held or steps)[-1]
            rel = box_relation(ctx, key, t, e, a)
            centre_e = ctx.position[t, e, 1] + sum(box(item.type)[1:3]) / 2
            centre_a = ctx.position[t, a, 1] + sum(box(anchor_type)[1:3]) / 2
            side = float(np.hypot(*(ctx.position[t, e, [0, 2]] - ctx.position[t, a, [0, 2]])))
            if abs(centre_e - centre_a) < 0.15:
                tally.add("  within 0.15 m of the anchor's centre height")
                if side >= 0.3:
                    tally.add("  ... and 0.3 m or more to the side (beside it)")
            issue_cases(key, anchor_type, item.type, rel, r, tally)
            sample.append(described(ctx, r, key, t, e, a))


def issue_cases(key: str, anchor_type: str, item_type: str, rel: dict, r: QARecord, tally: Tally) -> None:
    """The issue's examples: the counter's own parts under its faucet, boxes overlapping in height (a plant
    beside a burner), a sink basin under its countertop, furniture above its own drawer, what rests in or on the
    anchor or belongs to the same furniture."""
    example = f"{r.question} -- {r.answer}"
    if anchor_type == "Faucet" and key == "under" and item_type in PART_OF_COUNTER:
        tally.add("  counter parts under a faucet", 1, example)
    if rel["gap"] <= 0:
        tally.add("  boxes overlapping in height (beside, not above/under)", 1, example)
    if {anchor_type, item_type} == {"SinkBasin", "CounterTop"} and rel["gap"] <= MAX_GAP:
        tally.add("  a sink basin and its countertop", 1, example)
    if "Drawer" in (anchor_type, item_type) and {anchor_type, item_type} & FURNITURE_WITH_DRAWERS:
        tally.add("  furniture and a drawer, one above the other", 1, example)
    if rel["one_unit"]:
        tally.add("  one unit (resting in or on, part of the same furniture)", 1, example)
    if rel["enclosed"]:
        tally.add("  a part inside its furniture (through its top or underside)", 1, example)


def described(ctx: EpisodeContext, r: QARecord, key: str, t: int, e: int, a: int) -> str:
    """An above/under answer object with both boxes at step t, for a reader to judge."""
    lines = [f"- {r.question}", f"  {r.answer}"]
    for name, k in (("object", e), ("anchor", a)):
        half, bottom, top, mount = box(str(ctx.types[k]))
        x, y, z = ctx.position[t, k]
        where = f"x {x - half:.2f}..{x + half:.2f}, z {z - half:.2f}..{z + half:.2f}, y {y + bottom:.2f}..{y + top:.2f}"
        lines.append(f"  {name} {ctx.episode.entities.instance_id[k]} ({mount}) at step {t}: {where}")
    rel = box_relation(ctx, key, t, e, a)
    lines.append(f"  {key}: open air {rel['gap']:.2f} m, footprints {max(rel['apart'], 0):.2f} m apart")
    return "\n".join(lines)


def print_vertical_sample(sample: list[str], n: int, seed: int) -> None:
    """``n`` random above/under answer objects with both boxes."""
    rng = np.random.default_rng(seed)
    print(f"\n{n} random above/under answer objects (boxes in the episode frame, metres):")
    for i in sorted(rng.choice(len(sample), size=min(n, len(sample)), replace=False).tolist()):
        print(sample[i])


ALWAYS_PRINTED = (
    *(
        f"position answers that change when read literally {scope}"
        for scope in ("with a moment", "without a moment", "nearer/farther wording")
    ),
    *(f"position objects left out {scope}" for scope in ("with a moment", "without a moment")),
    *(f"came-into-view answers that change when read literally {s}" for s in ("with a moment", "without a moment")),
    "situation answers that change when read literally",
    "twin pairs across splits",
    "answers repeating a clause word for word",
    "texts matching 'tissue box in the box'",
    "texts matching 'under a faucet'",
    "  counter parts under a faucet",
    "  boxes overlapping in height (beside, not above/under)",
    "  a sink basin and its countertop",
    "  furniture and a drawer, one above the other",
    "  one unit (resting in or on, part of the same furniture)",
    "  a part inside its furniture (through its top or underside)",
    "  printed at steps where the boxes do not hold the relation",
    "  printed where the object and the anchor never stood at one step",
    "  of them train-test",
)
ODD_ANSWERS = {
    "under a faucet": re.compile(r"under the faucet", re.I),
    "tissue box in the box": re.compile(r"tissue box was in the box", re.I),
    "a thing in or on a thing of its own name": re.compile(
        r"\bthe ([\w ]+) (?:was|were) (?:in|on) the \1(?=[.,;]| and)", re.I
    ),
}


def check_odd(r: QARecord, tally: Tally) -> None:
    for name, pattern in ODD_ANSWERS.items():
        if pattern.search(r.question) or pattern.search(r.answer):
            tally.add(f"texts matching '{name}'", 1, f"{r.question} -- {r.answer}")
    clauses = r.answer.rstrip(".").split("; ")
    if len({c.lower() for c in clauses}) < len(clauses):  # "the drawer was brown; the drawer was brown"
        tally.add("answers repeating a clause word for word", 1, r.answer)
    parts = [p.split(": ", 1)[-1] for p in clauses]
    if len(parts) > 1 and len(set(parts)) < len(parts) and r.query_type not in ("count", "listObjects"):
        tally.add("answers giving two anchors' groups the same sentence (each labelled)", 1, r.answer)


# -- the dataset ------------------------------------------------------------------------------------------
def twins_across_splits(records: list[QARecord], tally: Tally) -> None:
    by_program: dict[tuple, set[str]] = defaultdict(set)
    for r in records:
        by_program[r.episode_id, r.program.signature()].add(r.split)
    for splits in by_program.values():
        if len(splits) > 1:
            tally.add("twin pairs across splits")
            if splits == {"train", "test"}:
                tally.add("  of them train-test")


def mix(records: list[QARecord], table, tally: Tally) -> None:
    n = len(records)
    filters = Counter(len(r.program.filters) for r in records)
    for k in sorted(filters):
        tally.add(f"questions with {k} filters (share x1000)", round(1000 * filters[k] / n))
    tally.add("grounded share (x1000)", round(1000 * sum(r.grounded for r in records) / n))
    tally.add(
        "count-of-events questions", sum(r.query_type == "count" and r.program.query.arg == "events" for r in records)
    )
    contents = answer_contents(table)
    per_key: dict[str, set[str]] = defaultdict(set)
    for key, content in zip(table["balance_key"].to_pylist(), contents):
        per_key[key].add(content)
    two = sum(len(v) == 2 for v in per_key.values())
    tally.add("balance groups", len(per_key))
    tally.add("balance groups with exactly two answers", two)


def memoriser(table, tally: Tally) -> None:
    contents = answer_contents(table)
    setup = blind_setup(table, contents)
    answers = coordinate_memory_answers(table, setup)
    hits = np.array([a == t for a, t in zip(answers, setup.truth)])
    grounded = np.array(table["grounded"].to_pylist(), dtype=bool)[setup.test]
    for scope, mask in (("overall", np.ones(len(hits), bool)), ("grounded", grounded)):
        n, k, chance = int(mask.sum()), int(hits[mask].sum()), float(setup.chance[mask].mean())
        p = binomtest(k, n, chance, alternative="greater").pvalue if n else 1.0
        rate = k / max(n, 1)
        print(f"coordinate-memorising blind model, {scope}: {k}/{n} = {rate:.4f}, chance {chance:.4f}, p = {p:.3g}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out_dir", type=Path)
    parser.add_argument("--examples", type=int, default=2)
    parser.add_argument("--vertical-sample", type=int, default=20, help="above/under answers to print with boxes")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    dataset = as_dataset(args.out_dir)
    table = read_shards(dataset.shards("questions"), QUESTIONS_SCHEMA)
    records = read_questions(dataset)
    episodes = read_episodes(dataset)
    tally = Tally()
    for name in ALWAYS_PRINTED:  # the issue's measures, printed even where none was found
        tally.n.setdefault(name, 0)
    sample: list[str] = []
    by_episode: dict[str, list[QARecord]] = defaultdict(list)
    for r in records:
        by_episode[r.episode_id].append(r)
    for episode_id, rs in by_episode.items():
        ctx = EpisodeContext(episodes[episode_id])
        for r in rs:
            check_positions(ctx, r, tally)
            check_came_into_view(ctx, r, tally)
            check_vertical(ctx, r, tally, sample)
            check_odd(r, tally)
    twins_across_splits(records, tally)
    mix(records, table, tally)
    print(f"{len(records)} questions in {args.out_dir}")
    for name in sorted(tally.n):
        print(f"{tally.n[name]:>8}  {name}")
        for example in tally.examples.get(name, [])[: args.examples]:
            print(f"          e.g. {example}")
    memoriser(table, tally)
    if sample and args.vertical_sample:
        print_vertical_sample(sample, args.vertical_sample, args.seed)
    return 0


if __name__ == "__main__":
    sys.exit(main())
