"""A deliberately plain reference evaluator: nested Python loops over steps and entities.

Written separately from eqagen.predicates (it reads only the episode and the program, and re-states
each predicate's rule one (t, entity) at a time), so that agreement with the vectorised evaluator means
something. Thresholds are the household defaults of eqagen/predicates/filters.py, restated here.
"""

from __future__ import annotations

import math

from eqagen.core import Episode, Program
from eqagen.predicates.household import object_extent

ABOVE_MARGIN, ABOVE_MAX_GAP, HOST_REACH, HOST_SLACK = 0.05, 1.0, 0.25, 0.5
SIDE_MARGIN, NEAR_RADIUS, AGENT_SIDE = 0.15, 2.0, 0.3
MOMENT_WINDOW = 3
STATE_CAPABILITY = {"open": "openable", "toggled": "toggleable", "broken": "breakable", "sliced": "sliceable",
                    "filled": "fillable"}  # fmt: skip
STATE_WORDS = {"open": ("open", "closed"), "toggled": ("on", "off"), "broken": ("broken", "intact"),
               "sliced": ("sliced", "whole"), "filled": ("filled with liquid", "empty")}  # fmt: skip


class Plain:
    """The episode as nested Python lists."""

    def __init__(self, ep: Episode):
        tl = ep.timeline
        self.ep = ep
        self.T, self.N = tl.n_steps, tl.n_entities
        vis = tl.field("visible").tolist()
        ex = tl.field("exists").tolist() if "exists" in tl.initial else [[True] * self.N] * self.T
        self.data = [[bool(vis[t][e]) and bool(ex[t][e]) for e in range(self.N)] for t in range(self.T)]
        self.pos = [[[float(v) for v in p] for p in row] for row in tl.field("position").tolist()]
        self.parent = tl.field("parent").tolist()
        self.flags = {f: tl.field(f).tolist() for f in tl.flags}
        self.types = list(ep.entities.type)
        self.attrs = ep.entities.attributes
        self.caps = ep.entities.capabilities
        self.pose = [[float(v) for v in p] for p in ep.steps.pose.tolist()]
        self.observed = [any(self.data[t][e] for t in range(self.T)) for e in range(self.N)]
        self.events = sorted((e for e in ep.events if e.entity >= 0), key=lambda e: (e.t, e.kind, e.entity, e.target))
        self.box = [box_of(t) if ep.family == "household" else (0.0, 0.0, 0.0, "loose") for t in self.types]
        self.host = [self.host_of(e) for e in range(self.N)]

    def host_of(self, e: int) -> int:
        """The nearest floor piece a fixed part stands in or on at step 0 (itself if none, or not a part)."""
        _, bottom, top, mount = self.box[e]
        if mount != "fixed" or not self.T:
            return e
        best, best_d = e, math.inf
        x, y, z = self.pos[0][e]
        for f in range(self.N):
            fh, fb, ft, fm = self.box[f]
            fx, fy, fz = self.pos[0][f]
            if fm != "floor" or abs(x - fx) > fh + HOST_SLACK or abs(z - fz) > fh + HOST_SLACK:
                continue
            if y + bottom <= fy + ft + HOST_REACH and y + top >= fy + fb and math.hypot(x - fx, z - fz) < best_d:
                best, best_d = f, math.hypot(x - fx, z - fz)
        return best

    def named_here(self, t: int, a: int) -> bool:
        """Whether the anchor stands at step t where a question names it: where the agent first saw it."""
        first = next((s for s in range(self.T) if self.data[s][a]), 0)
        return self.pos[t][a] == self.pos[first][a]

    def enclosed(self, e: int) -> bool:
        """A fixed part whose box lies within its host's height (at step 0)."""
        h = self.host[e]
        if h == e:
            return False
        _, b, top, _ = self.box[e]
        _, hb, ht, _ = self.box[h]
        return self.pos[0][e][1] + b >= self.pos[0][h][1] + hb and self.pos[0][e][1] + top <= self.pos[0][h][1] + ht

    def unit(self, t: int, e: int) -> int:
        r = e
        for _ in range(8):
            if self.parent[t][r] < 0:
                break
            r = self.parent[t][r]
        return self.host[r]

    def flag(self, name: str, t: int, e: int) -> bool:
        return bool(self.flags[name][t][e]) if name in self.flags else False

    def ego(self, t: int, e: int) -> tuple[float, float, float]:
        ax, ay, az, yaw = self.pose[t][0], self.pose[t][1], self.pose[t][2], self.pose[t][3]
        dx, dy, dz = self.pos[t][e][0] - ax, self.pos[t][e][1] - ay, self.pos[t][e][2] - az
        r = yaw * (math.pi / 180.0)
        c, s = math.cos(r), math.sin(r)
        return (dx * c - dz * s, dy, dz * c + dx * s)

    def instances(self, type_name: str) -> list[int]:
        return [e for e in range(self.N) if self.types[e] == type_name and self.observed[e]]


def holds(p: Plain, f, t: int, e: int, a: int) -> bool:
    """Whether filter ``f`` keeps entity ``e`` at step ``t`` (for anchor ``a``, where it names one)."""
    fam, key, value = f.family, f.key, f.value
    if fam == "property":
        return p.attrs[e].get(key) == value
    if fam == "state":
        if STATE_CAPABILITY[key] not in p.caps[e]:
            return False
        return p.flag(key, t, e) == (value == "true")
    if fam == "location":
        return location_holds(p, f, t, e, a)
    if fam == "position":
        return position_holds(p, f, t, e, a)
    if fam == "moment":
        return moment_holds(p, f, t)
    if fam == "situation":
        return situation_holds(p, f, t, a)
    raise ValueError(fam)


def location_holds(p: Plain, f, t: int, e: int, a: int) -> bool:
    if f.key in ("on", "inside"):
        return p.parent[t][e] == a
    if f.key in ("on_same", "inside_same"):
        r = p.parent[t][a]
        if r < 0 or not p.data[t][a] or p.types[r] != f.args["receptacle"] or e == a:
            return False
        return p.parent[t][e] == r
    if p.unit(t, e) == p.unit(t, a) or not p.named_here(t, a) or p.enclosed(e) or p.enclosed(a):
        return False
    (xe, ye, ze), (xa, ya, za) = p.pos[t][e], p.pos[t][a]
    he, be, te, _ = p.box[e]
    ha, ba, ta, _ = p.box[a]
    reach = he + ha + ABOVE_MARGIN
    if abs(xe - xa) > reach or abs(ze - za) > reach:
        return False
    gap = (ye + be) - (ya + ta) if f.key == "above" else (ya + ba) - (ye + te)
    return 0 < gap <= ABOVE_MAX_GAP


def box_of(object_type: str) -> tuple[float, float, float, str]:
    """(half footprint, bottom, top relative to the position, mount): the world family's ``object_extent``."""
    width, bottom, top, mount = object_extent(object_type) or (0.0, 0.0, 0.0, "loose")
    return width / 2, bottom, top, mount


def position_holds(p: Plain, f, t: int, e: int, a: int) -> bool:
    """The relation at step t (whether it held at the other steps the question admits is a validity rule)."""
    return relation_at_step(p, f, t, e, a)


def relation_at_step(p: Plain, f, t: int, e: int, a: int) -> bool:
    if not p.data[t][e]:
        return False
    x, _, z = p.ego(t, e)
    if f.value == "you":
        if f.key == "left":
            return x < -AGENT_SIDE
        if f.key == "right":
            return x > AGENT_SIDE
        return abs(x) <= AGENT_SIDE and z > 0
    if e == a or not p.data[t][a]:
        return False
    ax, _, az = p.ego(t, a)
    if (x - ax) ** 2 + (z - az) ** 2 > NEAR_RADIUS**2:
        return False
    offset = {"left": ax - x, "right": x - ax, "front": az - z, "behind": z - az}[f.key]
    return offset > SIDE_MARGIN


def situation_holds(p: Plain, f, t: int, a: int) -> bool:
    """At step t the agent saw some object of type ``args["figure"]`` in the relation to ``a`` (or to you):
    every entity is kept at such a step, as in a moment window."""
    return any(p.types[e2] == f.args["figure"] and relation_at_step(p, f, t, e2, a) for e2 in range(p.N))


def moment_holds(p: Plain, f, t: int) -> bool:
    t1 = p.events[f.args["event"]].t
    if f.key == "before":
        return t < t1
    if f.key == "after":
        return t >= t1
    if f.key == "right_before":
        return t1 - MOMENT_WINDOW <= t < t1
    if f.key == "right_after":
        return t1 <= t < t1 + MOMENT_WINDOW
    return t1 <= t < p.events[f.args["event2"]].t


def anchored(f) -> bool:
    return f.family == "location" or (f.family in ("position", "situation") and f.value != "you")


def applies(p: Plain, q, e: int) -> bool:
    if q.name == "getState":
        return STATE_CAPABILITY[q.arg] in p.caps[e]
    if q.name == "getProperty":
        return p.attrs[e].get(q.arg) is not None
    return True


def groups_of(p: Plain, program: Program) -> list[tuple[int, int | None]]:
    """(filter position, anchor) per group: the instances of the one ambiguous filter, else one group."""
    for i, f in enumerate(program.filters):
        if anchored(f) and len(p.instances(f.value)) >= 2:
            return [(i, a) for a in p.instances(f.value)]
    return [(-1, None)]


def selected(p: Plain, program: Program, where: int, anchor: int | None, t: int, e: int) -> bool:
    q = program.query
    subject = q.args.get("subject")
    if subject and p.types[e] != subject:
        return False
    if not applies(p, q, e):
        return False
    if q.name != "count" and not p.data[t][e]:
        return False
    for i, f in enumerate(program.filters):
        if anchored(f):
            anchors = [anchor] if i == where else p.instances(f.value)
            if not any(holds(p, f, t, e, a) for a in anchors):
                return False
        elif not holds(p, f, t, e, -1):
            return False
    return True


def answer(p: Plain, q, cells: dict[int, list[int]]) -> tuple[list[int], str, list[int]] | None:
    """(entities, value, reported step per entity) of one group; ``cells`` maps entity -> selected steps."""
    if q.name == "count" and q.arg == "events":
        hits = [ev for ev in p.events if ev.kind == q.args["kind"] and ev.t in cells.get(ev.entity, [])]
        if not hits:
            return None
        ents = sorted({ev.entity for ev in hits})
        return ents, str(len(hits)), [max(ev.t for ev in hits if ev.entity == e) for e in ents]
    if q.name == "count":
        seen = {e: [t for t in ts if p.data[t][e]] for e, ts in cells.items()}
        ents = sorted(e for e, ts in seen.items() if ts)
        return (ents, str(len(ents)), [max(seen[e]) for e in ents]) if ents else None
    ents = sorted(e for e, ts in cells.items() if ts)
    if not ents:
        return None
    last = [max(cells[e]) for e in ents]
    if q.name == "listObjects":
        return ents, ", ".join(sorted(p.types[e] for e in ents)), last
    if q.name == "getState":
        words = {STATE_WORDS[q.arg][0] if p.flag(q.arg, t, e) else STATE_WORDS[q.arg][1] for e, t in zip(ents, last)}
        return ents, ", ".join(sorted(words)), last
    if q.name == "getProperty":
        return ents, ", ".join(sorted({str(p.attrs[e][q.arg]) for e in ents})), last
    kept = [(e, t) for e, t in zip(ents, last) if p.parent[t][e] >= 0]
    if not kept:
        return None
    value = ", ".join(sorted({p.types[p.parent[t][e]] for e, t in kept}))
    return [e for e, _ in kept], value, [t for _, t in kept]


def first_seen_position(p: Plain, a: int) -> tuple[float, float, float]:
    t = next(t for t in range(p.T) if p.data[t][a])
    return tuple(round(v, 2) for v in p.pos[t][a])


def reference_answer(ep: Episode, program: Program, plain: Plain | None = None) -> list[tuple]:
    """The structured answer as ``[(anchor xyz or None, [(instance id, type, xyz)], value)]``."""
    p = plain or Plain(ep)
    out = []
    for where, anchor in groups_of(p, program):
        cells: dict[int, list[int]] = {}
        for t in range(p.T):
            for e in range(p.N):
                if selected(p, program, where, anchor, t, e):
                    cells.setdefault(e, []).append(t)
        res = answer(p, program.query, cells)
        if res is None:
            continue
        ents, value, steps = res
        items = [(p.ep.entities.instance_id[e], p.types[e], tuple(round(v, 2) for v in p.pos[t][e]))
                 for e, t in zip(ents, steps)]  # fmt: skip
        out.append((first_seen_position(p, anchor) if anchor is not None else None, items, value))
    q = program.query
    if not out and groups_of(p, program) == [(-1, None)] and q.name == "count" and q.arg == "events":
        out.append((None, [], "0"))  # one group, and the agent never did it
    return out
