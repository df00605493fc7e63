"""The CSG domains: answer in our JSON CSG (csg.py), verified by manifold3d without OpenSCAD.

- `cad/csg-part-v2` (geometry): a part spec (parts.py); the answer is the part as a
  CSG JSON tree, judged like an OpenSCAD answer (judge.py) after `build`.
- `cad/csg-volume-v1` (numeric): a part given as a CSG tree; the answer is its volume
  in cm³ with two decimals, right within 1% (cylinders are taken as true cylinders:
  the reference is built with 64 segments, within 0.2% of exact circles).
- `cad/csg-enclosure-v2` (validity): design a tray that holds given devices — any
  design passes that fits the envelope, leaves every device's pocket and the space
  above it empty, has walls and floor at least the asked thickness around each
  device, has the asked drain holes, is one watertight body and stays within the
  material budget. Judged only by those constraints, never against a reference shape.

The answer is the JSON alone (one object, no prose, no fences). Difficulty d sets
d + 2 holes (part and volume) or d + 1 devices and holes (enclosure); that count is
`difficulty_measure`. v2 of part and enclosure: answers over the cost budget now fail.

Not guaranteed: verifying a reference-sized tree takes up to ~0.2 s on a loaded CPU
(booleans of a few thousand triangles); an answer over csg.py's `COST_BUDGET` fails
without being built, and one just under it can take ~2 s (see csg.py). `csg-volume` accepts 1% either way, so a faceted or
slightly approximated calculation can pass.
"""

from __future__ import annotations

import copy
import random
from typing import Any

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.domains.cad.csg import (  # fmt: skip
    CsgError,
    build,
    cube,
    cylinder,
    difference,
    dumps,
    parse_csg,
    translate,
    union,
)
from posttrain.domains.cad.judge import failed_probes, judge_part
from posttrain.domains.cad.parts import KINDS, draw_params, make_part
from posttrain.types import Task, Verdict
from posttrain.verify.geometry import LoadedMesh, bounds_of

CSG_FORMAT = (
    "Answer with one JSON object in this CSG format (units mm; OpenSCAD semantics): "
    '{"op": "cube", "size": [x, y, z], "center": false}; '
    '{"op": "cylinder", "h": h, "r": r, "center": false} (along +z from z = 0, or centred on the '
    'origin when center is true; "d" may replace "r"); {"op": "sphere", "r": r}; '
    '{"op": "translate", "v": [x, y, z], "children": [...]}; {"op": "rotate", "a": [ax, ay, az], '
    '"children": [...]} (degrees, about x, then y, then z); {"op": "union" | "difference" | '
    '"intersection", "children": [...]} (difference subtracts every later child from the first). '
    "Reply with the JSON only: no prose and no Markdown fences."
)


def _tree_of(text: str) -> tuple[dict[str, Any] | None, str]:
    """The parsed tree, or None and why not (strict: the text must be the JSON alone)."""
    if "```" in text:
        return None, "the answer must be bare JSON, without Markdown fences"
    try:
        return parse_csg(text.strip()), ""
    except CsgError as exc:
        return None, str(exc)


def _solid_of(tree: dict[str, Any]) -> LoadedMesh:
    solid = build(tree)
    if solid.status().name != "NoError" or solid.is_empty():
        return LoadedMesh(None, False, 0, None, "the tree describes no solid")
    return LoadedMesh(solid, True, solid.num_tri(), bounds_of(solid))


class CsgPartDomain(AnswerDomain):
    """Write a part spec as a CSG tree."""

    id = "cad/csg-part-v2"
    axes = Axes("geometry", "none", "single", "geometry")
    instructions = CSG_FORMAT

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        kind = KINDS[rng.randrange(len(KINDS))]
        part = make_part(kind, draw_params(kind, rng, difficulty + 2))
        meta = {"part": {"tree": part.tree, "probes": part.probes, "genus": part.genus}}
        return Problem(f"Describe this part as a CSG tree.\n\n{part.text}", dumps(part.tree), meta, part.features)  # fmt: skip

    def judge(self, task: Task, text: str) -> Verdict:
        tree, why = _tree_of(text)
        if tree is None:
            return Verdict(0.0, False, f"The answer is not a valid CSG tree: {why}.", {"parses": 0.0})  # fmt: skip
        verdict = judge_part(task.meta["part"], _solid_of(tree))
        verdict.components = {"parses": 1.0, **verdict.components}
        return verdict

    def wrong(self, task: Task) -> list[str]:
        """A wrong dimension, a missing hole, the part shifted 5 mm, truncated JSON."""
        tree = task.meta["part"]["tree"]
        longer = copy.deepcopy(tree)
        first = longer["children"][0]
        while first["op"] not in ("cube", "cylinder"):
            first = first["children"][0]
        if first["op"] == "cube":
            first["size"][0] *= 1.15
        else:
            first["r"] *= 1.15
        missing = copy.deepcopy(tree)
        missing["children"] = missing["children"][:-1]
        return [dumps(longer), dumps(missing), dumps(translate([5, 0, 0], tree)), task.answer[:-2]]


class CsgVolumeDomain(AnswerDomain):
    """Compute the volume of a part given as a CSG tree."""

    id = "cad/csg-volume-v1"
    axes = Axes("geometry", "none", "single", "numeric")
    instructions = (
        "Reply with the volume in cubic centimetres (1 cm³ = 1000 mm³) as a number with two "
        "decimals, like 12.34, and nothing else. Answers within 1% count."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        kind = KINDS[rng.randrange(len(KINDS))]
        part = make_part(kind, draw_params(kind, rng, difficulty + 2))
        volume = build(part.tree, segments=64).volume()
        solid_only = build(part.tree["children"][0], segments=64).volume()
        prompt = (
            "This solid is given as a CSG tree in JSON (units mm; OpenSCAD semantics: cylinders stand "
            "along +z from z = 0 unless centred, rotations are in degrees about x, then y, then z, and a "
            "difference subtracts every later child from the first). Treat cylinders as exact circular "
            f"cylinders. What is its volume?\n\n{dumps(part.tree)}"
        )
        meta = {"volume_mm3": volume, "uncut_mm3": solid_only}
        return Problem(prompt, f"{volume / 1000:.2f}", meta, part.features)

    def judge(self, task: Task, text: str) -> Verdict:
        stripped = text.strip()
        try:
            value = float(stripped) if _plain_number(stripped) else None
        except ValueError:
            value = None
        if value is None:
            return Verdict(0.0, False, "The answer is not a plain decimal number.", {"format": 0.0, "correct": 0.0})  # fmt: skip
        want = task.meta["volume_mm3"] / 1000
        close = abs(value - want) <= 0.01 * want
        reason = "The volume is right within 1%." if close else f"The volume is off by more than 1% (expected about {want:.2f} cm³)."  # fmt: skip
        return Verdict(float(close), close, reason, {"format": 1.0, "correct": float(close)})

    def wrong(self, task: Task) -> list[str]:
        """5% high, 5% low, the volume in mm³, and the body before its holes were cut."""
        v = task.meta["volume_mm3"] / 1000
        uncut = task.meta["uncut_mm3"] / 1000
        uncut_text = f"{uncut:.2f}" if abs(uncut - v) > 0.02 * v else f"{v * 1.1:.2f}"
        return [f"{v * 1.05:.2f}", f"{v * 0.95:.2f}", f"{v * 1000:.2f}", uncut_text]


def _plain_number(text: str) -> bool:
    body = text[1:] if text[:1] == "-" else text
    digits = body.replace(".", "", 1)
    return 0 < len(text) <= 30 and digits.isdigit()


# ----------------------------------------------------------------------------- enclosure


def _tray(rng: random.Random, count: int) -> dict[str, Any]:
    """Devices in a row along x, each in its own pocket, and drain holes under some."""
    wall = rng.choice([2.0, 2.5, 3.0])
    floor = rng.choice([2.0, 3.0])
    devices = [[rng.choice([20.0, 25.0, 30.0, 35.0]), rng.choice([20.0, 30.0, 40.0]), rng.choice([10.0, 15.0, 20.0])] for _ in range(max(1, (count + 1) // 2))]  # fmt: skip
    holes = count - len(devices)
    x = wall
    placed = []
    for size in devices:
        placed.append([x, wall, floor, *size])
        x += size[0] + wall
    length = x
    width = max(d[1] for d in devices) + 2 * wall
    height = floor + max(d[2] for d in devices)
    hole_d = rng.choice([3.0, 4.0])
    drains = [[p[0] + p[3] / 2, p[1] + p[4] / 2] for p in placed][:holes]
    envelope = [length + rng.choice([0.0, 4.0, 8.0]), width + rng.choice([0.0, 4.0, 8.0]), height + rng.choice([0.0, 5.0])]  # fmt: skip
    return {"wall": wall, "floor": floor, "devices": placed, "drains": drains, "hole_d": hole_d, "envelope": envelope, "size": [length, width, height]}  # fmt: skip


def _tray_tree(spec: dict[str, Any], wall: float | None = None) -> dict[str, Any]:
    w = spec["wall"] if wall is None else wall
    length, width, height = spec["size"]
    pockets = [translate([p[0] - spec["wall"] + w, p[1] - spec["wall"] + w, p[2]], cube(p[3] + 2 * (spec["wall"] - w), p[4] + 2 * (spec["wall"] - w), height)) for p in spec["devices"]]  # fmt: skip
    drains = [translate([x, y, -1], cylinder(spec["floor"] + 2, spec["hole_d"] / 2)) for x, y in spec["drains"]]  # fmt: skip
    return difference(cube(length, width, height), *pockets, *drains)


def _tray_probes(spec: dict[str, Any]) -> list[dict[str, Any]]:
    ex, ey, ez = spec["envelope"]
    w, f = spec["wall"], spec["floor"]
    probes = []
    for i, (x, y, z, a, b, c) in enumerate(spec["devices"], start=1):
        probes.append({"label": f"device {i}'s pocket and the space above it are clear", "expect": "empty", "region": translate([x, y, z], cube(a, b, ez - z + 1))})  # fmt: skip
        drains = [translate([dx, dy, -1], cylinder(f + 2, spec["hole_d"] / 2 * 1.3)) for dx, dy in spec["drains"]]  # fmt: skip
        floor_region = difference(translate([x, y, z - f], cube(a, b, f)), *drains) if drains else translate([x, y, z - f], cube(a, b, f))  # fmt: skip
        probes.append({"label": f"device {i} has a floor {f:g} mm thick", "expect": "full", "region": floor_region})  # fmt: skip
        for side, at, size in (("left", [x - w, y, z], [w, b, c]), ("right", [x + a, y, z], [w, b, c]), ("front", [x, y - w, z], [a, w, c]), ("back", [x, y + b, z], [a, w, c])):  # fmt: skip
            probes.append({"label": f"device {i} has a {side} wall {w:g} mm thick", "expect": "full", "region": translate(at, cube(*size))})  # fmt: skip
    r = spec["hole_d"] / 2
    for i, (x, y) in enumerate(spec["drains"], start=1):
        probes.append({"label": f"drain hole {i} is open", "expect": "empty", "region": translate([x, y, -1], cylinder(f + 2, r * 0.9))})  # fmt: skip
    return probes


class CsgEnclosureDomain(AnswerDomain):
    """Design a tray for given devices; any design meeting the constraints passes."""

    id = "cad/csg-enclosure-v2"
    axes = Axes("geometry", "none", "single", "validity")
    instructions = CSG_FORMAT

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        spec = _tray(rng, difficulty + 1)
        ex, ey, ez = spec["envelope"]
        lines = [
            f"Design a tray, as a CSG tree, that holds {len(spec['devices'])} device(s). Each device is a box that "
            f"rests in its own pocket, at exactly this place (x, y, z of its lowest corner, then its size):"
        ]
        for i, (x, y, z, a, b, c) in enumerate(spec["devices"], start=1):
            lines.append(f"- device {i}: at ({x:g}, {y:g}, {z:g}), size {a:g} x {b:g} x {c:g} mm")
        drains = "; ".join(f"({x:g}, {y:g})" for x, y in spec["drains"])
        budget = round(build(_tray_tree(spec)).volume() * 1.25)
        spec["budget"] = budget
        lines.append(
            f"Rules: the tray lies within the box x 0..{ex:g}, y 0..{ey:g}, z 0..{ez:g}; it is one watertight body; "
            f"each device's space and everything above it up to z = {ez:g} stays empty (the top is open); "
            f"there is material at least {spec['wall']:g} mm thick on all four sides of each device over its full "
            f"height, and a floor at least {spec['floor']:g} mm thick under it; its volume is at most {budget:g} mm³."
        )
        if spec["drains"]:
            lines.append(f"Vertical drain holes of diameter {spec['hole_d']:g} mm go through the floor at (x, y) = {drains}.")  # fmt: skip
        meta = {"spec": spec, "probes": _tray_probes(spec)}
        return Problem("\n".join(lines), dumps(_tray_tree(spec)), meta, difficulty + 1)

    def judge(self, task: Task, text: str) -> Verdict:
        tree, why = _tree_of(text)
        names = ("parses", "one_body", "in_envelope", "constraints", "budget")
        if tree is None:
            return Verdict(0.0, False, f"The answer is not a valid CSG tree: {why}.", dict.fromkeys(names, 0.0))  # fmt: skip
        spec = task.meta["spec"]
        solid = build(tree)
        if solid.is_empty() or solid.status().name != "NoError":
            return Verdict(0.0, False, "The tree describes no solid.", {"parses": 1.0, **dict.fromkeys(names[1:], 0.0)})  # fmt: skip
        box = bounds_of(solid)
        ex, ey, ez = spec["envelope"]
        inside = box[0] >= -1e-6 and box[1] >= -1e-6 and box[2] >= -1e-6 and box[3] <= ex + 1e-6 and box[4] <= ey + 1e-6 and box[5] <= ez + 1e-6  # fmt: skip
        failed, count = failed_probes(solid, task.meta["probes"])
        components = {
            "parses": 1.0,
            "one_body": float(len(solid.decompose()) == 1),
            "in_envelope": float(inside),
            "constraints": 1.0 - len(failed) / count,
            "budget": float(solid.volume() <= spec["budget"]),
        }
        problems = [
            *(["it is not one connected body"] if not components["one_body"] else []),
            *(
                [f"it leaves the allowed box (its box is {', '.join(f'{v:.4g}' for v in box)})"]
                if not inside
                else []
            ),  # fmt: skip
            *(["it breaks: " + "; ".join(failed[:4])] if failed else []),
            *(
                [f"its volume {solid.volume():.6g} mm³ exceeds the budget"]
                if not components["budget"]
                else []
            ),  # fmt: skip
        ]
        if problems:
            reward = min(sum(components.values()) / len(components), 0.9)
            return Verdict(round(reward, 6), False, "The tray breaks the rules: " + "; ".join(problems) + ".", components)  # fmt: skip
        return Verdict(1.0, True, "The tray meets every rule.", components)

    def wrong(self, task: Task) -> list[str]:
        """Walls too thin, a lid over the pockets, a pocket too small, a stray second body,
        JSON cut short."""
        spec = task.meta["spec"]
        tree = _tray_tree(spec)
        length, width, height = spec["size"]
        lid = union(tree, translate([0, 0, height], cube(length, width, 1)))
        small = copy.deepcopy(tree)
        small["children"][1]["children"][0]["size"][0] -= 2
        stray = union(tree, translate([0, 0, height + 2], cube(2, 2, 1)))
        return [dumps(_tray_tree(spec, wall=spec["wall"] / 2)), dumps(lid), dumps(small), dumps(stray), task.answer[:-2]]  # fmt: skip


DOMAINS = (CsgPartDomain(), CsgVolumeDomain(), CsgEnclosureDomain())
