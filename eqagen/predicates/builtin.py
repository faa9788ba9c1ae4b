"""Registers the built-in filters, queries and forbidden filter/query pairs (imported once, on first use)."""

from __future__ import annotations

import eqagen.predicates.filters
import eqagen.predicates.queries  # noqa: F401  (registration happens on import)
from eqagen.predicates.registry import forbid_pair

# A filter that gives the answer away: "where is the thing on the counter", "what color is the green cup",
# "is the open fridge open".
forbid_pair("location", "*", "getLocation", "*")
forbid_pair("property", "*", "getProperty", "=")
forbid_pair("state", "*", "getState", "=")
