"""`geo/box-union-v1`: the volume and surface area of a solid made of touching boxes.

    from posttrain.domains.geo.solids import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=5)   # "A solid is the union of 3 ..."

The solid is a union of axis-aligned boxes that never overlap in volume but touch
face to face, so the faces they share are inside the solid and not part of its
surface. The answer is `volume,surface_area`; each number passes within 0.01 (numeric
verification). The reward is 1 when both pass, 0.5 when one does, 0 otherwise.
Truth is counted on a voxel grid, so it is exact.

Difficulty grows the number of boxes (1..6), the grid they are placed on, and from
difficulty 6 coordinates move in steps of 0.5.

Not guaranteed: boxes are placed touching an earlier box where a random placement
allows it, so a solid can still fall apart into separate pieces (its surface is
then the sum of the pieces'); no holes or hidden cavities are promised either way.
"""

from __future__ import annotations

import random
from fractions import Fraction

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.geo.plane import num_text, strict_decimal
from posttrain.types import Task, Verdict

Voxel = tuple[int, int, int]
Box = tuple[int, int, int, int, int, int]  # x0, y0, z0, x1, y1, z1 in grid steps

_TOL = Fraction(1, 100)
_NEIGHBOURS = ((1, 0, 0), (-1, 0, 0), (0, 1, 0), (0, -1, 0), (0, 0, 1), (0, 0, -1))


def _voxels(box: Box) -> list[Voxel]:
    x0, y0, z0, x1, y1, z1 = box
    return [(x, y, z) for x in range(x0, x1) for y in range(y0, y1) for z in range(z0, z1)]


def _exposed_faces(cells: set[Voxel]) -> int:
    return sum(
        (x + dx, y + dy, z + dz) not in cells for x, y, z in cells for dx, dy, dz in _NEIGHBOURS
    )


class BoxUnion(AnswerDomain):
    """Volume and surface area of a union of face-touching axis-aligned boxes."""

    id = "geo/box-union-v1"
    axes = Axes("geometry", "none", "single", "numeric")
    instructions = (
        "Reply as volume,surface_area: two plain decimal numbers separated by a comma "
        '(e.g. "24,52"), nothing else; each is accepted within 0.01.'
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        k = 1 + difficulty // 2
        step = Fraction(1, 2) if difficulty >= 6 else Fraction(1)
        grid = 4 + difficulty
        biggest = 3 if step == 1 else 5
        boxes: list[Box] = []
        cells: set[Voxel] = set()
        for _ in range(400):
            if len(boxes) == k:
                break
            w, d, h = (rng.randint(1, biggest) for _ in range(3))
            x, y, z = rng.randint(0, grid - w), rng.randint(0, grid - d), rng.randint(0, grid - h)
            box = (x, y, z, x + w, y + d, z + h)
            new = _voxels(box)
            if any(v in cells for v in new):
                continue
            touches = any((a + dx, b + dy, c + dz) in cells for a, b, c in new for dx, dy, dz in _NEIGHBOURS)  # fmt: skip
            if boxes and not touches:
                continue
            boxes.append(box)
            cells.update(new)
        volume = len(cells) * step**3
        surface = _exposed_faces(cells) * step**2
        separate = sum(_exposed_faces(set(_voxels(b))) for b in boxes) * step**2
        ox, oy, oz = (rng.randint(-50, 50) for _ in range(3))
        lines = [
            f"box {i + 1}: from ({num_text(ox + b[0] * step)}, {num_text(oy + b[1] * step)}, "
            f"{num_text(oz + b[2] * step)}) to ({num_text(ox + b[3] * step)}, "
            f"{num_text(oy + b[4] * step)}, {num_text(oz + b[5] * step)})"
            for i, b in enumerate(boxes)
        ]
        prompt = (
            f"A solid is the union of these {len(boxes)} axis-aligned boxes, each given by "
            "two opposite corners. No two boxes overlap in volume, but they may touch; "
            "faces where boxes touch are inside the solid, not on its surface.\n"
            + "\n".join(lines)
            + "\nWhat are the solid's volume and total surface area?"
        )
        meta = {"volume": str(volume), "surface": str(surface), "separate": str(separate)}
        answer = f"{num_text(volume)},{num_text(surface)}"
        return Problem(prompt, answer, meta, measure=k + 3 * (step < 1))

    def judge(self, task: Task, text: str) -> Verdict:
        what = "volume,surface_area within 0.01 each"
        if not isinstance(text, str) or len(text) > 200 or text.count(",") != 1:
            return verdict(False, what, why="not two numbers separated by a comma")
        first, second = text.split(",")
        volume, surface = strict_decimal(first), strict_decimal(second)
        if volume is None or surface is None:
            return verdict(False, what, why="not two plain decimal numbers")
        good_v = abs(volume - Fraction(task.meta["volume"])) <= _TOL
        good_s = abs(surface - Fraction(task.meta["surface"])) <= _TOL
        parts = {"volume": float(good_v), "surface": float(good_s)}
        why = "the volume is wrong" if not good_v else "the surface area is wrong"
        return verdict(good_v and good_s, what, components=parts, reward=(good_v + good_s) / 2, why=why)  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        v, s = Fraction(task.meta["volume"]), Fraction(task.meta["surface"])
        separate = Fraction(task.meta["separate"])
        wrong = [
            f"{num_text(2 * v)},{num_text(2 * s)}",
            f"{num_text(v + 1)},{num_text(s)}",
            f"{num_text(v)},{num_text(s + 2)}",
        ]
        if separate != s:  # shared faces counted as surface
            wrong.append(f"{num_text(v)},{num_text(separate)}")
        if abs(v - s) > 2 * _TOL:
            wrong.append(f"{num_text(s)},{num_text(v)}")  # the two swapped
        return wrong


DOMAINS: tuple[AnswerDomain, ...] = (BoxUnion(),)
