"""What household (AI2-THOR-like) episodes can be asked: all five built-in filter families and queries."""

from __future__ import annotations

import eqagen.predicates.builtin  # noqa: F401
from eqagen.core import UnknownNameError
from eqagen.generators.household.objects import catalog
from eqagen.predicates.worlds import declare_world_family


def attribute_values(attribute: str, type_name: str) -> tuple[str, ...] | None:
    """The values the object catalogue allows a type's static attribute (None: a type or attribute it does
    not list): the homes draw colors and materials from these, and a type has one utility."""
    try:
        ot = catalog().get(type_name)
    except UnknownNameError:
        return None
    return {"color": ot.colors, "material": ot.materials, "utility": (ot.utility,)}.get(attribute)


def object_extent(type_name: str) -> tuple[float, float, float, str] | None:
    """A type's box for the above/under relation (eqagen/predicates/extents.py): footprint side, bottom and
    top relative to its position, mount; from the object catalogue's extents (None: a type it does not list)."""
    extent = catalog().extents.get(type_name)
    if extent is None:
        return None
    bottom, top = extent.vertical()
    return extent.width, bottom, top, extent.mount


declare_world_family(
    "household",
    filters={
        "property": ("color", "material", "utility"),
        "location": None,
        "state": ("open", "toggled", "broken", "sliced", "filled"),
        "position": None,
        "moment": None,
    },
    queries={
        "listObjects": None,
        "count": None,
        "getState": ("open", "toggled", "broken", "sliced", "filled"),
        "getProperty": ("color", "material", "utility"),
        "getLocation": None,
    },
    params={
        # AI2-THOR's openable receptacles that hide their contents ("inside the fridge"); other containers
        # whose contents are said to be inside them rather than on them.
        "enclosing_capability": "enclosing",
        "inside_types": ("Box", "Bowl", "Pot", "Pan", "Mug", "Cup", "GarbageCan", "SinkBasin", "BathtubBasin"),
        # how common each filter value and type is across household episodes (eqagen/predicates/vocabulary.py)
        "vocabulary": "data/household.json",
        # the object table a getProperty question is judged against (validity's constant_property)
        "attribute_values": attribute_values,
        # each type's box, for above/under
        "extent": object_extent,
    },
)
