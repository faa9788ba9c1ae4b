"""The bounded NBT check: it accepts every file eqagen writes and every NBT tree nbtlib writes (and
finds the end nbtlib wrote), refuses any truncation, and refuses a non-empty list of End tags at once,
which nbtlib would otherwise build element by element for hours."""

from __future__ import annotations

import gzip
import io
import struct
import subprocess
import sys
import time
import zlib

import nbtlib
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from nbtlib import tag

from eqagen.core import DataFileError
from eqagen.core.limits import MAX_INFLATED_BYTES
from eqagen.generators.blockworld import anvil
from eqagen.generators.blockworld.embedded import generate_world
from eqagen.generators.blockworld.files import load_world
from eqagen.generators.blockworld.nbt import (
    GZIP,
    ZLIB,
    InflateLimitError,
    NbtStructureError,
    check_nbt,
    inflate,
    parse_nbt,
)
from eqagen.generators.blockworld.savedir import write_save
from eqagen.generators.blockworld.schem import write_schem


def nbt_bytes(root: nbtlib.Compound, name: str = "") -> bytes:
    buf = io.BytesIO()
    nbtlib.File(root, root_name=name).write(buf)
    return buf.getvalue()


def test_every_file_eqagen_writes_passes_whole(tmp_path) -> None:
    world = generate_world("plains", 3)
    write_schem(world, tmp_path / "w.schem")
    save = write_save(world, tmp_path / "save")
    files = [gzip.decompress((tmp_path / "w.schem").read_bytes()), gzip.decompress((save / "level.dat").read_bytes())]
    for region in sorted(save.glob("*/r.*.mca")):
        files += [nbt_bytes(chunk) for chunk in anvil.read_region(region).values()]
    assert len(files) > 3
    for raw in files:
        assert check_nbt(raw) == len(raw)


names = st.text(max_size=6)
scalars = st.one_of(
    st.integers(-128, 127).map(tag.Byte),
    st.integers(-(2**15), 2**15 - 1).map(tag.Short),
    st.integers(-(2**31), 2**31 - 1).map(tag.Int),
    st.integers(-(2**63), 2**63 - 1).map(tag.Long),
    st.floats(width=32, allow_nan=False).map(tag.Float),
    st.floats(allow_nan=False).map(tag.Double),
    names.map(tag.String),
    st.lists(st.integers(-128, 127), max_size=5).map(tag.ByteArray),
    st.lists(st.integers(-(2**31), 2**31 - 1), max_size=5).map(tag.IntArray),
    st.lists(st.integers(-(2**63), 2**63 - 1), max_size=5).map(tag.LongArray),
)
trees = st.recursive(
    scalars,
    lambda children: st.one_of(
        st.dictionaries(names, children, max_size=4).map(nbtlib.Compound),
        # homogeneous lists: one child repeated, or an empty list (written as a list of End tags)
        st.tuples(children, st.integers(0, 3)).map(lambda pair: nbtlib.List([pair[0]] * pair[1])),
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(root=st.dictionaries(names, trees, max_size=4), cut=st.integers(min_value=1))
def test_nbtlib_trees_pass_and_every_truncation_is_refused(root: dict, cut: int) -> None:
    raw = nbt_bytes(nbtlib.Compound(root), "root")
    assert check_nbt(raw) == len(raw)
    assert parse_nbt(raw + b"trailing") == nbtlib.File.parse(io.BytesIO(raw))
    with pytest.raises(NbtStructureError):
        check_nbt(raw[: cut % len(raw)])


def end_list(declared: int) -> bytes:
    """A compound named Schematic holding Width/Height/Length and a list of End tags of ``declared`` length."""
    sizes = [b"\x02" + struct.pack(">H", len(k)) + k.encode() + b"\x00\x01" for k in ("Width", "Height", "Length")]
    entries = b"".join(sizes)
    bad = b"\x09" + struct.pack(">H", 8) + b"Entities" + b"\x00" + struct.pack(">i", declared)
    return b"\x0a" + struct.pack(">H", 9) + b"Schematic" + entries + bad + b"\x00"


def test_a_huge_list_of_end_tags_is_refused_at_once(tmp_path) -> None:
    """Found by the byte-damage property test: a damaged Sponge schematic whose list header declared
    about two billion End tags kept nbtlib parsing for hours."""
    assert check_nbt(end_list(0)) == len(end_list(0))
    with pytest.raises(NbtStructureError, match="2147483647 End tags"):
        check_nbt(end_list(2**31 - 1))
    path = tmp_path / "damaged.schem"
    path.write_bytes(gzip.compress(end_list(2**31 - 1), mtime=0))
    started = time.perf_counter()
    with pytest.raises(DataFileError, match=r"damaged\.schem.*End tags"):
        load_world(path)
    assert time.perf_counter() - started < 5  # nbtlib alone: about 9 s per 50 million tags


def test_deep_nesting_is_refused_not_a_recursion_error() -> None:
    raw = b"\x0a\x00\x00" + b"\x0a\x00\x00" * 600 + b"\x00" * 601
    with pytest.raises(NbtStructureError, match="nested deeper"):
        check_nbt(raw)


def _zero_bomb(members: int, member_bytes: int = 1 << 20) -> bytes:
    """``members`` gzip members of ``member_bytes`` zeros each: about 1 KB per MiB it expands to."""
    return gzip.compress(bytes(member_bytes), compresslevel=9) * members


def test_inflate_reads_every_member_as_gzip_does_and_refuses_past_its_limit() -> None:
    data = gzip.compress(b"one ") + gzip.compress(b"two") + b"\0" * 8  # two members and zero padding
    assert inflate(data, GZIP, 100) == gzip.decompress(data) == b"one two"
    assert inflate(zlib.compress(b"x" * 5000), ZLIB, 5000) == b"x" * 5000
    with pytest.raises(InflateLimitError):
        inflate(zlib.compress(b"x" * 5001), ZLIB, 5000)
    with pytest.raises(InflateLimitError):
        inflate(_zero_bomb(3, 1000), GZIP, 2999)
    with pytest.raises(zlib.error):
        inflate(gzip.compress(b"cut short" * 100)[:-20], GZIP, 10_000)


BOMB_READER = """
import resource, sys
from eqagen.core import DataFileError
from eqagen.generators.blockworld.schem import read_schem
try:
    read_schem(sys.argv[1])
    print("read")
except DataFileError as err:
    print("refused:", err)
print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024)
"""


def test_a_gzip_bomb_schematic_is_refused_within_bounded_memory(tmp_path) -> None:
    """2 MB of gzip expanding to 2 GiB once held 4.3 GB at its peak; now reading stops at the limit."""
    bomb = tmp_path / "bomb.schem"
    bomb.write_bytes(_zero_bomb(2048))
    assert bomb.stat().st_size < 3 << 20
    out = subprocess.run([sys.executable, "-c", BOMB_READER, str(bomb)], capture_output=True, text=True, check=True)
    verdict, peak_mb = out.stdout.splitlines()
    assert verdict.startswith("refused:") and "bomb.schem [gzip]: the file expands to more than" in verdict
    assert int(peak_mb) < 2 * MAX_INFLATED_BYTES / 2**20 + 200, f"peak {peak_mb} MB"
