"""The layers of eqagen (docs/DESIGN.md, "Layout"): every import points down the layer table, and no two
packages or files import each other, directly or round a circle.

The import graph is read from the source with ``ast``: every ``import`` statement counts, at module
level, inside a function (a lazy import) or under ``if TYPE_CHECKING``.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator
from pathlib import Path

import pytest

PACKAGE_DIR = Path(__file__).resolve().parents[1] / "eqagen"

# Lowest first. A module may import its own unit and the units of lower layers; the units of one layer
# are siblings that do not import each other.
LAYERS: tuple[tuple[str, ...], ...] = (
    ("eqagen",),  # eqagen/__init__.py: the version, imports nothing
    ("eqagen.core",),
    ("eqagen.generators",),
    ("eqagen.predicates",),
    ("eqagen.templates",),
    ("eqagen.curation", "eqagen.paraphrase"),
    ("eqagen.scoring",),
    ("eqagen.config",),
    ("eqagen.outputs",),
    ("eqagen.flows",),
    ("eqagen.commands",),
    ("eqagen.cli",),
)

# Imports against the layers allowed for now, each (importing module, unit it imports against the layers),
# and file cycles allowed for now: none (the sub-commands live in eqagen.commands; the flows take the worker
# pool as an argument). The test fails on an entry that no longer occurs, so the lists only shrink.
KNOWN_UPWARD: frozenset[tuple[str, str]] = frozenset()
KNOWN_CYCLES: frozenset[frozenset[str]] = frozenset()


def module_files(package_dir: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every .py file of the package (``a/__init__.py`` is ``a``)."""
    out = {}
    for path in sorted(package_dir.rglob("*.py")):
        parts = path.relative_to(package_dir.parent).with_suffix("").parts
        out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


def imported_names(module: str, path: Path) -> Iterator[str]:
    """The absolute dotted names every import statement of a module names (``from a import b`` yields
    ``a.b``: the module ``a.b`` if there is one, else the name ``b`` of module ``a``)."""
    is_package = path.name == "__init__.py"
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), str(path))):
        if isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = module.split(".")[: len(module.split(".")) - (node.level - (1 if is_package else 0))]
                base = ".".join([*anchor, *([base] if base else [])])
            yield from (f"{base}.{alias.name}" for alias in node.names)


def import_graph(package_dir: Path) -> dict[str, set[str]]:
    """Module -> the modules of the package it imports (each name resolved to its longest module prefix)."""
    files = module_files(package_dir)
    graph: dict[str, set[str]] = {}
    for module, path in files.items():
        targets = set()
        for name in imported_names(module, path):
            while name and name not in files:
                name = name.rpartition(".")[0]
            if name and name != module:
                targets.add(name)
        graph[module] = targets
    return graph


def owner(module: str, names: Iterable[str]) -> str:
    """The longest of ``names`` that is ``module`` or a package holding it ("" if none)."""
    return max((n for n in names if module == n or module.startswith(n + ".")), key=len, default="")


def layer_of(unit: str) -> int:
    return next(i for i, units in enumerate(LAYERS) if unit in units)


UNITS = [u for units in LAYERS for u in units]


def upward_imports(graph: dict[str, set[str]]) -> set[tuple[str, str]]:
    """(module, unit) for every import of a unit that is not below the module's own unit."""
    out = set()
    for module, targets in graph.items():
        unit = owner(module, UNITS)
        for target in targets:
            other = owner(target, UNITS)
            if other != unit and layer_of(other) >= layer_of(unit):
                out.add((module, other))
    return out


def package_of(module: str, graph: dict[str, set[str]]) -> str:
    """The package a module belongs to: a package's ``__init__`` is the package; a top-level module
    (``eqagen.cli``, ``eqagen.config``) counts as a package of its own."""
    if module.count(".") <= 1 or any(m.startswith(module + ".") for m in graph):
        return module
    return module.rpartition(".")[0]


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    out: dict[str, set[str]] = {}
    for module, targets in graph.items():
        source = package_of(module, graph)
        out.setdefault(source, set()).update(package_of(t, graph) for t in targets)
        out[source].discard(source)
    return out


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """Strongly connected components with more than one node (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = len(index)
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = set()
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.add(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(frozenset(component))
    return found


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return import_graph(PACKAGE_DIR)


def test_every_module_has_a_layer(graph):
    top_level = {".".join(m.split(".")[:2]) for m in graph}
    assert {m for m in top_level if owner(m, UNITS) != m} == set(), "add the new package to LAYERS"


def test_imports_point_down_the_layers(graph):
    upward = upward_imports(graph)
    assert not upward - KNOWN_UPWARD, f"imports against the layers (docs/DESIGN.md): {sorted(upward - KNOWN_UPWARD)}"
    assert not KNOWN_UPWARD - upward, f"allowed upward imports that no longer occur: {sorted(KNOWN_UPWARD - upward)}"


def without_known_upward(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    return {m: {t for t in targets if (m, owner(t, UNITS)) not in KNOWN_UPWARD} for m, targets in graph.items()}


def test_no_cycle_between_packages(graph):
    found = cycles(package_graph(without_known_upward(graph)))
    assert not found, f"packages that import each other: {[sorted(c) for c in found]}"


def test_no_cycle_between_files(graph):
    found = set(cycles(graph))
    assert not found - KNOWN_CYCLES, f"files that import each other: {[sorted(c) for c in found - KNOWN_CYCLES]}"
    assert not KNOWN_CYCLES - found, f"allowed cycles that no longer occur: {[sorted(c) for c in KNOWN_CYCLES - found]}"


def test_the_graph_sees_every_kind_of_import(tmp_path):
    """Module-level, lazy, relative and TYPE_CHECKING imports all become edges (a name imported from a
    package is an edge to the package, a submodule imported from it an edge to the submodule); an upward
    import and the cycles it closes are found."""
    pkg = tmp_path / "eqagen"
    (pkg / "core").mkdir(parents=True)
    (pkg / "flows").mkdir()
    (pkg / "__init__.py").write_text("")
    (pkg / "core" / "__init__.py").write_text("from . import rng\n")
    (pkg / "core" / "rng.py").write_text(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from eqagen.flows.run import Run\n"
    )
    (pkg / "flows" / "__init__.py").write_text("")
    (pkg / "flows" / "run.py").write_text("from eqagen.core import Episode\n\ndef go():\n    from ..core import rng\n")
    graph = import_graph(pkg)
    assert graph["eqagen.core"] == {"eqagen.core.rng"}
    assert graph["eqagen.core.rng"] == {"eqagen.flows.run"}
    assert graph["eqagen.flows.run"] == {"eqagen.core", "eqagen.core.rng"}
    assert upward_imports(graph) == {("eqagen.core.rng", "eqagen.flows")}
    assert cycles(graph) == [frozenset({"eqagen.core", "eqagen.core.rng", "eqagen.flows.run"})]
    assert cycles(package_graph(graph)) == [frozenset({"eqagen.core", "eqagen.flows"})]


def test_every_folder_of_modules_is_a_package_a_wheel_ships() -> None:
    """pyproject's ``packages.find`` ships only folders with an ``__init__.py``: a folder of modules without one
    works in an editable install and is missing from a wheel (eqagen.commands once was)."""
    folders = {p.parent for p in PACKAGE_DIR.rglob("*.py") if "__pycache__" not in p.parts}
    assert sorted(str(f.relative_to(PACKAGE_DIR)) for f in folders if not (f / "__init__.py").exists()) == []
