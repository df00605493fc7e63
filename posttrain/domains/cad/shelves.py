"""`cad/scene-shelf-v1`: stock a shelving unit in 3D — boxes on shelves and on each other.

The prompt describes a unit of shelves (boards at given heights, all x 0..L, y 0..P) and
boxes with sizes, and rules: each box rests on a named support (a shelf or another box:
its bottom on the support's top, its footprint within the support's top face), fits
under the board above, stays inside the unit, no two boxes intersect, and some boxes
stand left of others on the same shelf. The answer is JSON `{"box name": [x, y, z], ...}`,
the lowest corner of each box (boxes are not rotated). Judged with axis-aligned boxes;
any arrangement meeting the rules passes. Difficulty d places 2 + d // 2 boxes on
1 + d // 4 shelves (`difficulty_measure` counts the boxes).

Not guaranteed: boards are treated as thin planes (their thickness is below their
stated top height); "left of" means the whole box is at smaller x.
"""

from __future__ import annotations

import json
import random
from typing import Any

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.types import Task, Verdict

NAMES = ("red box", "blue box", "green box", "toolbox", "crate", "jar", "lamp box", "file box", "tin", "basket", "radio", "parcel")  # fmt: skip
Box = tuple[float, float, float, float, float, float]  # x, y, z, w, d, h


def _intersect(a: Box, b: Box) -> bool:
    return all(a[i] < b[i] + b[i + 3] and b[i] < a[i] + a[i + 3] for i in range(3))


def _make_unit(rng: random.Random, difficulty: int) -> dict[str, Any]:
    count, shelves = 2 + difficulty // 2, 1 + difficulty // 4
    length, depth = rng.choice([80, 100, 120]) + 20 * shelves, rng.choice([30, 40])
    gaps = [rng.choice([30, 35, 40]) for _ in range(shelves)]
    tops = [sum(gaps[:i]) + 2 * i for i in range(shelves)]  # shelf i's board top; next board above
    for _ in range(300):
        names = rng.sample(NAMES, count)
        boxes: dict[str, Box] = {}
        supports: dict[str, str] = {}
        for name in names:
            size = (
                rng.choice([10, 15, 20, 25]),
                rng.choice([10, 15, 20]),
                rng.choice([8, 10, 12, 15]),
            )
            stack_on = [n for n in boxes if boxes[n][3] >= size[0] and boxes[n][4] >= size[1]]
            if stack_on and rng.random() < 0.35:
                under = stack_on[rng.randrange(len(stack_on))]
                b = boxes[under]
                spot = (
                    b[0] + rng.randrange(0, int(b[3] - size[0]) + 1, 5),
                    b[1],
                    b[2] + b[5],
                    *size,
                )
                shelf = supports[under] if supports[under].startswith("shelf") else supports[supports[under]]  # fmt: skip
                support = under
            else:
                k = rng.randrange(shelves)
                shelf = support = f"shelf {k + 1}"
                spot = (rng.randrange(0, length - size[0] + 1, 5), rng.randrange(0, depth - size[1] + 1, 5), tops[k], *size)  # fmt: skip
            k = int(shelf.split()[1]) - 1
            if spot[2] + spot[5] > tops[k] + gaps[k] or any(_intersect(spot, o) for o in boxes.values()):  # fmt: skip
                break
            boxes[name], supports[name] = spot, support
        else:
            lefts = [[a, b] for a in names for b in names if a < b and _shelf_of(a, supports) == _shelf_of(b, supports) and boxes[a][0] + boxes[a][3] <= boxes[b][0]]  # fmt: skip
            rng.shuffle(lefts)
            return {"length": length, "depth": depth, "tops": tops, "gaps": gaps, "names": names, "sizes": {n: list(boxes[n][3:]) for n in names}, "supports": supports, "left_of": lefts[: max(1, count // 3)], "answer": {n: list(boxes[n][:3]) for n in names}}  # fmt: skip
    raise RuntimeError("no arrangement found")  # pragma: no cover


def _shelf_of(name: str, supports: dict[str, str]) -> str:
    while not supports[name].startswith("shelf"):
        name = supports[name]
    return supports[name]


def _problems(unit: dict[str, Any], spots: dict[str, list[float]]) -> list[str]:
    boxes: dict[str, Box] = {n: (*spots[n], *unit["sizes"][n]) for n in unit["names"]}  # type: ignore[misc]
    problems = []
    for name, b in boxes.items():
        support = unit["supports"][name]
        if support.startswith("shelf"):
            k = int(support.split()[1]) - 1
            top, face = unit["tops"][k], (0.0, 0.0, float(unit["length"]), float(unit["depth"]))
        else:
            s = boxes[support]
            top, face = s[2] + s[5], (s[0], s[1], s[0] + s[3], s[1] + s[4])
        if abs(b[2] - top) > 0.01 or b[0] < face[0] - 0.01 or b[1] < face[1] - 0.01 or b[0] + b[3] > face[2] + 0.01 or b[1] + b[4] > face[3] + 0.01:  # fmt: skip
            problems.append(f"the {name} does not rest on the {support}")
        k = int(_shelf_of(name, unit["supports"]).split()[1]) - 1
        if b[2] + b[5] > unit["tops"][k] + unit["gaps"][k] + 0.01:
            problems.append(f"the {name} does not fit under the board above")
    names = unit["names"]
    problems += [f"the {a} and the {b} intersect" for i, a in enumerate(names) for b in names[i + 1 :] if _intersect(boxes[a], boxes[b])]  # fmt: skip
    problems += [f"the {a} is not left of the {b}" for a, b in unit["left_of"] if boxes[a][0] + boxes[a][3] > boxes[b][0] + 0.01]  # fmt: skip
    return problems


class SceneShelfDomain(AnswerDomain):
    """Place boxes on shelves and on each other, in 3D, meeting support and spacing rules."""

    id = "cad/scene-shelf-v1"
    axes = Axes("geometry", "none", "single", "geometry")
    instructions = (
        "Answer with one JSON object mapping every box name to [x, y, z], the coordinates (cm) of its lowest "
        "corner (smallest x, y and z); boxes keep the stated orientation. Reply with the JSON only: no prose, "
        "no Markdown fences."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        unit = _make_unit(rng, difficulty)
        answer = unit.pop("answer")
        lines = [f"A shelving unit {unit['length']} cm wide (x) and {unit['depth']} cm deep (y). Its shelves are boards whose top faces span x 0..{unit['length']}, y 0..{unit['depth']}:"]  # fmt: skip
        for k, (top, gap) in enumerate(zip(unit["tops"], unit["gaps"], strict=True), start=1):
            lines.append(f"- shelf {k}: top face at z = {top}; {gap} cm of clear height above it")
        lines.append("Boxes (x by y by z, in cm), each resting on its support:")
        for n in unit["names"]:
            w, d, h = unit["sizes"][n]
            lines.append(f"- {n}: {w:g} x {d:g} x {h:g}, on {'' if unit['supports'][n].startswith('shelf') else 'top of the '}{unit['supports'][n]}")  # fmt: skip
        lines.append(
            "Rules: a box rests on its support (its bottom at the support's top, its footprint within the support's "
            "top face); every box fits within the clear height of its shelf; no two boxes intersect (touching is fine)."
        )
        lines += [f"- the {a} stands entirely left of (at smaller x than) the {b}" for a, b in unit["left_of"]]  # fmt: skip
        return Problem("\n".join(lines), json.dumps(answer), {"unit": unit}, len(unit["names"]))

    def judge(self, task: Task, text: str) -> Verdict:
        unit = task.meta["unit"]
        stripped = text.strip()
        data: Any = None
        if stripped.startswith("{") and len(stripped) < 10_000:
            try:
                data = json.loads(stripped)
            except (ValueError, RecursionError):  # ValueError: bad JSON, or an int over 4300 digits
                data = None
        ok = (
            isinstance(data, dict)
            and sorted(data) == sorted(unit["names"])
            and all(
                isinstance(v, list)
                and len(v) == 3
                and all(
                    isinstance(x, int | float) and not isinstance(x, bool) and abs(x) < 1e5
                    for x in v
                )
                for v in data.values()  # fmt: skip
            )
        )
        if not ok:
            return Verdict(0.0, False, "The answer is not a JSON object of [x, y, z] for exactly the named boxes.", {"format": 0.0, "rules": 0.0})  # fmt: skip
        problems = _problems(unit, data)
        if problems:
            share = 1 - min(1.0, len(problems) / max(1, len(unit["names"])))
            return Verdict(round(0.2 + 0.6 * share, 6), False, "The arrangement breaks rules: " + "; ".join(problems[:5]) + ".", {"format": 1.0, "rules": 0.0})  # fmt: skip
        return Verdict(1.0, True, "Every box rests on its support and every rule holds.", {"format": 1.0, "rules": 1.0})  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        """A floating box, two boxes in one place, a box sunk through its support, JSON cut short."""
        answer = json.loads(task.answer)
        names = task.meta["unit"]["names"]
        floating = {**answer, names[0]: [answer[names[0]][0], answer[names[0]][1], answer[names[0]][2] + 5]}  # fmt: skip
        same = {**answer, names[1]: list(answer[names[0]])}
        sunk = {**answer, names[-1]: [answer[names[-1]][0], answer[names[-1]][1], answer[names[-1]][2] - 3]}  # fmt: skip
        return [json.dumps(floating), json.dumps(same), json.dumps(sunk), task.answer[:-2]]


DOMAINS = (SceneShelfDomain(),)
