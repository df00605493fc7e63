"""`geo/plane.py`: exact predicates and the strict point parser."""

from __future__ import annotations

import doctest
import random
from fractions import Fraction

from posttrain.domains.geo import plane
from posttrain.domains.geo.plane import convex_hull, is_simple, locate, parse_points, star_polygon

SQUARE = [(0, 0), (4, 0), (4, 4), (0, 4)]


def test_doctests_pass() -> None:
    assert doctest.testmod(plane).failed == 0


def test_locate_tells_inside_boundary_and_outside_exactly() -> None:
    assert locate((Fraction(1, 1000), 2), SQUARE) == "inside"
    assert locate((0, 2), SQUARE) == "boundary" and locate((4, 4), SQUARE) == "boundary"
    assert locate((Fraction(-1, 1000), 2), SQUARE) == "outside"


def test_convex_hull_drops_collinear_points_and_starts_lowest_leftmost() -> None:
    points = [(2, 0), (0, 0), (4, 0), (4, 4), (0, 4), (2, 2)]
    assert convex_hull(points) == [(0, 0), (4, 0), (4, 4), (0, 4)]


def test_star_polygons_are_simple_and_counter_clockwise() -> None:
    rng = random.Random(3)
    for n in range(4, 14):
        poly = star_polygon(rng, n, (0, 0), 5, 12)
        assert is_simple(poly) and plane.twice_area(poly) > 0


def test_parse_points_rejects_prose_brackets_and_extra_decimals() -> None:
    assert parse_points("The point is 1,2") is None
    assert parse_points("(1,2)") is None
    assert parse_points("1.2345,2") is None
    assert parse_points("1,2;3,4", count=1) is None
    assert parse_points("1.5,2", max_decimals=0) is None
