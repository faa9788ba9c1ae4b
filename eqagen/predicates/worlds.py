"""What each world family can be asked: its filter families and keys, its queries and args, its params.

A world family declares its support from its own module of this package (``household.py``,
``navigation.py``, ``blockworld.py``), which ``eqagen/predicates/__init__.py`` imports by name, so every
family is declared once the package is imported.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from eqagen.core import QuerySpec, UnknownNameError


@dataclass
class WorldSupport:
    """What a world family can be asked: filter family -> keys, query -> args (None: all registered).

    ``params`` carries family-specific knobs the predicates read through ``ctx.params`` (thresholds,
    which receptacle types enclose their contents, ...).
    """

    family: str
    filters: dict[str, tuple[str, ...] | None]
    queries: dict[str, tuple[str, ...] | None]
    params: dict[str, Any] = field(default_factory=dict)

    def allows_query(self, query: QuerySpec) -> bool:
        if query.name not in self.queries:
            return False
        allowed = self.queries[query.name]
        return allowed is None or query.arg in allowed


WORLDS: dict[str, WorldSupport] = {}


def declare_world_family(
    family: str,
    filters: dict[str, Iterable[str] | None],
    queries: dict[str, Iterable[str] | None],
    params: dict[str, Any] | None = None,
) -> WorldSupport:
    """Declare (or replace) what world family ``family`` supports."""
    support = WorldSupport(
        family=family,
        filters={k: None if v is None else tuple(v) for k, v in filters.items()},
        queries={k: None if v is None else tuple(v) for k, v in queries.items()},
        params=dict(params or {}),
    )
    WORLDS[family] = support
    return support


def extend_world_family(
    family: str,
    filters: dict[str, Iterable[str] | None] | None = None,
    queries: dict[str, Iterable[str] | None] | None = None,
    params: dict[str, Any] | None = None,
) -> WorldSupport:
    """Add filter families, queries or params to a declared world family (declares it if new)."""
    support = WORLDS.get(family) or declare_world_family(family, {}, {})
    for k, v in (filters or {}).items():
        support.filters[k] = None if v is None else tuple(v)
    for k, v in (queries or {}).items():
        support.queries[k] = None if v is None else tuple(v)
    support.params.update(params or {})
    return support


def world_support(family: str) -> WorldSupport:
    """The declared support of ``family``."""
    if family not in WORLDS:
        raise UnknownNameError("world family (predicates)", family, WORLDS)
    return WORLDS[family]
