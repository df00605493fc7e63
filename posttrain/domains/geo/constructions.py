"""`geo/*` constructions: build an object that satisfies geometric constraints.

    from posttrain.domains.geo.constructions import DOMAINS
    task = DOMAINS[1].generate(seed=0, difficulty=5)   # "A container 11 wide ..."

- `geo/lattice-triangle-v1` (geometry): a triangle with integer vertices inside a
  given square, of an exactly stated area, with given points strictly inside it (on
  an edge does not count). Any such triangle passes. Instances are made by drawing
  a triangle and points inside it, so one always exists. Difficulty grows the number
  of points to enclose (1..4) and the square's size.
- `geo/rect-packing-v1` (validity): lower-left corners for k axis-aligned rectangles
  (no rotation) inside a container with no two overlapping in area; any valid
  packing passes. Instances come from cutting the container guillotine-style, then
  shrinking some pieces; from difficulty 8 on, nothing shrinks and the rectangles
  tile the container exactly. Difficulty grows k (2..11) and the fill.

Both are binary: every constraint holds (reward 1) or the answer fails (reward 0),
with the first broken constraint as the reason.

Not guaranteed: the checks are exact on integers, so answers must use integers as
the prompts say; the packing generator's pieces are guillotine cuts, a subset of
all packings, but the verifier accepts any valid packing.
"""

from __future__ import annotations

import random
from fractions import Fraction

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.geo.plane import Point, cross, locate, num_text, parse_points, points_text
from posttrain.types import Task, Verdict


class LatticeTriangle(AnswerDomain):
    """A lattice triangle of a given area, in a square, around given points."""

    id = "geo/lattice-triangle-v1"
    axes = Axes("geometry", "none", "single", "geometry")
    instructions = (
        "Reply with the three vertices as x1,y1;x2,y2;x3,y3 using integers only, "
        "nothing else. Any valid triangle is accepted."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        size = 8 + 2 * difficulty
        k = 1 + (difficulty - 1) // 3
        ox, oy = rng.randint(-300, 300), rng.randint(-300, 300)
        while True:
            tri: list[Point] = [
                (ox + rng.randint(0, size), oy + rng.randint(0, size)) for _ in range(3)
            ]
            if abs(cross(*tri)) >= size * size // 3:  # room for points strictly inside
                break
        xs, ys = [int(x) for x, _ in tri], [int(y) for _, y in tri]
        points: list[Point] = []
        while len(points) < k:
            p: Point = (
                Fraction(rng.randint(2 * min(xs), 2 * max(xs)), 2),
                Fraction(rng.randint(2 * min(ys), 2 * max(ys)), 2),
            )
            if p not in points and locate(p, tri) == "inside":
                points.append(p)
        area = Fraction(abs(cross(*tri)), 2)
        listing = ", ".join(f"({num_text(x)}, {num_text(y)})" for x, y in points)
        prompt = (
            f"Give a triangle whose three vertices have integer coordinates with "
            f"{ox} <= x <= {ox + size} and {oy} <= y <= {oy + size}, whose area is exactly "
            f"{num_text(area)}, and which contains each of these points strictly inside "
            f"(not on an edge): {listing}."
        )
        meta = {
            "box": [ox, oy, size],
            "twice_area": int(2 * area),
            "points": [[str(x), str(y)] for x, y in points],
        }
        return Problem(prompt, points_text(tri), meta, measure=k + size / 10)

    def judge(self, task: Task, text: str) -> Verdict:
        tri = parse_points(text, count=3, max_decimals=0)
        if tri is None:
            return verdict(False, "three integer vertices x1,y1;x2,y2;x3,y3", why="unreadable")
        ox, oy, size = task.meta["box"]
        if not all(ox <= x <= ox + size and oy <= y <= oy + size for x, y in tri):
            return verdict(False, "vertices inside the square", why="a vertex is outside it")
        if abs(cross(*tri)) != task.meta["twice_area"]:
            return verdict(False, "the stated area", why=f"its area is {num_text(abs(cross(*tri)) / 2)}")  # fmt: skip
        for x, y in task.meta["points"]:
            where = locate((Fraction(x), Fraction(y)), tri)
            if where != "inside":
                return verdict(False, "every given point strictly inside", why=f"({x}, {y}) is {where}")  # fmt: skip
        return verdict(True, "a lattice triangle of the area around every point")

    def wrong(self, task: Task) -> list[str]:
        tri = parse_points(task.answer, count=3, max_decimals=0) or []
        (ax, ay), (bx, by), (cx, cy) = tri
        size = task.meta["box"][2]
        return [
            points_text([(x + size + 5, y) for x, y in tri]),  # right shape, outside the square
            points_text([(ax, ay), (bx, by), (2 * bx - ax, 2 * by - ay)]),  # degenerate
            points_text(
                [(ax, ay), (2 * bx - ax, 2 * by - ay), (2 * cx - ax, 2 * cy - ay)]
            ),  # 4x area
            ",".join(f"({x},{y})" for x, y in tri),  # not the stated format
        ]


class RectPacking(AnswerDomain):
    """Place k rectangles inside a container without overlap."""

    id = "geo/rect-packing-v1"
    axes = Axes("geometry", "none", "single", "validity")
    instructions = (
        "Reply with the lower-left corner of each rectangle as x,y with integer "
        "coordinates, in the order R1, R2, ..., separated by semicolons "
        '(e.g. "0,0;3,0;0,2"), nothing else. Any valid placement is accepted.'
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        k = 1 + difficulty
        width, height = 5 + difficulty, 4 + difficulty
        # A seed-drawn origin keeps another task's packing from fitting this container.
        ox, oy = rng.randint(-60, 60), rng.randint(-60, 60)
        pieces = [(ox, oy, width, height)]
        while len(pieces) < k:
            pieces.sort(key=lambda r: -(r[2] * r[3]))
            x, y, w, h = pieces.pop(0)
            if w >= h and w >= 2:
                cut = rng.randint(1, w - 1)
                pieces += [(x, y, cut, h), (x + cut, y, w - cut, h)]
            else:
                cut = rng.randint(1, h - 1)
                pieces += [(x, y, w, cut), (x, y + cut, w, h - cut)]
        rng.shuffle(pieces)
        slack = 0.0 if difficulty >= 8 else 0.5 - difficulty / 16
        sized = [
            (
                x,
                y,
                max(1, w - 1) if rng.random() < slack else w,
                max(1, h - 1) if rng.random() < slack else h,
            )  # fmt: skip
            for x, y, w, h in pieces
        ]
        listing = "\n".join(f"R{i + 1}: {w} wide, {h} tall" for i, (_, _, w, h) in enumerate(sized))
        prompt = (
            f"A rectangular container spans {ox} <= x <= {ox + width} and "
            f"{oy} <= y <= {oy + height}. "
            f"Place these {k} rectangles inside it, axis-aligned and without rotating "
            "them, so that no two overlap (sharing an edge is allowed):\n" + listing
        )
        fill = sum(w * h for _, _, w, h in sized) / (width * height)
        meta = {"container": [ox, oy, width, height], "sizes": [[w, h] for _, _, w, h in sized]}
        answer = ";".join(f"{x},{y}" for x, y, _, _ in sized)
        return Problem(prompt, answer, meta, measure=k + fill)

    def judge(self, task: Task, text: str) -> Verdict:
        sizes: list[list[int]] = task.meta["sizes"]
        corners = parse_points(text, count=len(sizes), max_decimals=0)
        if corners is None:
            return verdict(False, f"{len(sizes)} integer corners x,y separated by ';'", why="unreadable")  # fmt: skip
        ox, oy, width, height = task.meta["container"]
        boxes = [(x, y, x + w, y + h) for (x, y), (w, h) in zip(corners, sizes, strict=True)]
        for i, (x0, y0, x1, y1) in enumerate(boxes):
            if x0 < ox or y0 < oy or x1 > ox + width or y1 > oy + height:
                return verdict(False, "every rectangle inside the container", why=f"R{i + 1} sticks out")  # fmt: skip
        for i, a in enumerate(boxes):
            for j in range(i + 1, len(boxes)):
                b = boxes[j]
                if a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]:
                    return verdict(False, "no two rectangles overlapping", why=f"R{i + 1} overlaps R{j + 1}")  # fmt: skip
        return verdict(True, "a valid packing")

    def wrong(self, task: Task) -> list[str]:
        corners = parse_points(task.answer, max_decimals=0) or []
        ox, oy, width, _ = task.meta["container"]
        moved = [(ox + width, corners[0][1])] + corners[1:]  # R1 pushed past the right wall
        stacked = [corners[0], corners[0]] + corners[2:]  # R2 on top of R1
        return [
            ";".join(f"{ox},{oy}" for _ in corners),  # all in one corner
            points_text(moved),
            points_text(stacked),
            points_text(corners[:-1]),  # one rectangle left out
        ]


DOMAINS: tuple[AnswerDomain, ...] = (LatticeTriangle(), RectPacking())
