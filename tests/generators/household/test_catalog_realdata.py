"""The object catalog checked against the iTHOR floor plans' object lists shipped with ALFRED."""

from __future__ import annotations

import json
import re

import pytest

from eqagen.generators.household.objects import catalog

# Types in the layouts that AI2-THOR's current object-type list no longer documents.
RETIRED = {"Lamp", "LaundryHamperLid"}


def _room_kind(floor_plan: int) -> str:
    return {0: "kitchen", 2: "living_room", 3: "bedroom", 4: "bathroom"}[floor_plan // 100]


@pytest.mark.realdata
def test_every_layout_type_is_known_in_its_room_kind(realdata):
    files = sorted((realdata / "alfred" / "layouts").glob("FloorPlan*-objects.json"))
    if not files:
        pytest.skip("no ALFRED layouts under realdata/alfred/layouts")
    cat = catalog()
    unknown, wrong_room = set(), set()
    for f in files:
        kind = _room_kind(int(re.search(r"FloorPlan(\d+)-", f.name).group(1)))
        for t in json.loads(f.read_text()):
            if t in RETIRED:
                continue
            if t not in cat.index:
                unknown.add(t)
            elif cat.get(t).rooms and kind not in cat.get(t).rooms:
                wrong_room.add((t, kind))
    assert not unknown, f"layout types missing from object_types.csv: {sorted(unknown)}"
    assert not wrong_room, f"types seen in rooms object_types.csv does not list: {sorted(wrong_room)}"
