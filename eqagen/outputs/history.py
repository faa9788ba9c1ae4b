"""What a model observes of an episode: the step-by-step history TAG-EQA's Socratic baseline reads.

A history is a JSON object per episode (docs/models.md, field by field)::

    {"episode_id", "family", "backend", "scene_id", "frame", "flags": [state flags], "regions": [...],
     "objects": [{"id", "type", "caption", "attributes", "capabilities"}],
     "steps": [{"t", "action", "target", "receptacle", "success", "error", "pose", "held",
                "events": [{"kind", "object", "target", "ordinal", "position", "contents"}],
                "visible": [{"id", "position", "parent", "state", "caption"}]}]}

Objects are named by their instance ids; positions are in the episode frame (metres), each float32
written as its shortest decimal, so :func:`episode_from_history` reads back the very values the
episode holds. The objects listed are those the agent saw, acted on, held or saw something resting
in or on; an object never observed is not part of what the model is given.

:func:`episode_from_history` rebuilds an :class:`~eqagen.core.Episode` from a whole history: what the
agent saw is exact, and between two observations an object keeps the state it was last seen in. The
program evaluator runs on that episode as on the original (the test of the history's completeness).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from eqagen.core import AnswerGroup, Episode, Event, QARecord, Region
from eqagen.core.episode import POSE_FIELDS, Entities, Steps
from eqagen.core.frame import FrameTransform
from eqagen.core.timeline import CORE_FIELDS, Timeline
from eqagen.templates.answers import evaluate


def short_float(value: float) -> float:
    """A float32 as its shortest decimal (0.15, not 0.15000000596046448): reads back as the same float32."""
    return float(str(np.float32(value)))


def short_floats(values: np.ndarray) -> list[float]:
    return [short_float(v) for v in np.asarray(values).ravel().tolist()]


def state_flags(episode: Episode) -> tuple[str, ...]:
    """The boolean state flags of the episode's timeline (open, toggled, ..., exists)."""
    tl = episode.timeline
    return tuple(f for f in tl.flags if tl.initial[f].dtype == np.bool_)


def is_area(attributes: dict[str, str]) -> bool:
    """A room (navigation) or a structure (Minecraft): an entity that stands for a part of the map, which
    the questions name ("in the kitchen", "inside a house") without the agent seeing it as an object."""
    return attributes.get("kind") == "region" or attributes.get("category") == "structure"


def listed_entities(episode: Episode) -> np.ndarray:
    """The entities a history names: seen, acted on, held, in an event or moved by one, holding something
    seen, or an area of the map (:func:`is_area`)."""
    tl, steps = episode.timeline, episode.steps
    visible = tl.field("visible").astype(bool)
    keep = visible.any(axis=0) | np.array([is_area(a) for a in episode.entities.attributes], dtype=bool)
    parents = tl.field("parent")[visible]
    referenced = [parents, steps.target, steps.receptacle, steps.held]
    referenced += [np.array([e.entity, e.target]) for e in episode.events]
    parent = tl.field("parent")
    referenced += [np.flatnonzero(parent[e.t] == e.entity) for e in episode.events if e.entity >= 0]  # moved along
    for ids in referenced:
        ids = np.asarray(ids, dtype=np.int64)
        keep[ids[ids >= 0]] = True
    return np.flatnonzero(keep)


def object_caption(attributes: dict[str, str], type_name: str, state: list[str] | None = None) -> str:
    """``white ceramic mug`` or, with a state, ``white ceramic mug (dirty, hot)``."""
    words = [attributes[k] for k in ("color", "material") if attributes.get(k)]
    text = " ".join([*words, type_name])
    return f"{text} ({', '.join(state)})" if state else text


def object_record(episode: Episode, e: int) -> dict[str, Any]:
    ents = episode.entities
    return {
        "id": ents.instance_id[e],
        "native_id": ents.native_id[e],
        "type": ents.type[e],
        "caption": object_caption(ents.attributes[e], ents.type[e]),
        "position": short_floats(episode.timeline.field("position")[0, e]) if is_area(ents.attributes[e]) else None,
        "attributes": dict(sorted(ents.attributes[e].items())),
        "capabilities": list(ents.capabilities[e]),
    }


class _Names:
    """Entity index -> instance id (None for -1), for the entities a history lists."""

    def __init__(self, episode: Episode):
        self.ids = episode.entities.instance_id

    def __call__(self, e: int) -> str | None:
        return self.ids[int(e)] if e >= 0 else None


def visible_record(episode: Episode, t: int, e: int, flags: tuple[str, ...], name: _Names) -> dict[str, Any]:
    tl = episode.timeline
    state = [f for f in flags if f != "exists" and bool(tl.field(f)[t, e])]
    ents = episode.entities
    return {
        "id": ents.instance_id[e],
        "position": short_floats(tl.field("position")[t, e]),
        "parent": name(int(tl.field("parent")[t, e])),
        "state": state,
        "caption": object_caption(ents.attributes[e], ents.type[e], state),
    }


def event_record(episode: Episode, ev: Event, name: _Names) -> dict[str, Any]:
    """An event of a step, with where its object was then and where what rests in or on it went (an event is
    also an observation of the things the agent moved: a plate put down with a pen on it moves the pen)."""
    position = episode.timeline.field("position")[ev.t]
    contents = np.flatnonzero(episode.timeline.field("parent")[ev.t] == ev.entity) if ev.entity >= 0 else []
    return {
        "kind": ev.kind,
        "object": name(ev.entity),
        "target": name(ev.target),
        "ordinal": ev.ordinal,
        "position": short_floats(position[ev.entity]) if ev.entity >= 0 else None,
        "contents": [{"id": name(int(c)), "position": short_floats(position[c])} for c in contents],
    }


def step_record(episode: Episode, t: int, flags: tuple[str, ...], name: _Names) -> dict[str, Any]:
    s = episode.steps
    visible = np.flatnonzero(episode.timeline.field("visible")[t])
    return {
        "t": t,
        "action": s.action[t],
        "args": s.args[t],
        "target": name(int(s.target[t])),
        "receptacle": name(int(s.receptacle[t])),
        "success": bool(s.success[t]),
        "error": s.error[t],
        "pose": dict(zip(POSE_FIELDS, short_floats(s.pose[t]))),
        "held": name(int(s.held[t])),
        "events": [event_record(episode, ev, name) for ev in episode.events if ev.t == t],
        "visible": [visible_record(episode, t, int(e), flags, name) for e in visible],
    }


def episode_history(episode: Episode, steps: list[int] | None = None) -> dict[str, Any]:
    """The history of ``episode``: every step, or only ``steps`` (a subsample, in time order)."""
    flags, name = state_flags(episode), _Names(episode)
    return {
        "episode_id": episode.episode_id,
        "family": episode.family,
        "backend": episode.backend,
        "scene_id": episode.scene_id,
        "n_steps": episode.n_steps,
        "frame": episode.frame.to_dict(),
        "flags": list(flags),
        "regions": [
            {"region_id": r.region_id, "category": r.category, "footprint": list(r.footprint), "name": r.name}
            for r in episode.regions
        ],
        "objects": [object_record(episode, int(e)) for e in listed_entities(episode)],
        "steps": [step_record(episode, t, flags, name) for t in (range(episode.n_steps) if steps is None else steps)],
    }


# -- reading a history back ----------------------------------------------------------------------------
def _carried(observed: np.ndarray, values: np.ndarray) -> np.ndarray:
    """Per entity, each step's value where observed, else the last observed value (the first observed one
    before any): ``observed`` is ``[T, N]``, ``values`` ``[T, N, ...]``."""
    T = observed.shape[0]
    steps = np.arange(T)[:, None]
    last = np.maximum.accumulate(np.where(observed, steps, -1), axis=0)
    first = np.where(observed.any(axis=0), observed.argmax(axis=0), 0)
    source = np.where(last >= 0, last, first[None, :])
    return np.take_along_axis(values, source.reshape(source.shape + (1,) * (values.ndim - 2)), axis=0)


def _observed_arrays(history: dict[str, Any], index: dict[str, int]) -> dict[str, np.ndarray]:
    """Dense ``[T, N]`` arrays of what the steps' visible lists say (position, parent, flags, visible)."""
    T, N, flags = len(history["steps"]), len(index), history["flags"]
    out = {
        "visible": np.zeros((T, N), dtype=bool),
        "position": np.zeros((T, N, 3), dtype=np.float32),
        "parent": np.full((T, N), -1, dtype=np.int32),
        **{f: np.zeros((T, N), dtype=bool) for f in flags},
    }
    out["known"] = np.zeros((T, N), dtype=bool)  # where a position is given: seen, in an event, an area
    for o in history["objects"]:
        if o["position"] is not None:
            out["position"][:, index[o["id"]]] = o["position"]
            out["known"][:, index[o["id"]]] = True
    for t, step in enumerate(history["steps"]):
        for ev in step["events"]:
            moved = [{"id": ev["object"], "position": ev["position"]}] if ev["object"] is not None else []
            for m in moved + ev["contents"]:
                out["position"][t, index[m["id"]]] = m["position"]
                out["known"][t, index[m["id"]]] = True
        for v in step["visible"]:
            e = index[v["id"]]
            out["visible"][t, e] = out["known"][t, e] = True
            out["position"][t, e] = v["position"]
            out["parent"][t, e] = _index_of(index, v["parent"])
            for f in v["state"]:
                out[f][t, e] = True
            if "exists" in out:
                out["exists"][t, e] = True  # a visible object exists
    return out


def history_timeline(history: dict[str, Any], index: dict[str, int]) -> Timeline:
    dense = _observed_arrays(history, index)
    seen, known = dense["visible"], dense.pop("known")
    carried = {name: arr if name == "visible" else _carried(seen, arr) for name, arr in dense.items()}
    carried["position"] = _carried(known, dense["position"])
    ordered = {name: carried[name] for name in (*CORE_FIELDS, *history["flags"])}
    return Timeline.from_dense(ordered)


def _index_of(index: dict[str, int], instance_id: str | None) -> int:
    return index[instance_id] if instance_id is not None else -1


def history_steps(history: dict[str, Any], index: dict[str, int]) -> Steps:
    def ids(key: str) -> np.ndarray:
        return np.array([_index_of(index, s[key]) for s in history["steps"]], dtype=np.int32)

    steps = history["steps"]
    return Steps(
        action=[s["action"] for s in steps],
        target=ids("target"),
        receptacle=ids("receptacle"),
        args=[s["args"] for s in steps],
        success=np.array([s["success"] for s in steps], dtype=bool),
        error=[s["error"] for s in steps],
        pose=np.array([[s["pose"][k] for k in POSE_FIELDS] for s in steps], dtype=np.float32).reshape(-1, 5),
        held=ids("held"),
    )


def episode_from_history(history: dict[str, Any]) -> Episode:
    """An episode rebuilt from a whole history alone (``steps`` must be every step, ``t = 0..T-1``)."""
    steps = history["steps"]
    if [s["t"] for s in steps] != list(range(history["n_steps"])):
        raise ValueError(f"history of {history['episode_id']} is subsampled: only a whole history is an episode")
    objects = history["objects"]
    index = {o["id"]: i for i, o in enumerate(objects)}
    entities = Entities(
        instance_id=[o["id"] for o in objects],
        type=[o["type"] for o in objects],
        native_id=[o["native_id"] for o in objects],
        attributes=[dict(o["attributes"]) for o in objects],
        capabilities=[tuple(o["capabilities"]) for o in objects],
    )
    events = [
        Event(s["t"], ev["kind"], _index_of(index, ev["object"]), _index_of(index, ev["target"]), ev["ordinal"])
        for s in steps
        for ev in s["events"]
    ]
    return Episode(
        episode_id=history["episode_id"],
        family=history["family"],
        backend=history["backend"],
        scene_id=history["scene_id"],
        seed=0,
        task={},
        steps=history_steps(history, index),
        entities=entities,
        timeline=history_timeline(history, index),
        events=events,
        regions=[Region(r["region_id"], r["category"], tuple(r["footprint"]), r["name"]) for r in history["regions"]],
        frame=FrameTransform.from_dict(history["frame"]),
    )


# -- the history as text, as a language model reads it ---------------------------------------------------
def _at(position: list[float]) -> str:
    return "(" + ", ".join(f"{round(v, 2) + 0.0:.2f}" for v in position) + ")"  # + 0.0: no "-0.00"


def step_line(step: dict[str, Any]) -> str:
    """One step as a line: ``step 12: OpenObject Fridge#1 (ok) | at (x, y, z) facing 90 | holding
    Apple#1 | events: open Fridge#1 | sees: white metal Fridge#1 (open) at (1.30, 0.90, 2.10) on
    CounterTop#1; ...``."""
    pose = step["pose"]
    action = " ".join(a for a in (step["action"], step["target"], step["receptacle"]) if a)
    outcome = "ok" if step["success"] else f"failed: {step['error'] or 'no reason given'}"
    parts = [f"step {step['t']}: {action} ({outcome})"]
    parts.append(f"at {_at([pose['x'], pose['y'], pose['z']])} facing {pose['yaw']:.0f}")
    if step["held"]:
        parts.append(f"holding {step['held']}")
    if step["events"]:
        named = (" ".join(filter(None, (e["kind"], e["object"], e["target"]))) for e in step["events"])
        parts.append("events: " + ", ".join(named))
    seen = [
        f"{v['caption']} [{v['id']}] at {_at(v['position'])}" + (f" in/on {v['parent']}" if v["parent"] else "")
        for v in step["visible"]
    ]
    parts.append("sees: " + ("; ".join(seen) if seen else "nothing"))
    return " | ".join(parts)


def history_text(history: dict[str, Any]) -> str:
    """The history as lines of text: a header naming the frame, then one line per step kept."""
    head = (
        f"Episode {history['episode_id']} ({history['family']}, {len(history['steps'])} of {history['n_steps']} "
        "steps shown). Positions are (x, y, z) in metres: the agent starts at the origin facing +z, +x to its "
        "right, y up; facing is the yaw in degrees, clockwise from +z."
    )
    return "\n".join([head, *(step_line(s) for s in history["steps"])])


def asked_answer(episode: Episode, record: QARecord) -> list[AnswerGroup]:
    """A question's structured answer recomputed on ``episode`` (e.g. one rebuilt from a history): the
    program's groups, or for a grounded question the group of the anchor it names, as the record keeps."""
    groups = evaluate(episode, record.program)
    if not record.grounded:
        return groups
    anchor = record.structured_answer[0].anchor
    return [g for g in groups if g.anchor == anchor]
