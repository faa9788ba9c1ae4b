"""Question records shaped like the question engine's output, built with core's classes.

``sample_records`` are hand-written items covering every query type and fact kind; ``generated_records``
draws many varied items from a seed (for property tests, the server tests and the benchmark).
"""

from __future__ import annotations

from eqagen.core import AnswerGroup, FilterSpec, Program, QARecord, QuerySpec, ResultItem, derive_rng
from eqagen.paraphrase import lexicon

COUNTER_A = (0.46, 0.15, -0.83)
COUNTER_B = (-1.2, 0.9, 2.05)


def _coords(p: tuple[float, float, float]) -> str:
    return f"(x={p[0]:.2f}, y={p[1]:.2f}, z={p[2]:.2f})"


def record(
    question: str,
    answer: str,
    filters: list[FilterSpec],
    query: QuerySpec,
    groups: list[AnswerGroup],
    answer_type: str,
    *,
    grounded: bool = False,
    scene: str = "FloorPlan1",
    episode: str = "ep-0001",
    split: str = "",
    family: str = "household",
) -> QARecord:
    program = Program(tuple(filters), query)
    return QARecord(
        episode_id=episode,
        scene_id=scene,
        family=family,
        backend="embedded",
        program=program,
        structured_question=program.signature(),
        structured_answer=groups,
        answer_type=answer_type,
        answer_key="|".join(g.value for g in groups),
        question=question,
        answer=answer,
        grounded=grounded,
        category="object recognition",
        express_category="counting",
        balance_key=program.signature(),
        query_type=query.name,
        split=split,
    )


def _mugs(n: int, near: tuple[float, float, float]) -> tuple[ResultItem, ...]:
    return tuple(ResultItem(f"Mug#{i + 1}", "Mug", (near[0] + 0.1 * i, near[1] + 0.05, near[2])) for i in range(n))


def sample_records() -> list[QARecord]:
    on_counter = FilterSpec("location", "on", "CounterTop", {})
    return [
        record(
            f"How many mugs are on the countertop {_coords(COUNTER_A)}?",
            "3",
            [on_counter],
            QuerySpec("count", "", {"subject": "Mug"}),
            [AnswerGroup("on CounterTop#1", COUNTER_A, _mugs(3, COUNTER_A), "3")],
            "number",
            grounded=True,
        ),
        record(
            "How many mugs are on the countertop?",
            f"2 on the countertop {_coords(COUNTER_A)} and 1 on the countertop {_coords(COUNTER_B)}.",
            [on_counter],
            QuerySpec("count", "", {"subject": "Mug"}),
            [
                AnswerGroup("on CounterTop#1", COUNTER_A, _mugs(2, COUNTER_A), "2"),
                AnswerGroup("on CounterTop#2", COUNTER_B, _mugs(1, COUNTER_B), "1"),
            ],
            "number",
        ),
        record(
            "Was the fridge open right after you picked up the apple?",
            "Yes.",
            [
                FilterSpec("state", "open", "true"),
                FilterSpec("moment", "right_after", "pickup Apple", {"event": 3}),
            ],
            QuerySpec("getState", "open"),
            [AnswerGroup("Fridge#1", None, (ResultItem("Fridge#1", "Fridge", (2.0, 0.0, 1.5)),), "yes")],
            "yes/no",
        ),
        record(
            "What color is the bowl inside the cabinet?",
            "Green.",
            [FilterSpec("location", "inside", "Cabinet", {})],
            QuerySpec("getProperty", "color", {"subject": "Bowl"}),
            [AnswerGroup("inside Cabinet#3", None, (ResultItem("Bowl#1", "Bowl", (1.1, 0.4, 0.2)),), "green")],
            "color",
        ),
        record(
            "What objects did you see right after you opened the fridge for the second time?",
            "An apple, an egg and a tomato.",
            [FilterSpec("moment", "right_after", "open Fridge", {"event": 9})],
            QuerySpec("listObjects"),
            [
                AnswerGroup(
                    "right after open Fridge #2",
                    None,
                    (
                        ResultItem("Apple#1", "Apple", (2.0, 0.5, 1.5)),
                        ResultItem("Egg#1", "Egg", (2.0, 0.5, 1.6)),
                        ResultItem("Tomato#1", "Tomato", (2.1, 0.5, 1.5)),
                    ),
                    "Apple, Egg, Tomato",
                )
            ],
            "objects",
        ),
        record(
            "Where is the knife?",
            "On the dining table (x=1.20, y=0.90, z=2.05).",
            [],
            QuerySpec("getLocation", "", {"subject": "Knife"}),
            [
                AnswerGroup(
                    "DiningTable#1",
                    (1.2, 0.9, 2.05),
                    (ResultItem("Knife#1", "Knife", (1.25, 0.92, 2.0)),),
                    "DiningTable",
                )
            ],
            "location",
        ),
        record(
            "How many times did you open the drawer before you turned on the lamp?",
            "2",
            [FilterSpec("moment", "before", "toggle DeskLamp", {"event": 12})],
            QuerySpec("count", "events", {"kind": "open", "subject": "Drawer"}),
            [AnswerGroup("before toggle DeskLamp #1", None, (ResultItem("Drawer#2", "Drawer", (0.3, 0.4, 1.0)),), "2")],
            "number",
        ),
        record(
            "How many chairs are in the kitchen?",
            "4",
            [FilterSpec("region", "in_room", "Kitchen", {})],
            QuerySpec("count", "", {"subject": "Chair"}),
            [
                AnswerGroup(
                    "in Kitchen",
                    None,
                    tuple(ResultItem(f"Chair#{i}", "Chair", (float(i), 0.0, 3.0)) for i in range(4)),
                    "4",
                )
            ],
            "number",
            family="navigation",
            scene="hm3d-00800",
        ),
        record(
            "Is the cabinet left of the sink closed?",
            "No.",
            [FilterSpec("position", "left_of", "SinkBasin", {}), FilterSpec("state", "open", "false")],
            QuerySpec("getState", "open"),
            [AnswerGroup("left of SinkBasin#1", None, (ResultItem("Cabinet#4", "Cabinet", (-0.5, 0.4, 1.0)),), "no")],
            "yes/no",
        ),
    ]


_TYPES = ("Mug", "Apple", "Bowl", "Knife", "Plate", "Egg", "Tomato", "Spoon", "Book", "Vase")
_RECEPTACLES = ("CounterTop", "DiningTable", "Shelf", "Desk", "SideTable")
_COLORS = ("red", "green", "blue", "white", "black", "yellow")


def _words(type_name: str) -> str:
    spaced = "".join(" " + c.lower() if c.isupper() else c for c in type_name).strip()
    return spaced


def _generated_count(rng, i: int) -> QARecord:
    obj, rec = _TYPES[rng.integers(len(_TYPES))], _RECEPTACLES[rng.integers(len(_RECEPTACLES))]
    n = int(rng.integers(1, 7))
    anchor = tuple(round(float(v), 2) for v in rng.uniform(-3, 3, 3))
    plural = lexicon.plural(_words(obj))
    return record(
        f"How many {plural} are on the {_words(rec)} {_coords(anchor)}?",
        str(n),
        [FilterSpec("location", "on", rec, {})],
        QuerySpec("count", "", {"subject": obj}),
        [AnswerGroup(f"on {rec}#1", anchor, tuple(ResultItem(f"{obj}#{k}", obj, anchor) for k in range(n)), str(n))],
        "number",
        grounded=True,
        episode=f"ep-{i:05d}",
        scene=f"FloorPlan{i % 30 + 1}",
    )


def _generated_color(rng, i: int) -> QARecord:
    obj, rec = _TYPES[rng.integers(len(_TYPES))], _RECEPTACLES[rng.integers(len(_RECEPTACLES))]
    color = _COLORS[rng.integers(len(_COLORS))]
    return record(
        f"What color is the {_words(obj)} on the {_words(rec)}?",
        f"{color.capitalize()}.",
        [FilterSpec("location", "on", rec, {})],
        QuerySpec("getProperty", "color", {"subject": obj}),
        [AnswerGroup(f"on {rec}#1", None, (ResultItem(f"{obj}#1", obj, (0.0, 0.5, 1.0)),), color)],
        "color",
        episode=f"ep-{i:05d}",
        scene=f"FloorPlan{i % 30 + 1}",
    )


def _generated_state(rng, i: int) -> QARecord:
    obj = ("Fridge", "Cabinet", "Drawer", "Microwave")[rng.integers(4)]
    is_open = bool(rng.integers(2))
    return record(
        f"Was the {_words(obj)} open after you picked up the {_words(_TYPES[rng.integers(len(_TYPES))])}?",
        "Yes." if is_open else "No.",
        [FilterSpec("moment", "after", "pickup", {"event": int(rng.integers(30))})],
        QuerySpec("getState", "open", {"subject": obj}),
        [AnswerGroup(f"{obj}#1", None, (ResultItem(f"{obj}#1", obj, (1.0, 0.0, 2.0)),), "yes" if is_open else "no")],
        "yes/no",
        episode=f"ep-{i:05d}",
        scene=f"FloorPlan{i % 30 + 1}",
    )


def generated_records(n: int, seed: int = 0, split: str = "") -> list[QARecord]:
    """``n`` varied items (counts with coordinates, colors, states), distinct question ids."""
    makers = (_generated_count, _generated_color, _generated_state)
    out = []
    for i in range(n):
        rng = derive_rng(seed, "fixtures", i)
        rec = makers[i % len(makers)](rng, i)
        rec.split = split
        out.append(rec)
    return out


def engine_shaped_records() -> list[QARecord]:
    """Items in the shapes the question engine writes: lowercase object names in navigation and
    blockworld, bare on/off state answers, material and utility answers, two temporal relations."""
    plant = ResultItem("plant#1", "plant", (1.0, 0.0, 2.0))
    return [
        record(
            "Was the plastic object switched on or off?",
            "Off.",
            [FilterSpec("property", "material", "plastic")],
            QuerySpec("getState", "toggled"),
            [AnswerGroup("(property:material = plastic)", None, (ResultItem("Lamp#1", "Lamp", (0, 1, 2)),), "off")],
            "state",
        ),
        record(
            "What was the switched-on object made of?",
            "Metal.",
            [FilterSpec("state", "toggled", "true")],
            QuerySpec("getProperty", "material"),
            [AnswerGroup("(state:toggled = true)", None, (ResultItem("Toaster#1", "Toaster", (0, 1, 2)),), "metal")],
            "material",
        ),
        record(
            "What was the filled object used for?",
            "Watering plants.",
            [FilterSpec("state", "filled", "true")],
            QuerySpec("getProperty", "utility"),
            [
                AnswerGroup(
                    "(state:filled = true)",
                    None,
                    (ResultItem("WateringCan#1", "WateringCan", (0, 0, 1)),),
                    "watering plants",
                )
            ],
            "utility",
        ),
        record(
            "Which gray objects did you see after you passed the bookshelf and before you passed the plant?",
            "A plant.",
            [
                FilterSpec("moment", "after", "pass bookshelf", {"event": 0}),
                FilterSpec("moment", "before", "pass plant", {"event": 4}),
                FilterSpec("property", "color", "gray"),
            ],
            QuerySpec("listObjects"),
            [AnswerGroup("(when = after pass bookshelf)", None, (plant,), "plant")],
            "objects",
            family="navigation",
        ),
        record(
            "How many birch objects did you see after you entered the house?",
            "2.",
            [FilterSpec("moment", "after", "enter house", {"event": 0}), FilterSpec("property", "material", "birch")],
            QuerySpec("count", "objects"),
            [AnswerGroup("(when = after enter house)", None, (ResultItem("tree#1", "tree", (3, 0, 4)),) * 2, "2")],
            "number",
            family="blockworld",
        ),
    ]
