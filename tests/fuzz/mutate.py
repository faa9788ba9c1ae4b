"""Mutations of valid input files for the bad-input tests: bytes, JSON trees, NBT trees and text tokens.

Each strategy draws a mutation from a valid original: truncation, flipped or inserted bytes, a deleted
key, a value of the wrong type, a huge or negative number, NaN, an empty string. The readers must then
either read the file or raise the project's own error naming the file; nothing else may escape.
"""

from __future__ import annotations

import copy
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import nbtlib
from hypothesis import strategies as st
from nbtlib import tag

from eqagen.core import DataFileError, EqagenError

# Values that replace a JSON or text value: wrong types, extremes, NaN.
ODD_VALUES: list[Any] = [None, "", "x", [], {}, -1, 0, 10**30, -(10**30), 1e308, float("nan"), float("inf"), True, [[]]]
ODD_TOKENS = ["", "-1", "0", "99999999999", "1e308", "nan", "inf", "-inf", "x", "3.5", "\u00e9", "\x00", ",", '"']


# --- bytes --------------------------------------------------------------------------------------------


@st.composite
def mutated_bytes(draw: st.DrawFn, original: bytes) -> bytes:
    """``original`` with one to three byte-level edits (truncate, flip a bit, overwrite, insert, delete)."""
    data = bytearray(original)
    for _ in range(draw(st.integers(1, 3))):
        n = len(data)
        kind = draw(st.sampled_from(["truncate", "flip", "set", "insert", "delete"]))
        pos = draw(st.integers(0, max(0, n - 1)))
        if kind == "truncate":
            del data[pos:]
        elif kind == "flip" and n:
            data[pos] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set" and n:
            data[pos] = draw(st.sampled_from([0x00, 0x7F, 0x80, 0xFF]))
        elif kind == "insert":
            data[pos:pos] = draw(st.binary(min_size=1, max_size=8))
        elif kind == "delete":
            del data[pos : pos + draw(st.integers(1, 16))]
    return bytes(data)


# --- JSON-like trees (dicts and lists) ---------------------------------------------------------------


def tree_paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    """Every path to a value inside nested dicts and lists (the root excluded)."""
    out: list[tuple] = []
    items = node.items() if isinstance(node, dict) else enumerate(node) if isinstance(node, list) else []
    for k, v in items:
        out.append((*prefix, k))
        out.extend(tree_paths(v, (*prefix, k)))
    return out


def _parent(root: Any, path: tuple) -> Any:
    node = root
    for k in path[:-1]:
        node = node[k]
    return node


@st.composite
def mutated_tree(draw: st.DrawFn, original: Any, odd: list[Any] | None = None) -> Any:
    """A deep copy of ``original`` with one to three values replaced by odd ones or deleted."""
    root = json.loads(json.dumps(original))
    for _ in range(draw(st.integers(1, 3))):
        paths = tree_paths(root)
        if not paths:
            return copy.deepcopy(draw(st.sampled_from(odd or ODD_VALUES)))
        path = draw(st.sampled_from(paths))
        parent = _parent(root, path)
        if draw(st.booleans()) and isinstance(parent, dict):
            del parent[path[-1]]
        else:
            # a copy: the shared odd values must never be edited by a later mutation
            parent[path[-1]] = copy.deepcopy(draw(st.sampled_from(odd or ODD_VALUES)))
    return root


def dump_json(value: Any) -> str:
    return json.dumps(value, allow_nan=True)


# --- NBT trees ------------------------------------------------------------------------------------------

ODD_TAGS: list[Callable[[], Any]] = [
    lambda: tag.Int(-1),
    lambda: tag.Int(2**31 - 1),
    lambda: tag.Long(-(2**63)),
    lambda: tag.Short(32767),
    lambda: tag.Byte(0),
    lambda: tag.Double(float("nan")),
    lambda: tag.String(""),
    lambda: tag.String("minecraft:"),
    lambda: nbtlib.Compound({}),
    lambda: nbtlib.List[tag.Int]([]),
    lambda: tag.IntArray([]),
    lambda: tag.LongArray([1, -1]),
    lambda: tag.ByteArray([127, -128]),
]


def nbt_paths(node: Any, prefix: tuple = ()) -> list[tuple]:
    out: list[tuple] = []
    if isinstance(node, dict):
        items: Any = node.items()
    elif isinstance(node, nbtlib.List):
        items = enumerate(node)
    else:
        return out
    for k, v in items:
        out.append((*prefix, k))
        out.extend(nbt_paths(v, (*prefix, k)))
    return out


@st.composite
def mutate_nbt_in_place(draw: st.DrawFn, root: Any) -> Any:
    """Delete a key of, or put an odd tag into, one to three places of an NBT tree (modified in place)."""
    for _ in range(draw(st.integers(1, 3))):
        paths = nbt_paths(root)
        if not paths:
            break
        path = draw(st.sampled_from(paths))
        parent = _parent(root, path)
        if isinstance(parent, dict) and draw(st.booleans()):
            del parent[path[-1]]
        elif isinstance(parent, dict):
            parent[path[-1]] = draw(st.sampled_from(ODD_TAGS))()
        else:  # a typed list only takes its own tag type: drop the element instead
            del parent[path[-1]]
    return root


# --- text tokens ------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"[^\s,\"]+")


@st.composite
def mutated_text(draw: st.DrawFn, original: str) -> str:
    """One to three edits of whole lines or single tokens (numbers, names) of a text file."""
    lines = original.splitlines()
    for _ in range(draw(st.integers(1, 3))):
        if not lines:
            break
        i = draw(st.integers(0, len(lines) - 1))
        kind = draw(st.sampled_from(["token", "token", "drop-line", "dup-line", "cut-line"]))
        if kind == "drop-line":
            del lines[i]
        elif kind == "dup-line":
            lines.insert(i, lines[i])
        elif kind == "cut-line":
            lines[i] = lines[i][: draw(st.integers(0, len(lines[i])))]
        else:
            spans = [m.span() for m in _TOKEN.finditer(lines[i])]
            if spans:
                a, b = draw(st.sampled_from(spans))
                lines[i] = lines[i][:a] + draw(st.sampled_from(ODD_TOKENS)) + lines[i][b:]
    return "\n".join(lines) + draw(st.sampled_from(["\n", ""]))


# --- the check ---------------------------------------------------------------------------------------------


def names_file(err: DataFileError, path: Path) -> bool:
    """The error names the mutated file, or the directory that holds it; where ``path`` is a directory (a
    file set whose files are checked against each other), any file in it."""
    named = Path(err.path)
    return named == path or named in path.parents or path in named.parents or str(path) in str(err)


def read_or_clean_error(path: Path, read: Callable[..., Any], *args: Any) -> Any:
    """``read(*args)`` on a (possibly) bad file ``path``: it reads it or raises DataFileError naming the file.

    Any other exception fails the test with its type, which is what the reader leaked."""
    try:
        return read(*args)
    except DataFileError as err:
        assert names_file(err, path), f"the error does not name {path}: {err}"
        assert err.problem, "an error without a problem text"
        return None
    except EqagenError as err:  # the project's other error types are fine if they say what is wrong
        assert str(err), "an empty message"
        return None


def finite(x: float) -> bool:
    return math.isfinite(x)
