"""Bad HM3D input: .semantic.txt, object boxes CSV and navigability maps (.npy), mutated."""

from __future__ import annotations

import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from eqagen.core import DataFileError
from eqagen.generators.navigation.readers import load_hm3d_scene, read_boxes_csv, read_semantic_txt, read_topdown_map

from .conftest import FUZZ, FUZZ_LONG
from .mutate import mutated_bytes, mutated_text, read_or_clean_error

SEMANTIC = (
    'HM3D Semantic Annotations\n1,9DC6A3,"sofa",0\n2,1F2E3D,"coffee table",0\n3,AABBCC,"bed, double",1\n'
    '4,00FF00,"lamp",-1\n'
)
BOXES = (
    "id,xmin,ymin,zmin,xmax,ymax,zmax\n1,0.2,0.0,0.2,0.8,1.0,0.8\n2,1.0,0.0,1.0,1.4,0.5,1.6\n3,0.1,0,1.1,0.5,1,1.5\n"
)


def grid_maps() -> tuple[np.ndarray, np.ndarray]:
    nav = np.zeros((20, 24), bool)
    nav[2:18, 2:10] = True
    nav[4:8, 14:22] = True
    islands = np.where(nav, 0, -1).astype(np.int32)
    islands[4:8, 14:22] = 1
    return nav, islands


def npy(arr: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, arr)
    return buf.getvalue()


def write(path: Path, data: str | bytes) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode("utf-8", "surrogatepass") if isinstance(data, str) else data)
    return path


def scene_files(d: Path, **override: bytes | str) -> dict[str, Path]:
    nav, isl = grid_maps()
    files = {"semantic": SEMANTIC, "boxes": BOXES, "binary": npy(nav), "islands": npy(isl), **override}
    names = {"semantic": "s.semantic.txt", "boxes": "s.boxes.csv", "binary": "s_binary.npy", "islands": "s_isl.npy"}
    return {k: write(d / names[k], v) for k, v in files.items()}


def load(f: dict[str, Path]):
    return load_hm3d_scene("s", f["binary"], f["islands"], f["semantic"], f["boxes"], 0.1)


def test_the_originals_read(scratch: Path) -> None:
    scene = load(scene_files(scratch / "nav-ok"))
    assert len(scene.objects) == 3 and len(scene.regions) == 2  # the lamp has no box
    assert len(read_semantic_txt(scene_files(scratch / "nav-ok")["semantic"])) == 4


@FUZZ
@given(which=st.sampled_from(["semantic", "boxes"]), text=st.data())
def test_mutated_text_files(scratch: Path, which: str, text) -> None:
    original = {"semantic": SEMANTIC, "boxes": BOXES}[which]
    f = scene_files(scratch / "nav-text", **{which: text.draw(mutated_text(original))})
    read_or_clean_error(f[which], load, f)


@FUZZ
@given(which=st.sampled_from(["semantic", "boxes", "binary", "islands"]), data=st.data())
def test_mutated_bytes(scratch: Path, which: str, data) -> None:
    original = scene_files(scratch / "nav-orig")[which].read_bytes()
    f = scene_files(scratch / "nav-bytes", **{which: data.draw(mutated_bytes(original))})
    # The two maps are checked against each other: damage to one may be reported on the other.
    named = f[which].parent if which in ("binary", "islands") else f[which]
    read_or_clean_error(named, load, f)


@pytest.mark.parametrize(
    ("arr", "field"),
    [
        (np.full((4, 4), np.nan), "values"),
        (np.zeros((4, 4), np.complex64), "values"),
        (np.array([["a", "b"]]), "values"),
        (np.zeros((2, 2, 2), bool), "shape"),
        (np.zeros(5, bool), "shape"),
    ],
    ids=["nan", "complex", "strings", "3d", "1d"],
)
def test_maps_of_the_wrong_kind(scratch: Path, arr: np.ndarray, field: str) -> None:
    path = write(scratch / "nav-kind" / "bad.npy", npy(arr))
    with pytest.raises(DataFileError) as err:
        read_topdown_map(path)
    assert err.value.field == field and str(path) in str(err.value)


@pytest.mark.parametrize(
    "row", ["1,nan,0,0,1,1,1", "1,0,0,0,inf,1,1", "99999999999999999999999,0,0,0,1,1,1", "1,0,0,0,1e400,1,1"]
)
def test_boxes_with_odd_numbers_name_the_line(scratch: Path, row: str) -> None:
    path = write(scratch / "nav-box" / "b.csv", "id,xmin,ymin,zmin,xmax,ymax,zmax\n" + row + "\n")
    with pytest.raises(DataFileError) as err:
        read_boxes_csv(path)
    assert err.value.field == "line 2" and str(path) in str(err.value)


def test_islands_of_another_map(scratch: Path) -> None:
    _, isl = grid_maps()
    f = scene_files(scratch / "nav-isl", islands=npy(isl[:, ::-1]))
    with pytest.raises(DataFileError) as err:
        load(f)
    assert err.value.field == "values" and str(f["islands"]) in str(err.value)


@pytest.mark.slow
@FUZZ_LONG
@given(which=st.sampled_from(["semantic", "boxes", "binary", "islands"]), data=st.data())
def test_mutated_bytes_long(scratch: Path, which: str, data) -> None:
    original = scene_files(scratch / "nav-orig-l")[which].read_bytes()
    f = scene_files(scratch / "nav-bytes-l", **{which: data.draw(mutated_bytes(original))})
    read_or_clean_error(f[which].parent if which in ("binary", "islands") else f[which], load, f)
