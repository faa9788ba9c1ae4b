"""Rebuild ``eqagen/generators/household/data/object_extents.csv``: the size of each household object type.

    .venv/bin/python benchmarks/derive_object_extents.py [--realdata DIR] [--check]

What the real data gives, and what it does not. ALFRED's records (``traj_data.json``, ``layouts/``) carry
positions only: objectIds ``Type|x|y|z`` of the static objects and ``object_poses`` of the movable ones. They
carry no AI2-THOR bounding boxes (``axisAlignedBoundingBox`` is not recorded). So two columns are derived
from the real data, and the rest are this project's estimates of AI2-THOR's assets (``source`` says which):

- ``pivot`` (where the reported position sits in the box: ``bottom``, ``centre`` or ``top``): ``bottom`` for a
  static type whose objectIds, over ALFRED's 120 floor plans (``layouts/FloorPlan*-openable.json``), sit at
  the floor (median height below 0.1 m); a pickupable's position is its base (what rests on a countertop, whose
  objectId is its top surface, sits within 0.05 m of it);
- ``rest_y`` (how far above its position a receptacle's contents rest): the median over the movable objects
  that ALFRED's expert planner itself picks up from a receptacle of that type (``coordinateReceptacleObjectId``
  in ``valid_seen``), of the object's height minus the receptacle's, where there are at least three; for a
  floor-standing surface (a desk, a bed) that is its height, and ``height`` is set to it.

Only these derived numbers go into the table; the real data itself stays in ``shared/realdata``.
``--check`` exits 1 when the table in the package differs from the rebuilt one.
"""

from __future__ import annotations

import argparse
import csv
import io
import json
import os
import statistics
import sys
import tempfile
from collections import defaultdict
from pathlib import Path

from eqagen.generators.household.alfred.reader import iter_trajectory_paths, read_layout, read_trajectory
from eqagen.generators.household.alfred.scene_build import build_alfred_scene
from eqagen.generators.household.objects import EXTENTS_FILE, Catalog, build_catalog

FLOOR_PIVOT = 0.1  # m: a static type whose median objectId height is below this stands with its origin on the floor
MIN_REST_SAMPLES = 3
# floor-standing furniture whose contents rest on its top, so that where they rest is its height
SURFACES = ("ArmChair", "Bed", "Cart", "Chair", "CoffeeTable", "Desk", "DiningTable", "Dresser", "Footstool")
SURFACES += ("Ottoman", "SideTable", "Sofa", "TVStand")

# The project's estimates, metres: (footprint side, height, pivot, mount). mount: "floor" (stands on the floor),
# "wall" (hangs on a wall), "fixed" (part of, or fixed to, the furniture under or around it: a drawer, a
# sink basin, a stove burner, an appliance on a counter), "loose" (rests in or on a receptacle, or is carried).
E = {
    "AlarmClock": (0.15, 0.12, "bottom", "loose"),
    "Apple": (0.09, 0.1, "bottom", "loose"),
    "AppleSliced": (0.09, 0.05, "bottom", "loose"),
    "ArmChair": (0.85, 0.9, "bottom", "floor"),
    "BaseballBat": (0.1, 0.9, "bottom", "loose"),
    "BasketBall": (0.24, 0.24, "bottom", "loose"),
    "Bathtub": (1.6, 0.6, "bottom", "floor"),
    "BathtubBasin": (1.4, 0.45, "centre", "floor"),  # the embedded homes stand it alone on the floor
    "Bed": (1.9, 0.6, "bottom", "floor"),
    "Blinds": (1.0, 1.2, "centre", "wall"),
    "Book": (0.22, 0.05, "bottom", "loose"),
    "Boots": (0.3, 0.3, "bottom", "loose"),
    "Bowl": (0.18, 0.08, "bottom", "loose"),
    "Box": (0.4, 0.3, "bottom", "loose"),
    "Bread": (0.3, 0.12, "bottom", "loose"),
    "BreadSliced": (0.12, 0.12, "bottom", "loose"),
    "ButterKnife": (0.2, 0.02, "bottom", "loose"),
    "Cabinet": (0.5, 0.6, "centre", "fixed"),
    "Candle": (0.08, 0.15, "bottom", "loose"),
    "Cart": (0.8, 0.9, "bottom", "floor"),
    "CD": (0.12, 0.01, "bottom", "loose"),
    "CellPhone": (0.15, 0.02, "bottom", "loose"),
    "Chair": (0.5, 0.9, "bottom", "floor"),
    "Cloth": (0.3, 0.02, "bottom", "loose"),
    "CoffeeMachine": (0.3, 0.35, "bottom", "fixed"),
    "CoffeeTable": (1.0, 0.45, "bottom", "floor"),
    "CounterTop": (1.5, 0.92, "top", "floor"),
    "CreditCard": (0.09, 0.01, "bottom", "loose"),
    "Cup": (0.09, 0.11, "bottom", "loose"),
    "Curtains": (1.5, 2.0, "centre", "wall"),
    "Desk": (1.2, 0.75, "bottom", "floor"),
    "DeskLamp": (0.25, 0.45, "bottom", "fixed"),
    "DiningTable": (1.5, 0.75, "bottom", "floor"),
    "DishSponge": (0.12, 0.04, "bottom", "loose"),
    "Drawer": (0.5, 0.2, "centre", "fixed"),
    "Dresser": (1.1, 0.9, "bottom", "floor"),
    "Egg": (0.05, 0.06, "bottom", "loose"),
    "EggCracked": (0.08, 0.02, "bottom", "loose"),
    "Faucet": (0.15, 0.25, "centre", "fixed"),
    "FloorLamp": (0.4, 1.6, "bottom", "floor"),
    "Footstool": (0.45, 0.4, "bottom", "floor"),
    "Fork": (0.2, 0.02, "bottom", "loose"),
    "Fridge": (0.8, 1.8, "bottom", "floor"),
    "GarbageCan": (0.35, 0.35, "bottom", "floor"),
    "Glassbottle": (0.08, 0.3, "bottom", "loose"),
    "HandTowel": (0.3, 0.4, "top", "loose"),
    "HandTowelHolder": (0.25, 0.15, "centre", "wall"),
    "HousePlant": (0.3, 0.45, "bottom", "fixed"),
    "Kettle": (0.25, 0.25, "bottom", "loose"),
    "KeyChain": (0.08, 0.02, "bottom", "loose"),
    "Knife": (0.3, 0.02, "bottom", "loose"),
    "Ladle": (0.3, 0.05, "bottom", "loose"),
    "Laptop": (0.35, 0.25, "bottom", "loose"),
    "LaundryHamper": (0.5, 0.6, "bottom", "floor"),
    "Lettuce": (0.2, 0.2, "bottom", "loose"),
    "LettuceSliced": (0.15, 0.05, "bottom", "loose"),
    "LightSwitch": (0.1, 0.12, "centre", "wall"),
    "Microwave": (0.55, 0.35, "centre", "fixed"),
    "Mirror": (0.8, 0.8, "centre", "wall"),
    "Mug": (0.12, 0.11, "bottom", "loose"),
    "Newspaper": (0.3, 0.02, "bottom", "loose"),
    "Ottoman": (0.7, 0.4, "bottom", "floor"),
    "Painting": (0.7, 0.6, "centre", "wall"),
    "Pan": (0.3, 0.06, "bottom", "loose"),
    "PaperTowelRoll": (0.12, 0.25, "bottom", "loose"),
    "Pen": (0.14, 0.01, "bottom", "loose"),
    "Pencil": (0.18, 0.01, "bottom", "loose"),
    "PepperShaker": (0.05, 0.1, "bottom", "loose"),
    "Pillow": (0.5, 0.15, "bottom", "loose"),
    "Plate": (0.25, 0.03, "bottom", "loose"),
    "Plunger": (0.15, 0.45, "bottom", "loose"),
    "Poster": (0.6, 0.8, "centre", "wall"),
    "Pot": (0.3, 0.15, "bottom", "loose"),
    "Potato": (0.1, 0.07, "bottom", "loose"),
    "PotatoSliced": (0.08, 0.03, "bottom", "loose"),
    "RemoteControl": (0.18, 0.03, "bottom", "loose"),
    "Safe": (0.45, 0.45, "bottom", "floor"),
    "SaltShaker": (0.05, 0.1, "bottom", "loose"),
    "ScrubBrush": (0.15, 0.1, "bottom", "loose"),
    "Shelf": (0.9, 0.04, "top", "wall"),
    "ShowerCurtain": (1.5, 1.9, "centre", "wall"),
    "ShowerDoor": (1.0, 1.9, "centre", "wall"),
    "ShowerGlass": (1.0, 1.9, "centre", "wall"),
    "ShowerHead": (0.15, 0.15, "centre", "wall"),
    "SideTable": (0.5, 0.65, "bottom", "floor"),
    "Sink": (0.6, 0.3, "centre", "fixed"),
    "SinkBasin": (0.5, 0.2, "centre", "fixed"),
    "SoapBar": (0.09, 0.03, "bottom", "loose"),
    "SoapBottle": (0.08, 0.18, "bottom", "loose"),
    "Sofa": (2.0, 0.85, "bottom", "floor"),
    "Spatula": (0.3, 0.03, "bottom", "loose"),
    "Spoon": (0.18, 0.02, "bottom", "loose"),
    "SprayBottle": (0.1, 0.25, "bottom", "loose"),
    "Statue": (0.12, 0.25, "bottom", "loose"),
    "StoveBurner": (0.25, 0.04, "centre", "fixed"),
    "StoveKnob": (0.05, 0.05, "centre", "fixed"),
    "TeddyBear": (0.25, 0.3, "bottom", "loose"),
    "Television": (1.0, 0.6, "centre", "fixed"),
    "TennisRacket": (0.3, 0.7, "bottom", "loose"),
    "TissueBox": (0.2, 0.12, "bottom", "loose"),
    "Toaster": (0.3, 0.2, "bottom", "fixed"),
    "Toilet": (0.5, 0.8, "bottom", "floor"),
    "ToiletPaper": (0.12, 0.11, "bottom", "loose"),
    "ToiletPaperHanger": (0.15, 0.1, "centre", "fixed"),
    "Tomato": (0.08, 0.07, "bottom", "loose"),
    "TomatoSliced": (0.08, 0.02, "bottom", "loose"),
    "Towel": (0.5, 0.6, "top", "loose"),
    "TowelHolder": (0.6, 0.1, "centre", "wall"),
    "TVStand": (1.4, 0.6, "bottom", "floor"),
    "Vase": (0.15, 0.3, "bottom", "loose"),
    "Watch": (0.05, 0.02, "bottom", "loose"),
    "WateringCan": (0.3, 0.25, "bottom", "loose"),
    "Window": (1.2, 1.2, "centre", "wall"),
    "WineBottle": (0.08, 0.32, "bottom", "loose"),
}
HEADER = "object_type,width,height,pivot,rest_y,mount,source"
PREAMBLE = """\
# The extent of each household object type (AI2-THOR semantics), metres. Rebuilt by
# benchmarks/derive_object_extents.py, which says how; do not edit by hand.
# width: side of the square footprint (x-z); height: vertical size; pivot: where the reported position sits in
#   the box (bottom, centre, top); rest_y: how far above the position a receptacle's contents rest (blank: not a
#   receptacle); mount: floor (stands on it), wall (hangs on it), fixed (part of or fixed to the furniture under
#   or around it), loose (rests in or on a receptacle, or is carried).
# source: estimate = this project's estimate of AI2-THOR's asset; alfred-pivot = pivot from the objectIds of
#   ALFRED's 120 floor plans (median height n); alfred-rest = rest_y (and, for a floor-standing surface, height)
#   from the movable objects ALFRED's expert picks up from that receptacle type in valid_seen (median of n).
"""


def layout_pivot_heights(layouts: Path) -> dict[str, list[float]]:
    """Each static type's objectId heights over every floor plan's openable/receptacle objects."""
    heights: dict[str, list[float]] = defaultdict(list)
    for path in sorted(layouts.glob("FloorPlan*-openable.json")):
        for object_id in json.loads(path.read_text()):
            object_type, _x, y, _z = object_id.split("|")[:4]
            heights[object_type].append(float(y))
    return heights


def expert_rest_heights(trajectories: Path, layouts: Path, cat: Catalog) -> dict[str, list[float]]:
    """Receptacle type -> heights of what the expert picks up from it, above the receptacle's position."""
    rest: dict[str, list[float]] = defaultdict(list)
    cache: dict = {}
    for path in iter_trajectory_paths(trajectories):
        traj = read_trajectory(path)
        if traj.floor_plan not in cache:
            cache[traj.floor_plan] = read_layout(traj.floor_plan, layouts)
        built = build_alfred_scene(traj, cache[traj.floor_plan], cat=cat)
        by_id = {o.object_id: o for o in built.scene.objects}
        for o in built.scene.objects:
            if built.parent_source.get(o.object_id) == "expert" and o.parent:
                rest[by_id[o.parent].object_type].append(o.position[1] - by_id[o.parent].position[1])
    return rest


def estimates_catalog(tmp: Path) -> Catalog:
    """The object catalogue with the estimates alone as its extents (the scene builder needs a catalogue; the
    extents do not change which receptacle the expert picks from)."""
    path = tmp / "object_extents.csv"
    path.write_text(table_text(estimate_rows()))
    return build_catalog(extents_file=path)


def estimate_rows() -> list[dict[str, str]]:
    return [row(name, width, height, pivot, "", mount, "estimate") for name, (width, height, pivot, mount) in E.items()]


def row(name: str, width: float, height: float, pivot: str, rest: str, mount: str, source: str) -> dict[str, str]:
    keys = HEADER.split(",")
    return dict(zip(keys, (name, f"{width:.2f}", f"{height:.2f}", pivot, rest, mount, source)))


def rows(realdata: Path, cat: Catalog) -> list[dict[str, str]]:
    alfred = realdata / "alfred"
    pivots = layout_pivot_heights(alfred / "layouts")
    rests = expert_rest_heights(alfred / "json_2.1.0" / "valid_seen", alfred / "layouts", cat)
    out = []
    for name, (width, height, pivot, mount) in sorted(E.items()):
        sources, rest = ["estimate"], ""
        if len(pivots.get(name, ())) and statistics.median(pivots[name]) < FLOOR_PIVOT:
            pivot = "bottom"
            sources.append(f"alfred-pivot n={len(pivots[name])}")
        if len(rests.get(name, ())) >= MIN_REST_SAMPLES:
            r = round(statistics.median(rests[name]), 2)
            rest = f"{r:.2f}"
            sources.append(f"alfred-rest n={len(rests[name])}")
            if name in SURFACES and pivot == "bottom":
                height = r
        elif name in REST_ESTIMATE:
            rest = f"{REST_ESTIMATE[name]:.2f}"
        out.append(row(name, width, height, pivot, rest, mount, " ".join(sources)))
    return out


# Where contents rest where ALFRED's expert never picks anything up from the type: a surface's top above its
# pivot (height for a bottom pivot, 0 for a top pivot), an enclosing box's floor, a holder's bar.
REST_ESTIMATE = {
    "ArmChair": 0.45,
    "Bathtub": 0.1,
    "BathtubBasin": -0.15,
    "Bed": 0.6,
    "Bowl": 0.01,
    "Box": 0.02,
    "Cabinet": -0.25,
    "Cart": 0.9,
    "Chair": 0.45,
    "CoffeeMachine": 0.02,
    "CoffeeTable": 0.45,
    "CounterTop": 0.0,
    "Cup": 0.01,
    "Desk": 0.75,
    "DiningTable": 0.75,
    "Drawer": -0.08,
    "Dresser": 0.9,
    "Footstool": 0.4,
    "Fridge": 0.9,
    "GarbageCan": 0.03,
    "HandTowelHolder": -0.05,
    "LaundryHamper": 0.1,
    "Microwave": -0.12,
    "Mug": 0.01,
    "Ottoman": 0.4,
    "Pan": 0.01,
    "Plate": 0.01,
    "Pot": 0.01,
    "Safe": 0.05,
    "Shelf": 0.0,
    "SideTable": 0.65,
    "Sink": -0.1,
    "SinkBasin": -0.08,
    "Sofa": 0.45,
    "StoveBurner": 0.02,
    "Toaster": 0.05,
    "Toilet": 0.4,
    "ToiletPaperHanger": 0.0,
    "TowelHolder": 0.0,
    "TVStand": 0.6,
}


def table_text(table: list[dict[str, str]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=HEADER.split(","), lineterminator="\n")
    writer.writeheader()
    writer.writerows(table)
    return PREAMBLE + buf.getvalue()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    default = os.environ.get("EQAGEN_REALDATA") or str(Path(__file__).resolve().parents[2] / "shared" / "realdata")
    p.add_argument("--realdata", type=Path, default=Path(default))
    p.add_argument("--check", action="store_true", help="exit 1 if the package's table differs from the rebuilt one")
    args = p.parse_args(argv)
    if not (args.realdata / "alfred" / "layouts").is_dir():
        print(f"real data not found at {args.realdata}: set EQAGEN_REALDATA or pass --realdata", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as tmp:
        text = table_text(rows(args.realdata, estimates_catalog(Path(tmp))))
    if args.check:
        same = EXTENTS_FILE.read_text() == text
        print(f"{EXTENTS_FILE.name}: {'matches' if same else 'differs from'} the rebuilt table")
        return 0 if same else 1
    EXTENTS_FILE.write_text(text)
    derived = sum("alfred" in line.split(",")[-1] for line in text.splitlines() if not line.startswith("#"))
    print(f"wrote {EXTENTS_FILE} ({len(E)} types, {derived} with real-derived columns)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
