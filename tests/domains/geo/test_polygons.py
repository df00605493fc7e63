"""`geo/polygons.py`: area within tolerance, the inside set, a point in a holed region."""

from __future__ import annotations

from fractions import Fraction

from posttrain.domains.geo.plane import num_text
from posttrain.domains.geo.polygons import PointInRegion, PointsInPolygon, PolygonArea


def test_area_passes_within_the_stated_tolerance_only() -> None:
    domain = PolygonArea()
    task = domain.generate(2, 8)
    area = Fraction(task.meta["area"])
    assert domain.judge(task, num_text(area + Fraction(4, 1000), 3)).passed
    assert not domain.judge(task, num_text(area + Fraction(7, 1000), 3)).passed


def test_area_rejects_a_fraction_or_units() -> None:
    domain = PolygonArea()
    task = domain.generate(0, 2)
    assert not domain.judge(task, f"{task.answer} square units").passed
    assert not domain.judge(task, f"{Fraction(task.meta['area']) * 2}/2").passed


def test_inside_set_accepts_any_order_and_case() -> None:
    domain = PointsInPolygon()
    task = domain.generate(1, 6)
    labels = task.answer.split(",")
    assert domain.judge(task, " , ".join(reversed(labels)).lower()).passed


def test_inside_set_with_a_boundary_point_gets_partial_credit() -> None:
    domain = PointsInPolygon()
    task = domain.generate(1, 6)
    boundary = task.meta["kinds"].index("boundary")
    v = domain.judge(task, task.answer + f",P{boundary + 1}")
    assert not v.passed and 0 < v.reward < 1


def test_inside_set_rejects_repeated_or_unknown_labels() -> None:
    domain = PointsInPolygon()
    task = domain.generate(1, 3)
    first = task.answer.split(",")[0]
    assert not domain.judge(task, f"{task.answer},{first}").passed
    assert domain.judge(task, "P99").reward == 0.0


def test_region_accepts_another_free_point() -> None:
    domain = PointInRegion()
    task = domain.generate(0, 1)
    x, y = (Fraction(v) for v in task.answer.split(","))
    nearby = [f"{num_text(x + dx)},{num_text(y + dy)}" for dx in (Fraction(-1, 4), Fraction(1, 4)) for dy in (0, Fraction(1, 8))]  # fmt: skip
    assert any(domain.judge(task, p).passed for p in nearby)


def test_region_rejects_a_point_on_a_hole_circle() -> None:
    domain = PointInRegion()
    task = domain.generate(0, 4)
    x, y, r = task.meta["holes"][0]
    v = domain.judge(task, f"{x + r},{y}")
    assert not v.passed and v.reward == 0.0
