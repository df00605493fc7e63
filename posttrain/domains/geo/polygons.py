"""`geo/*` polygon tasks: a polygon's area, which points lie inside it, a point in a region.

    from posttrain.domains.geo.polygons import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=5)   # "A polygon has vertices ..."

- `geo/polygon-area-v1` (numeric): the area of a simple polygon given by its vertices
  in order (clockwise or counter-clockwise); passes within 0.005 of the true area.
  Difficulty grows the vertex count (4..13) and the coordinates' decimals (0, 1, 2).
- `geo/points-in-polygon-v1` (set_match): which labelled points lie strictly inside
  a polygon; some points sit exactly on edges or vertices and count as outside. The
  reward is the F1 of the label sets; only the exact set passes. Difficulty grows the
  vertex count and the number of points (5..23).
- `geo/point-in-region-v1` (geometry): any point strictly inside a polygon and
  strictly outside every circular hole; checked by exact predicates, so many answers
  pass. Difficulty grows the vertex count, the number of holes and their size.

Polygons are translated by a seed-drawn offset so another task's answer is elsewhere.

Not guaranteed: polygons are star-shaped (drawn around a centre), not arbitrary
simple polygons; the area answer needs a plain decimal (no fractions, no units).
"""

from __future__ import annotations

import random
from fractions import Fraction

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.geo.plane import (
    Point,
    is_simple,
    locate,
    num_text,
    parse_points,
    points_text,
    polygon_text,
    star_polygon,
    strict_decimal,
    twice_area,
)
from posttrain.types import Task, Verdict

_AREA_TOL = Fraction(1, 200)


def _vertex_count(difficulty: int) -> int:
    return 3 + difficulty


def _offset(rng: random.Random) -> tuple[int, int]:
    return rng.randint(-400, 400), rng.randint(-400, 400)


def _meta_polygon(poly: list[Point]) -> list[list[str]]:
    return [[str(x), str(y)] for x, y in poly]


def _polygon(meta: list[list[str]]) -> list[Point]:
    return [(Fraction(x), Fraction(y)) for x, y in meta]


class PolygonArea(AnswerDomain):
    """The area of a simple polygon by the shoelace formula."""

    id = "geo/polygon-area-v1"
    axes = Axes("geometry", "none", "single", "numeric")
    instructions = (
        "Reply with the area only, as a plain decimal number (no units, no fractions); "
        "answers within 0.005 of the true area are accepted."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = _vertex_count(difficulty)
        decimals = 0 if difficulty <= 4 else (1 if difficulty <= 7 else 2)
        poly = star_polygon(rng, n, _offset(rng), 4 + n / 2, 8 + n)
        if decimals:
            poly = _perturbed(rng, poly, 10**decimals)
        if rng.random() < 0.5:
            poly = poly[::-1]
        k = rng.randrange(n)
        poly = poly[k:] + poly[:k]
        area = abs(Fraction(twice_area(poly))) / 2
        prompt = (
            f"A simple polygon has these {n} vertices, listed in order around its "
            f"boundary: {polygon_text(poly)}. What is its area?"
        )
        meta = {"area": str(area), "polygon": _meta_polygon(poly)}
        return Problem(prompt, num_text(area, 4), meta, measure=n + 3 * decimals)

    def judge(self, task: Task, text: str) -> Verdict:
        got = strict_decimal(text)
        if got is None:
            return verdict(False, "the area as a plain decimal", why="not one plain decimal")
        area = Fraction(task.meta["area"])
        close = abs(got - area) <= _AREA_TOL
        return verdict(close, "the polygon's area within 0.005", why=f"got {text.strip()[:20]}")

    def wrong(self, task: Task) -> list[str]:
        area = Fraction(task.meta["area"])
        xs = [x for x, _ in _polygon(task.meta["polygon"])]
        ys = [y for _, y in _polygon(task.meta["polygon"])]
        box = (max(xs) - min(xs)) * (max(ys) - min(ys))
        wrong = [
            num_text(2 * area, 4),  # forgot to halve the shoelace sum
            num_text(area + 1, 4),
            num_text(-area, 4),  # the signed area of a clockwise listing
        ]
        if box - area > _AREA_TOL:  # an axis-aligned rectangle is its own bounding box
            wrong.append(num_text(box, 4))
        return wrong


def _perturbed(rng: random.Random, poly: list[Point], scale: int) -> list[Point]:
    """`poly` with each coordinate moved by a few 1/scale steps, still simple."""
    for _ in range(100):
        # Integer arithmetic in units of 1/scale keeps the simplicity test fast.
        moved: list[Point] = [
            (x * scale + rng.randint(-4, 4), y * scale + rng.randint(-4, 4)) for x, y in poly
        ]
        if is_simple(moved):
            return [(Fraction(x, scale), Fraction(y, scale)) for x, y in moved]
    return poly


class PointsInPolygon(AnswerDomain):
    """The labels of the points strictly inside a polygon (boundary counts as outside)."""

    id = "geo/points-in-polygon-v1"
    axes = Axes("geometry", "none", "single", "set_match")
    instructions = (
        "Reply with the labels of the points strictly inside the polygon, separated by "
        'commas (e.g. "P2,P5"), in any order; reply "none" if there are none. '
        "Points on an edge or a vertex are not inside."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = _vertex_count(difficulty)
        m = 3 + 2 * difficulty
        ox, oy = _offset(rng)
        poly = star_polygon(rng, n, (ox, oy), 4 + n / 2, 8 + n)
        xs, ys = [x for x, _ in poly], [y for _, y in poly]
        points: list[Point] = []
        kinds: list[str] = []
        wanted = ["inside", "boundary", "outside"] + [
            rng.choice(["inside", "inside", "outside", "boundary"]) for _ in range(m - 3)
        ]
        box = (int(min(xs)) - 2, int(max(xs)) + 2, int(min(ys)) - 2, int(max(ys)) + 2)
        for kind in wanted:
            p = self._draw(rng, poly, kind, box)
            while p in points:
                p = self._draw(rng, poly, kind, box)
            points.append(p)
            kinds.append(locate(p, poly))
        order = list(range(m))
        rng.shuffle(order)
        points = [points[i] for i in order]
        kinds = [kinds[i] for i in order]
        inside = [f"P{i + 1}" for i, k in enumerate(kinds) if k == "inside"]
        listing = "\n".join(f"P{i + 1} = ({num_text(x)}, {num_text(y)})" for i, (x, y) in enumerate(points))  # fmt: skip
        prompt = (
            f"A simple polygon has these {n} vertices, in order around its boundary: "
            f"{polygon_text(poly)}.\nPoints:\n{listing}\n"
            "Which of these points lie strictly inside the polygon?"
        )
        meta = {"kinds": kinds}
        return Problem(prompt, ",".join(inside), meta, measure=n + m)

    @staticmethod
    def _draw(rng: random.Random, poly: list[Point], kind: str, box: tuple[int, int, int, int]) -> Point:  # fmt: skip
        if kind == "boundary":
            i = rng.randrange(len(poly))
            a, b = poly[i], poly[(i + 1) % len(poly)]
            t = Fraction(rng.randint(0, 3), 4)  # a vertex or a quarter point of an edge
            return (a[0] + t * (b[0] - a[0]), a[1] + t * (b[1] - a[1]))
        for _ in range(1000):
            p: Point = (rng.randint(box[0], box[1]), rng.randint(box[2], box[3]))
            if locate(p, poly) == kind:
                return p
        raise RuntimeError(f"no {kind} point drawn")

    def judge(self, task: Task, text: str) -> Verdict:
        labels = _labels(text, len(task.meta["kinds"]))
        if labels is None:
            return verdict(False, 'point labels like "P2,P5" or "none"', why="unreadable")
        gold = {i for i, k in enumerate(task.meta["kinds"]) if k == "inside"}
        got = set(labels)
        hits = len(gold & got)
        if gold == got:
            return verdict(True, "the set of points strictly inside")
        f1 = 2 * hits / (len(gold) + len(got)) if gold or got else 1.0
        why = f"{hits} of {len(gold)} inside points, {len(got) - hits} extra"
        return verdict(False, "the set of points strictly inside", reward=f1, components={"f1": f1}, why=why)  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        kinds: list[str] = task.meta["kinds"]
        inside = [i for i, k in enumerate(kinds) if k == "inside"]
        boundary = [i for i, k in enumerate(kinds) if k == "boundary"]
        outside = [i for i, k in enumerate(kinds) if k == "outside"]

        def text(ids: list[int]) -> str:
            return ",".join(f"P{i + 1}" for i in sorted(ids)) or "none"

        return [
            text(inside + boundary),  # the boundary counted as inside
            text(inside[1:]),  # one inside point missed
            text(outside),  # the complement
            "none",
        ]


def _labels(text: str, count: int) -> list[int] | None:
    """Zero-based label indices from strict `P1,P3` text ("none" is []), else None."""
    if not isinstance(text, str) or len(text) > 2_000:
        return None
    stripped = text.strip()
    if stripped.lower() == "none":
        return []
    parts = [p.strip() for p in stripped.split(",")]
    out: list[int] = []
    for part in parts:
        if len(part) < 2 or part[0] not in "Pp" or not part[1:].isdigit() or not part[1:].isascii():  # fmt: skip
            return None
        i = int(part[1:]) - 1
        if not 0 <= i < count or i in out:
            return None
        out.append(i)
    return out


class PointInRegion(AnswerDomain):
    """Any point strictly inside a polygon and strictly outside its circular holes."""

    id = "geo/point-in-region-v1"
    axes = Axes("geometry", "none", "single", "geometry")
    instructions = (
        "Reply with one point as x,y (decimals allowed, at most 3 places), nothing else. "
        "Points on the polygon's boundary or on or inside a hole's circle are rejected."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = _vertex_count(difficulty)
        holes_wanted = 1 + difficulty // 2
        ox, oy = _offset(rng)
        poly = star_polygon(rng, n, (ox, oy), 5 + n / 2, 9 + n)
        xs, ys = [x for x, _ in poly], [y for _, y in poly]
        holes: list[tuple[int, int, int]] = []
        for _ in range(200):
            if len(holes) == holes_wanted:
                break
            c: Point = (rng.randint(int(min(xs)), int(max(xs))), rng.randint(int(min(ys)), int(max(ys))))  # fmt: skip
            if locate(c, poly) == "inside" and all(c != (hx, hy) for hx, hy, _ in holes):
                holes.append((int(c[0]), int(c[1]), rng.randint(1, 1 + difficulty // 3)))
        answer = _free_point(
            rng, poly, holes, (int(min(xs)), int(max(xs)), int(min(ys)), int(max(ys)))
        )
        hole_text = "; ".join(f"centre ({x}, {y}), radius {r}" for x, y, r in holes)
        prompt = (
            f"A simple polygon has these {n} vertices, in order around its boundary: "
            f"{polygon_text(poly)}.\nIt has {len(holes)} circular hole(s): {hole_text}.\n"
            "Give a point strictly inside the polygon and strictly outside every hole."
        )
        meta = {"polygon": _meta_polygon(poly), "holes": [list(h) for h in holes]}
        return Problem(prompt, points_text([answer]), meta, measure=n + 2 * len(holes))

    def judge(self, task: Task, text: str) -> Verdict:
        got = parse_points(text, count=1)
        if got is None:
            return verdict(False, "one point as x,y", why="not one point x,y")
        p = got[0]
        where = locate(p, _polygon(task.meta["polygon"]))
        if where != "inside":
            return verdict(False, "a point strictly inside the polygon", why=f"it is {where}")
        for x, y, r in task.meta["holes"]:
            if (p[0] - x) ** 2 + (p[1] - y) ** 2 <= r * r:
                return verdict(False, "a point outside every hole", why=f"it is in the hole at ({x}, {y})")  # fmt: skip
        return verdict(True, "a point inside the polygon and outside every hole")

    def wrong(self, task: Task) -> list[str]:
        poly = _polygon(task.meta["polygon"])
        x, y, _ = task.meta["holes"][0]
        a, b = poly[0], poly[1]
        far = max(px for px, _ in poly) + 3
        return [
            points_text([a]),  # a vertex: on the boundary
            points_text(
                [(Fraction(a[0] + b[0], 2), Fraction(a[1] + b[1], 2))]
            ),  # an edge's midpoint
            f"{x},{y}",  # a hole's centre
            points_text([(far, a[1])]),  # outside the polygon
        ]


def _free_point(
    rng: random.Random,
    poly: list[Point],
    holes: list[tuple[int, int, int]],
    box: tuple[int, int, int, int],
) -> Point:
    """A random half-integer point strictly inside `poly` and outside every hole."""
    for _ in range(5000):
        p: Point = (Fraction(rng.randint(2 * box[0], 2 * box[1]), 2), Fraction(rng.randint(2 * box[2], 2 * box[3]), 2))  # fmt: skip
        if all((p[0] - x) ** 2 + (p[1] - y) ** 2 > r * r for x, y, r in holes) and locate(p, poly) == "inside":  # fmt: skip
            return p
    raise RuntimeError("no free point in the region")


DOMAINS: tuple[AnswerDomain, ...] = (PolygonArea(), PointsInPolygon(), PointInRegion())
