"""posttrain/verify/geometry.py: STL loading, overlaps, silhouettes, probes, symmetry."""

from __future__ import annotations

import io

import manifold3d
import numpy as np
import pytest

from posttrain.verify.geometry import (
    bounds_match,
    bounds_of,
    iou,
    load_stl,
    mirror_iou,
    probe,
    silhouette_iou,
    text_silhouette,
)
from tests.verify.junk import junk_texts


def _plate_with_hole() -> manifold3d.Manifold:
    plate = manifold3d.Manifold.cube([40.0, 20.0, 4.0])
    hole = manifold3d.Manifold.cylinder(6.0, 3.0, 3.0, 32).translate([10.0, 10.0, -1.0])
    return plate - hole


def _stl(solid: manifold3d.Manifold) -> bytes:
    import trimesh

    mesh = solid.to_mesh()
    tm = trimesh.Trimesh(np.asarray(mesh.vert_properties)[:, :3], np.asarray(mesh.tri_verts))
    buf = io.BytesIO()
    tm.export(buf, file_type="stl")
    return buf.getvalue()


def test_a_closed_stl_loads_as_a_manifold_with_its_box() -> None:
    loaded = load_stl(_stl(_plate_with_hole()))
    assert loaded.manifold is not None and loaded.watertight
    assert bounds_match(bounds_of(loaded.manifold), (0, 0, 0, 40, 20, 4))
    assert loaded.manifold.genus() == 1


def test_an_open_mesh_is_not_watertight() -> None:
    import trimesh

    tm = trimesh.creation.box((10, 10, 10))
    tm.update_faces(np.arange(len(tm.faces) - 1))  # drop one triangle: a hole in the skin
    buf = io.BytesIO()
    tm.export(buf, file_type="stl")
    loaded = load_stl(buf.getvalue())
    assert loaded.manifold is None and not loaded.watertight and loaded.problem


@pytest.mark.parametrize("junk", junk_texts())
def test_junk_bytes_never_raise(junk: str) -> None:
    loaded = load_stl(junk.encode(errors="replace"))
    assert loaded.manifold is None and loaded.problem


@pytest.mark.parametrize("size", [2e6, 1e12])
def test_a_mesh_beyond_the_size_cap_is_not_a_solid(size: float) -> None:
    loaded = load_stl(_stl(manifold3d.Manifold.cube([size, 1.0, 1.0])))
    assert loaded.manifold is None and "beyond" in loaded.problem and loaded.bounds is not None


def test_a_solid_too_large_for_2d_booleans_scores_zero_and_draws_nothing() -> None:
    # manifold3d raised RuntimeError("Values exceed permitted range") out of each of these.
    huge, small = manifold3d.Manifold.cube([1e12] * 3), manifold3d.Manifold.cube([1.0] * 3)
    assert silhouette_iou(huge, small, "top") == 0.0 == silhouette_iou(small, huge, "front")
    assert mirror_iou(huge, 0) == 0.0
    assert "too large" in text_silhouette(huge, "side")


def test_iou_is_one_for_the_same_solid_and_drops_for_a_shifted_one() -> None:
    solid = _plate_with_hole()
    assert iou(solid, solid) == pytest.approx(1.0)
    assert iou(solid, solid.translate([20.0, 0.0, 0.0])) == pytest.approx(1 / 3, abs=0.02)


def test_silhouettes_tell_a_missing_hole_from_above_not_from_the_front() -> None:
    holed, plain = _plate_with_hole(), manifold3d.Manifold.cube([40.0, 20.0, 4.0])
    assert silhouette_iou(holed, plain, "top") < 0.98
    assert silhouette_iou(holed, plain, "front") == pytest.approx(1.0)


def test_probes_find_an_open_hole_and_a_solid_rim() -> None:
    solid = _plate_with_hole()
    core = manifold3d.Manifold.cylinder(4.0, 2.5, 2.5, 32).translate([10.0, 10.0, 0.0])
    rim = manifold3d.Manifold.cylinder(3.0, 4.5, 4.5, 32) - manifold3d.Manifold.cylinder(3.0, 3.5, 3.5, 32)  # fmt: skip
    assert probe(solid, core, "empty")
    assert probe(solid, rim.translate([10.0, 10.0, 0.5]), "full")
    assert not probe(manifold3d.Manifold.cube([40.0, 20.0, 4.0]), core, "empty")


def test_mirror_symmetry_sees_an_off_centre_hole() -> None:
    solid = _plate_with_hole()
    assert mirror_iou(solid, 0) < 0.99  # the hole sits at x = 10 of 40
    assert mirror_iou(solid, 1) == pytest.approx(1.0, abs=1e-6)


def test_the_text_silhouette_shows_the_hole() -> None:
    picture = text_silhouette(_plate_with_hole(), "top", 20)
    header, *rows = picture.splitlines()
    assert "x across" in header and all(set(r) <= {"#", "."} for r in rows)
    assert any("." in r for r in rows) and any("#" in r for r in rows)
