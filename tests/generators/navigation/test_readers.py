"""HM3D readers: .semantic.txt, top-down maps and object boxes; clear errors on bad files."""

from __future__ import annotations

import numpy as np
import pytest

from eqagen.core import DataFileError
from eqagen.generators import get_backend
from eqagen.generators.navigation.readers import (
    load_hm3d_scene,
    read_boxes_csv,
    read_semantic_txt,
    read_topdown_map,
)

SEMANTIC = 'HM3D Semantic Annotations\n1,9DC6A3,"sofa",0\n2,1F2E3D,"coffee table",0\n3,AABBCC,"bed, double",1\n'
BOXES = (
    "id,xmin,ymin,zmin,xmax,ymax,zmax\n"
    "1,1.0,0.2,2.0,2.0,1.0,2.8\n2,1.2,0.2,3.0,1.8,0.6,3.5\n3,9.0,0.2,3.0,10.5,0.8,5.0\n"
)


def test_semantic_txt_is_read(tmp_path):
    path = tmp_path / "x.semantic.txt"
    path.write_text(SEMANTIC)
    records = read_semantic_txt(path)
    assert [(r.object_id, r.hex_color, r.category, r.region_id) for r in records] == [
        (1, "9DC6A3", "sofa", 0),
        (2, "1F2E3D", "coffee table", 0),
        (3, "AABBCC", "bed, double", 1),  # a quoted category may hold a comma
    ]


@pytest.mark.parametrize(
    ("text", "where", "problem"),
    [
        ('1,9DC6A3,"sofa",0\n', "line 1", "header"),
        ('HM3D Semantic Annotations\n1,9DC6A3,"sofa"\n', "line 2", "expected 4 fields"),
        ('HM3D Semantic Annotations\nx,9DC6A3,"sofa",0\n', "line 2", "integers"),
        ('HM3D Semantic Annotations\n1,9DC6G3,"sofa",0\n', "line 2", "hex"),
        ('HM3D Semantic Annotations\n1,9DC6A3,"",0\n', "line 2", "empty category"),
    ],
)
def test_bad_semantic_files_name_line_and_fix(tmp_path, text, where, problem):
    path = tmp_path / "bad.semantic.txt"
    path.write_text(text)
    with pytest.raises(DataFileError) as err:
        read_semantic_txt(path)
    assert err.value.field == where and problem in err.value.problem and err.value.fix
    assert str(path) in str(err.value)


def test_missing_file(tmp_path):
    with pytest.raises(DataFileError, match="file not found"):
        read_semantic_txt(tmp_path / "nope.semantic.txt")


@pytest.mark.realdata
def test_real_topdown_maps(habitat_maps):
    grid = read_topdown_map(*habitat_maps, meters_per_pixel=0.1)
    assert grid.shape == (82, 163) and grid.num_islands == 2
    assert grid.navigable.sum() == 5433


def test_bad_maps(tmp_path):
    np.save(tmp_path / "flat.npy", np.ones(5))
    with pytest.raises(DataFileError, match="2-D"):
        read_topdown_map(tmp_path / "flat.npy")
    np.save(tmp_path / "grey.npy", np.full((4, 4), 0.5))
    with pytest.raises(DataFileError, match="0/1"):
        read_topdown_map(tmp_path / "grey.npy")
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    with pytest.raises(DataFileError, match="numpy"):
        read_topdown_map(tmp_path / "junk.npy")
    nav = np.ones((4, 4), bool)
    np.save(tmp_path / "nav.npy", nav)
    np.save(tmp_path / "isl.npy", np.zeros((4, 5), np.int32))
    with pytest.raises(DataFileError, match="differs"):
        read_topdown_map(tmp_path / "nav.npy", tmp_path / "isl.npy")
    np.save(tmp_path / "isl2.npy", np.full((4, 4), -1, np.int32))
    with pytest.raises(DataFileError, match="-1 exactly where not navigable"):
        read_topdown_map(tmp_path / "nav.npy", tmp_path / "isl2.npy")


def test_bad_boxes(tmp_path):
    (tmp_path / "b.csv").write_text("id,x\n1,2\n")
    with pytest.raises(DataFileError, match="header"):
        read_boxes_csv(tmp_path / "b.csv")
    (tmp_path / "c.csv").write_text("id,xmin,ymin,zmin,xmax,ymax,zmax\n1,2,0,0,1,1,1\n")
    with pytest.raises(DataFileError) as err:
        read_boxes_csv(tmp_path / "c.csv")
    assert err.value.field == "line 2"


@pytest.mark.realdata
def test_hm3d_files_scene_and_backend_on_the_real_map(tmp_path, habitat_maps):
    (tmp_path / "s.semantic.txt").write_text(SEMANTIC)
    (tmp_path / "b.csv").write_text(BOXES)
    entry = {
        "scene_id": "17DRP5sb8fy",
        "topdown_binary": str(habitat_maps[0]),
        "topdown_islands": str(habitat_maps[1]),
        "semantic": str(tmp_path / "s.semantic.txt"),
        "boxes": str(tmp_path / "b.csv"),
    }
    scene = load_hm3d_scene(**{k: v for k, v in entry.items()})
    assert [o.category for o in scene.objects] == ["sofa", "coffee table", "bed, double"]
    assert [r.region_id for r in scene.regions] == ["region_0", "region_1"]
    assert scene.regions[0].box == (1.0, 0.2, 2.0, 2.0, 1.0, 3.5)  # union of its objects' boxes
    backend = get_backend("navigation", "hm3d-files")
    specs = backend.plan(3, 5, {"policy": "express", "scenes": [entry]})
    episodes = [backend.run(s) for s in specs]
    assert {ep.backend for ep in episodes} == {"hm3d-files"} and episodes[0].scene_id == "17DRP5sb8fy"
    assert episodes[0].entities.type[:3] == ["sofa", "coffee table", "bed, double"]
    assert all(10 <= ep.n_steps - 1 <= 100 for ep in episodes)


def test_box_coordinates_beyond_the_limit_are_refused_naming_the_line(tmp_path):
    (tmp_path / "b.csv").write_text("id,xmin,ymin,zmin,xmax,ymax,zmax\n1,0,0,0,1,1,1\n2,0,0,0,1e308,1,1\n")
    with pytest.raises(DataFileError, match="beyond") as err:
        read_boxes_csv(tmp_path / "b.csv")
    assert err.value.field == "line 3"


def test_a_map_whose_header_states_more_than_the_file_holds_is_refused_before_loading(tmp_path):
    path = tmp_path / "nav.npy"
    np.save(path, np.ones((4, 4), bool))
    raw = path.read_bytes()
    path.write_bytes(raw.replace(b"(4, 4)", b"(400000, 400000)", 1).replace(b" " * 10 + b"\n", b"\n", 1))
    with pytest.raises(DataFileError, match=r"states an array of shape \(400000, 400000\), more than") as err:
        read_topdown_map(path)
    assert err.value.field == "shape"


@pytest.mark.parametrize(
    ("entry", "key"),
    [
        ({"meters_per_pixel": 0}, "scenes[s].meters_per_pixel"),
        ({"meters_per_pixel": float("nan")}, "scenes[s].meters_per_pixel"),
        ({"origin": [0, 1e308]}, "scenes[s]"),
        ({"floor_y": "high"}, "scenes[s]"),
    ],
)
def test_map_placement_is_checked_naming_the_scene(tmp_path, entry, key):
    from eqagen.core import ConfigError
    from eqagen.generators.navigation.backend import hm3d_scene_from_entry

    np.save(tmp_path / "nav.npy", np.ones((4, 4), bool))
    with pytest.raises(ConfigError) as err:
        hm3d_scene_from_entry({"scene_id": "s", "topdown_binary": str(tmp_path / "nav.npy"), **entry})
    assert err.value.key == key


@pytest.mark.parametrize("n_scenes", [True, 0, 10**15, "many"])
def test_n_scenes_of_the_embedded_backends_is_a_bounded_count(n_scenes):
    from eqagen.core import ConfigError

    for family in ("navigation", "blockworld"):
        with pytest.raises(ConfigError) as err:
            get_backend(family, "embedded").plan(4, 0, {"n_scenes": n_scenes})
        assert err.value.key == "generation.params.n_scenes"
