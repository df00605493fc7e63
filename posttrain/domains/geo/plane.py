"""Exact plane geometry shared by the `geo` family: predicates, generators, strict parsing.

    poly = star_polygon(rng, 7, (0, 0), 4, 9)     # a simple CCW polygon, integer vertices
    locate((Fraction(1, 2), 0), poly)             # "inside" | "boundary" | "outside"
    parse_points("1.5,-2;3,4", count=2)           # [(Fraction(3, 2), -2), (3, 4)] or None

Coordinates are ints or `Fraction`s, so every predicate (orientation, point on a
segment, point in a polygon) is exact: a point on an edge is "boundary", never
"inside" by rounding. `parse_points` reads model text strictly: the whole stripped
text is `x,y` pairs separated by ";", each coordinate a plain decimal with at most
`max_decimals` places; anything else is None.

Not guaranteed: `star_polygon` and the other generators retry until their output is
valid and raise after many failed draws (a programming error, not a model error);
`locate` expects a simple polygon (self-intersecting input gives even-odd parity).
"""

from __future__ import annotations

import math
import random
import re
from fractions import Fraction
from typing import cast

Num = int | Fraction
Point = tuple[Num, Num]

_MAX_TEXT = 4_000


def cross(o: Point, a: Point, b: Point) -> Fraction:
    """Twice the signed area of triangle o-a-b: > 0 when o→a→b turns counter-clockwise.

    Typed as Fraction because an int behaves as one here; ints in give an int out.
    """
    return cast(Fraction, (a[0] - o[0]) * (b[1] - o[1]) - (a[1] - o[1]) * (b[0] - o[0]))


def on_segment(p: Point, a: Point, b: Point) -> bool:
    """Whether p lies on the closed segment a-b."""
    if cross(a, b, p) != 0:
        return False
    return min(a[0], b[0]) <= p[0] <= max(a[0], b[0]) and min(a[1], b[1]) <= p[1] <= max(a[1], b[1])  # fmt: skip


def segments_meet(a: Point, b: Point, c: Point, d: Point) -> bool:
    """Whether the closed segments a-b and c-d share at least one point."""
    d1, d2, d3, d4 = cross(c, d, a), cross(c, d, b), cross(a, b, c), cross(a, b, d)
    if ((d1 > 0 > d2) or (d1 < 0 < d2)) and ((d3 > 0 > d4) or (d3 < 0 < d4)):
        return True
    return on_segment(a, c, d) or on_segment(b, c, d) or on_segment(c, a, b) or on_segment(d, a, b)  # fmt: skip


def twice_area(poly: list[Point]) -> Num:
    """Twice the signed area (shoelace): positive for counter-clockwise vertices."""
    n = len(poly)
    return sum(poly[i][0] * poly[(i + 1) % n][1] - poly[(i + 1) % n][0] * poly[i][1] for i in range(n))  # fmt: skip


def locate(p: Point, poly: list[Point]) -> str:
    """ "inside", "boundary" or "outside" of the simple polygon `poly`, exactly."""
    inside = False
    n = len(poly)
    for i in range(n):
        a, b = poly[i], poly[(i + 1) % n]
        if on_segment(p, a, b):
            return "boundary"
        if (a[1] > p[1]) != (b[1] > p[1]) and (cross(a, b, p) > 0) == (b[1] > a[1]):
            # The horizontal ray from p to +x crosses this edge.
            inside = not inside
    return "inside" if inside else "outside"


def is_simple(poly: list[Point]) -> bool:
    """No repeated vertex, no three consecutive collinear vertices, no edges crossing."""
    n = len(poly)
    if n < 3 or len(set(poly)) != n:
        return False
    if any(cross(poly[i - 1], poly[i], poly[(i + 1) % n]) == 0 for i in range(n)):
        return False
    for i in range(n):
        for j in range(i + 2, n):
            if i == 0 and j == n - 1:
                continue  # adjacent through the wrap-around
            if segments_meet(poly[i], poly[i + 1], poly[j], poly[(j + 1) % n]):
                return False
    return True


def star_polygon(
    rng: random.Random, n: int, center: tuple[int, int], r_min: float, r_max: float
) -> list[Point]:
    """A simple counter-clockwise polygon with `n` integer vertices around `center`."""
    for _ in range(500):
        poly: list[Point] = []
        for i in range(n):
            angle = 2 * math.pi * (i + rng.uniform(0.15, 0.85)) / n
            radius = rng.uniform(r_min, r_max)
            poly.append(
                (
                    center[0] + round(radius * math.cos(angle)),
                    center[1] + round(radius * math.sin(angle)),
                )  # fmt: skip
            )
        if is_simple(poly) and twice_area(poly) > 0:
            return poly
    raise RuntimeError(f"no simple {n}-gon drawn in 500 tries")


def convex_hull(points: list[Point]) -> list[Point]:
    """Strict convex hull (no collinear points), counter-clockwise from the lowest-leftmost."""
    pts = sorted(set(points), key=lambda p: (p[1], p[0]))
    if len(pts) < 3:
        return pts
    start = pts[0]

    def chain(seq: list[Point]) -> list[Point]:
        out: list[Point] = []
        for p in seq:
            while len(out) >= 2 and cross(out[-2], out[-1], p) <= 0:
                out.pop()
            out.append(p)
        return out

    by_x = sorted(pts)
    lower, upper = chain(by_x), chain(by_x[::-1])
    hull = lower[:-1] + upper[:-1]
    k = hull.index(start)
    return hull[k:] + hull[:k]


# ----------------------------------------------------------------------------- text


def num_text(x: Num | float, decimals: int = 3) -> str:
    """`x` rounded to `decimals` places, without trailing zeros ("2.5", "-3", "0.125")."""
    text = f"{float(x):.{decimals}f}".rstrip("0").rstrip(".")
    return "0" if text in ("-0", "") else text


def points_text(points: list[Point], decimals: int = 3) -> str:
    """Points as `x,y;x,y;...` with `num_text` coordinates."""
    return ";".join(f"{num_text(x, decimals)},{num_text(y, decimals)}" for x, y in points)


def polygon_text(poly: list[Point]) -> str:
    """Vertices as "(x, y), (x, y), ..." for prompts."""
    return ", ".join(f"({num_text(x)}, {num_text(y)})" for x, y in poly)


def parse_points(text: str, count: int | None = None, max_decimals: int = 3) -> list[Point] | None:
    """The points in `text` (`x,y;x,y;...`, spaces allowed around separators) or None.

    >>> parse_points("1, 2 ; -0.5,3", count=2)
    [(1, 2), (Fraction(-1, 2), 3)]
    >>> parse_points("(1,2)") is None, parse_points("1,2.0001") is None
    (True, True)
    """
    if not isinstance(text, str) or len(text) > _MAX_TEXT:
        return None
    number = rf"-?[0-9]{{1,9}}(?:\.[0-9]{{1,{max_decimals}}})?" if max_decimals else r"-?[0-9]{1,9}"
    pair = rf"\s*({number})\s*,\s*({number})\s*"
    stripped = text.strip()
    if not re.fullmatch(rf"{pair}(?:;{pair})*", stripped):
        return None
    points: list[Point] = []
    for chunk in stripped.split(";"):
        xs, ys = (part.strip() for part in chunk.split(","))
        points.append((_exact(xs), _exact(ys)))
    if count is not None and len(points) != count:
        return None
    return points


def _exact(text: str) -> Num:
    value = Fraction(text)
    return value.numerator if value.denominator == 1 else value


def strict_decimal(text: str, max_decimals: int = 6) -> Fraction | None:
    """The whole stripped `text` as one plain decimal ("-12", "3.25"), else None."""
    if not isinstance(text, str) or len(text) > 64:
        return None
    stripped = text.strip()
    if not re.fullmatch(rf"-?[0-9]{{1,15}}(?:\.[0-9]{{1,{max_decimals}}})?", stripped):
        return None
    return Fraction(stripped)
