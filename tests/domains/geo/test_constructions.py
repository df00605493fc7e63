"""`geo/constructions.py`: lattice triangles and rectangle packings judged by predicates."""

from __future__ import annotations

from dataclasses import replace

from posttrain.domains.geo.constructions import LatticeTriangle, RectPacking


def test_triangle_accepts_its_vertices_in_any_order() -> None:
    domain = LatticeTriangle()
    task = domain.generate(3, 5)
    a, b, c = task.answer.split(";")
    assert domain.judge(task, f"{c}; {a}; {b}").passed


def test_triangle_rejects_decimal_vertices() -> None:
    domain = LatticeTriangle()
    task = domain.generate(3, 5)
    a, b, c = task.answer.split(";")
    assert not domain.judge(task, f"{a}.0;{b};{c}").passed


def test_triangle_with_a_required_point_on_a_vertex_fails() -> None:
    domain = LatticeTriangle()
    task = domain.generate(0, 1)
    vertex = task.answer.split(";")[0].split(",")
    on_boundary = replace(task, meta={**task.meta, "points": [*task.meta["points"], vertex]})
    v = domain.judge(on_boundary, task.answer)
    assert not v.passed and "boundary" in v.reason


def test_packing_accepts_a_mirrored_placement() -> None:
    domain = RectPacking()
    task = domain.generate(2, 4)
    ox, oy, width, height = task.meta["container"]
    corners = [tuple(int(v) for v in p.split(",")) for p in task.answer.split(";")]
    mirrored = [
        f"{2 * ox + width - x - w},{y}"
        for (x, y), (w, _) in zip(corners, task.meta["sizes"], strict=True)  # fmt: skip
    ]
    assert domain.judge(task, ";".join(mirrored)).passed


def test_packing_rejects_overlap_and_names_it() -> None:
    domain = RectPacking()
    task = domain.generate(2, 4)
    ox, oy, _, _ = task.meta["container"]
    v = domain.judge(task, ";".join(f"{ox},{oy}" for _ in task.meta["sizes"]))
    assert not v.passed and "overlaps" in v.reason
