"""`geo/*` point-set tasks: a convex hull in canonical order, where two segments meet.

    from posttrain.domains.geo.segments import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=5)   # "Here are 15 points ..."

- `geo/convex-hull-v1` (exact): the vertices of the convex hull of a point set,
  counter-clockwise, starting from the lowest point (leftmost among the lowest),
  without points that lie on a hull edge between two vertices. Exactly one list
  passes. From difficulty 3, points are added on hull edges as traps. Difficulty
  grows the number of points (7..25) and their spread.
- `geo/segment-intersection-v1` (numeric): where two segments meet, as a point within
  0.001 of the exact intersection in each coordinate, or "none" when they do not
  meet. Collinear overlapping segments are never drawn; touching at an endpoint
  counts as meeting. Difficulty grows the coordinate range, and from difficulty 6
  endpoints carry one decimal.

Scenes are translated by a seed-drawn offset so another task's answer is elsewhere.

Not guaranteed: about half the segment tasks answer "none"; the hull answer must use
the exact order stated (a clockwise listing or another start vertex scores 0).
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.geo.plane import (
    Point,
    convex_hull,
    cross,
    num_text,
    parse_points,
    points_text,
    segments_meet,
)
from posttrain.types import Task, Verdict


class ConvexHull(AnswerDomain):
    """The strict convex hull's vertices, counter-clockwise from the lowest-leftmost."""

    id = "geo/convex-hull-v1"
    axes = Axes("geometry", "none", "single", "exact")
    instructions = (
        "Reply with the hull's vertices as x1,y1;x2,y2;... (integers), counter-clockwise, "
        "starting from the vertex with the smallest y (the smallest x among ties), "
        "nothing else. Points lying on a hull edge between two vertices are not vertices."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        m = 5 + 2 * difficulty
        spread = 6 + difficulty
        ox, oy = rng.randint(-300, 300), rng.randint(-300, 300)
        while True:
            points: list[Point] = []
            while len(points) < m:
                p: Point = (ox + rng.randint(0, spread), oy + rng.randint(0, spread))
                if p not in points:
                    points.append(p)
            hull = convex_hull(points)
            if len(hull) >= 3:
                break
        if difficulty >= 3:
            points += _edge_traps(rng, hull, points, 1 + difficulty // 4)
        rng.shuffle(points)
        prompt = (
            f"Here are {len(points)} points in the plane: "
            + ", ".join(f"({x}, {y})" for x, y in points)
            + ".\nList the vertices of their convex hull."
        )
        return Problem(prompt, points_text(hull), {"count": len(points)}, measure=len(points))

    def judge(self, task: Task, text: str) -> Verdict:
        got = parse_points(text, max_decimals=0)
        if got is None:
            return verdict(False, "integer vertices x1,y1;x2,y2;...", why="unreadable")
        gold = parse_points(task.answer, max_decimals=0) or []
        if got == gold:
            return verdict(True, "the hull's vertices in the stated order")
        why = "same vertices, wrong order or start" if sorted(got) == sorted(gold) else "other vertices"  # fmt: skip
        return verdict(False, "the hull's vertices in the stated order", why=why)

    def wrong(self, task: Task) -> list[str]:
        hull = parse_points(task.answer, max_decimals=0) or []
        clockwise = hull[:1] + hull[:0:-1]
        inner = (
            (hull[0][0] + hull[1][0] + hull[2][0]) / 3,  # the centroid of three vertices
            (hull[0][1] + hull[1][1] + hull[2][1]) / 3,
        )
        return [
            points_text(clockwise),
            points_text(hull[1:] + hull[:1]),  # another start vertex
            points_text(hull[:-1]),  # a vertex missed
            points_text(hull + [(round(inner[0]), round(inner[1]))]),  # an extra point
        ]


def _edge_traps(rng: random.Random, hull: list[Point], points: list[Point], count: int) -> list[Point]:  # fmt: skip
    """Up to `count` new lattice points strictly inside hull edges."""
    traps: list[Point] = []
    for _ in range(4 * count):
        if len(traps) == count:
            break
        i = rng.randrange(len(hull))
        a, b = hull[i], hull[(i + 1) % len(hull)]
        steps = math.gcd(int(b[0] - a[0]), int(b[1] - a[1]))
        if steps < 2:
            continue
        t = rng.randint(1, steps - 1)
        p: Point = (a[0] + (b[0] - a[0]) // steps * t, a[1] + (b[1] - a[1]) // steps * t)
        if p not in points and p not in traps:
            traps.append(p)
    return traps


class SegmentIntersection(AnswerDomain):
    """Where two segments meet, or "none"."""

    id = "geo/segment-intersection-v1"
    axes = Axes("geometry", "none", "single", "numeric")
    instructions = (
        "If the segments share a point, reply with it as x,y (at most 3 decimal places; "
        "each coordinate within 0.001 is accepted); if they do not meet, reply none. "
        "Nothing else."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        reach = 5 + 5 * difficulty
        scale = 10 if difficulty >= 6 else 1
        ox, oy = rng.randint(-500, 500), rng.randint(-500, 500)
        meet = rng.random() < 0.5

        def end() -> Point:
            return (
                ox + Fraction(rng.randint(0, reach * scale), scale),
                oy + Fraction(rng.randint(0, reach * scale), scale),
            )

        while True:
            a, b, c, d = end(), end(), end(), end()
            if a == b or c == d:
                continue
            parallel = cross((0, 0), (b[0] - a[0], b[1] - a[1]), (d[0] - c[0], d[1] - c[1])) == 0  # fmt: skip
            if segments_meet(a, b, c, d) == meet and not (meet and parallel):
                break
        answer = points_text([_line_point(a, b, c, d)]) if meet else "none"
        prompt = (
            f"Segment A runs from ({num_text(a[0])}, {num_text(a[1])}) to "
            f"({num_text(b[0])}, {num_text(b[1])}). Segment B runs from "
            f"({num_text(c[0])}, {num_text(c[1])}) to ({num_text(d[0])}, {num_text(d[1])}).\n"
            "Do the two segments meet, and if so, where?"
        )
        meta = {"ends": [[str(v) for v in p] for p in (a, b, c, d)]}
        return Problem(prompt, answer, meta, measure=reach / 5 + 3 * (scale > 1))

    def judge(self, task: Task, text: str) -> Verdict:
        a, b, c, d = ((Fraction(x), Fraction(y)) for x, y in task.meta["ends"])
        if not isinstance(text, str) or len(text) > 200:
            return verdict(False, 'a point x,y or "none"', why="unreadable")
        said_none = text.strip().lower() == "none"
        got = None if said_none else parse_points(text, count=1)
        if not said_none and got is None:
            return verdict(False, 'a point x,y or "none"', why="unreadable")
        if task.answer == "none":
            return verdict(said_none, '"none": the segments do not meet', why="they do not meet")
        if got is None:
            return verdict(False, "the meeting point", why="the segments do meet")
        gold = _line_point(a, b, c, d)
        tol = Fraction(1, 1000)
        close = abs(got[0][0] - gold[0]) <= tol and abs(got[0][1] - gold[1]) <= tol
        return verdict(close, "the meeting point within 0.001", why=f"got {text.strip()[:30]}")

    def wrong(self, task: Task) -> list[str]:
        a, b, c, d = ((Fraction(x), Fraction(y)) for x, y in task.meta["ends"])
        if task.answer == "none":
            line = _line_point(a, b, c, d) if _crosses(a, b, c, d) else ((a[0] + b[0]) / 2, (a[1] + b[1]) / 2)  # fmt: skip
            return [points_text([line]), points_text([a]), points_text([c])]
        x, y = _line_point(a, b, c, d)
        swapped = (y, x) if abs(x - y) > Fraction(1, 100) else (x + 1, y)
        return ["none", points_text([swapped]), points_text([(x + Fraction(1, 2), y)]), points_text([(x, y - Fraction(1, 2))])]  # fmt: skip


def _crosses(a: Point, b: Point, c: Point, d: Point) -> bool:
    """Whether the infinite lines through a-b and c-d are not parallel."""
    return cross((0, 0), (b[0] - a[0], b[1] - a[1]), (d[0] - c[0], d[1] - c[1])) != 0


def _line_point(a: Point, b: Point, c: Point, d: Point) -> tuple[Fraction, Fraction]:
    """Where the lines through a-b and c-d cross (they must not be parallel)."""
    r = (b[0] - a[0], b[1] - a[1])
    s = (d[0] - c[0], d[1] - c[1])
    t = Fraction(cross((0, 0), (c[0] - a[0], c[1] - a[1]), s)) / cross((0, 0), r, s)
    return (Fraction(a[0] + t * r[0]), Fraction(a[1] + t * r[1]))


DOMAINS: tuple[AnswerDomain, ...] = (ConvexHull(), SegmentIntersection())
