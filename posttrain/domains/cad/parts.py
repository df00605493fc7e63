"""Parametric parts: a spec in words and numbers, its reference CSG, and its feature probes.

Six kinds — a plate with a hole grid, an L-bracket with holes in both legs, a round
flange with a bore and a bolt circle, an open-top enclosure with a cable hole and
floor vents, a stepped shaft with a keyway and cross holes, and a base plate with
drilled standoffs (a small assembly) — each drawn by `draw_params(kind, rng, n)` and
built by `make_part(kind, params)`:

    part = make_part("plate", draw_params("plate", rng, features=5))
    part.text      # the spec a model reads (placement included: answers are compared in place)
    part.tree      # the reference as our JSON CSG (csg.py); csg.to_scad(part.tree) for OpenSCAD
    part.probes    # regions that must be empty (holes, cavities) or full (rims, walls)
    part.genus     # the number of through holes, the solid's genus

`features` is the number of holes and slots; the CAD domains set it from the difficulty.
Probes sit a fixed distance from the true surface — 0.3 mm (`PROBE_MARGIN`) either side
of a hole's wall (10% of the radius for holes under 6 mm across), of a hub's or a
standoff's outer wall, and 0.2 mm either side of a keyway's faces — so a 32-segment
model passes, while a hole 1 mm too large or small in diameter (for holes up to 40 mm
across) or missing, a hub or standoff 1 mm too wide or narrow, or a keyway 1 mm too
wide, too long or too deep fails.

Not guaranteed: probes check the features the spec names, not every surface; the
generators keep holes apart and away from edges (pitch ≥ 3 diameters), not any
manufacturability rule.
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass, field
from typing import Any

from posttrain.domains.cad.csg import cube, cylinder, difference, rotate, translate, union

PROBE_MARGIN = 0.3  # mm between a probe and the true surface it checks (holes, bosses)
KINDS = ("plate", "bracket", "flange", "enclosure", "shaft", "standoffs")
Node = dict[str, Any]


@dataclass
class PartSpec:
    """One part: what the prompt says, the reference solid, and what the verifier probes."""

    kind: str
    params: dict[str, Any]
    text: str
    tree: Node
    probes: list[dict[str, Any]] = field(default_factory=list)
    genus: int = 0
    features: int = 0


def _axis_turn(axis: str, node: Node) -> Node:
    """A z-aligned node turned to lie along `axis` (a +z extent becomes +axis)."""
    if axis == "x":
        return rotate([0, 90, 0], node)
    if axis == "y":
        return rotate([-90, 0, 0], node)
    return node


def _hole(at: list[float], axis: str, r: float, length: float) -> Node:
    """A through-hole cutter centred at `at`, longer than `length` so the cut is clean."""
    return translate(at, _axis_turn(axis, cylinder(length + 2, r, center=True)))


def _hole_probes(label: str, at: list[float], axis: str, r: float, length: float) -> list[dict[str, Any]]:  # fmt: skip
    """The hole is open out to `PROBE_MARGIN` inside its wall and solid from as far
    outside it (10% of the radius for holes under 6 mm across, where 0.3 mm is too much)."""
    inner = length * 0.9
    gap = min(PROBE_MARGIN, 0.1 * r)
    ring = difference(cylinder(inner, r + gap + min(2.0, 0.25 * r), center=True), cylinder(inner + 2, r + gap, center=True))  # fmt: skip
    return [
        {
            "label": f"{label} is open",
            "expect": "empty",
            "region": translate(at, _axis_turn(axis, cylinder(inner, r - gap, center=True))),
        },  # fmt: skip
        {
            "label": f"{label} is not oversized",
            "expect": "full",
            "region": translate(at, _axis_turn(axis, ring)),
        },  # fmt: skip
    ]


def _boss_probes(label: str, at: list[float], r: float, z0: float, z1: float) -> list[dict[str, Any]]:  # fmt: skip
    """A round boss (hub, standoff) standing from z0 to z1: solid just inside its surface,
    empty just outside, `PROBE_MARGIN` clear of it and 1 mm thick."""
    h = z1 - z0 - 2 * PROBE_MARGIN
    base = [at[0], at[1], z0 + PROBE_MARGIN]

    def shell(r_in: float, r_out: float) -> Node:
        return translate(base, difference(cylinder(h, r_out), translate([0, 0, -1], cylinder(h + 2, r_in))))  # fmt: skip

    return [
        {
            "label": f"{label} is not undersized",
            "expect": "full",
            "region": shell(r - PROBE_MARGIN - 1, r - PROBE_MARGIN),
        },
        {
            "label": f"{label} is not oversized",
            "expect": "empty",
            "region": shell(r + PROBE_MARGIN, r + PROBE_MARGIN + 1),
        },
    ]


def _keyway_probes(radius: float, kw: float, kd: float, kl: float, key_z: float) -> list[dict[str, Any]]:  # fmt: skip
    """A keyway cut into the +x side of a shaft of `radius`: empty 0.2 mm inside its faces,
    solid 0.2..1.2 mm beyond its floor, its two sides and its two ends (side and end
    probes clipped to 0.3 mm inside the shaft's surface)."""
    floor_x, y0, z0 = radius - kd, -kw / 2, key_z
    clip = cylinder(key_z + kl + 4, radius - PROBE_MARGIN)

    def probe(label: str, expect: str, at: list[float], size: list[float]) -> dict[str, Any]:
        region = translate(at, cube(size[0], size[1], size[2]))
        if expect == "full" and at[0] > floor_x:  # reaches the round surface: clip it
            region = {"op": "intersection", "children": [clip, region]}
        return {"label": f"the keyway {label}", "expect": expect, "region": region}

    x_in = floor_x + 0.2  # from just above the floor out past the surface
    return [
        probe("is cut", "empty", [x_in, y0 + 0.2, z0 + 0.2], [kd, kw - 0.4, kl - 0.4]),
        probe(
            "is not too deep",
            "full",
            [floor_x - 1.2, y0 + 0.2, z0 + 0.2],
            [1.0, kw - 0.4, kl - 0.4],
        ),
        probe(
            "is not too wide (+y side)",
            "full",
            [x_in, y0 + kw + 0.2, z0 + 0.2],
            [kd, 1.0, kl - 0.4],
        ),
        probe("is not too wide (-y side)", "full", [x_in, y0 - 1.2, z0 + 0.2], [kd, 1.0, kl - 0.4]),
        probe("is not too long (low end)", "full", [x_in, y0 + 0.2, z0 - 1.2], [kd, kw - 0.4, 1.0]),
        probe(
            "is not too long (high end)",
            "full",
            [x_in, y0 + 0.2, z0 + kl + 0.2],
            [kd, kw - 0.4, 1.0],
        ),
    ]


def _grid(n: int) -> tuple[int, int]:
    """(columns, rows) of a hole grid with n holes: two rows when n is even and ≥ 4."""
    return (n // 2, 2) if n >= 4 and n % 2 == 0 else (n, 1)


def _centred(count: int, pitch: float, middle: float) -> list[float]:
    return [middle + (i - (count - 1) / 2) * pitch for i in range(count)]


# ----------------------------------------------------------------------------- drawing


def draw_params(kind: str, rng: random.Random, features: int) -> dict[str, Any]:
    """Random dimensions (whole or half millimetres) for `kind` with `features` holes/slots."""
    n = max(2, features)
    hole_d = rng.choice([3.0, 4.0, 5.0, 6.0])
    pitch = rng.choice([3.0, 3.5, 4.0]) * hole_d
    margin = rng.choice([2.0, 2.5]) * hole_d
    t = rng.choice([3.0, 4.0, 5.0, 6.0])
    if kind == "plate":
        cols, rows = _grid(n)
        return {"cols": cols, "rows": rows, "hole_d": hole_d, "pitch": pitch, "margin": margin, "t": t}  # fmt: skip
    if kind == "bracket":
        height = rng.choice([30.0, 35.0, 40.0, 45.0])
        depth = rng.choice([30.0, 35.0, 40.0, 45.0])
        return {"base_holes": (n + 1) // 2, "upright_holes": n // 2, "hole_d": hole_d, "pitch": pitch, "margin": margin, "t": t, "height": height, "depth": depth}  # fmt: skip
    if kind == "flange":
        bolts = n - 1
        bore = rng.choice([10.0, 12.0, 16.0, 20.0])
        bolt_d = hole_d
        # Bolt holes at least 3 diameters apart along the circle and clear of bore and hub.
        circle = max(bore + 6 * bolt_d + 12, math.ceil(3 * bolt_d * bolts / math.pi / 2) * 2 + 0.0)
        od = circle + 5 * bolt_d
        hub = rng.choice([0.0, bore + 4 * bolt_d])
        return {"od": od, "t": t, "bore": bore, "circle": circle, "bolts": bolts, "bolt_d": bolt_d, "hub_d": hub, "hub_h": rng.choice([8.0, 10.0]) if hub else 0.0}  # fmt: skip
    if kind == "enclosure":
        vents = n - 1
        length = max(60.0, 2 * margin + pitch * vents + 10)
        return {"x": length, "y": rng.choice([40.0, 50.0, 60.0]), "z": rng.choice([25.0, 30.0, 35.0]), "wall": rng.choice([2.0, 2.5, 3.0]), "floor": rng.choice([2.0, 3.0]), "vents": vents, "vent_d": hole_d, "pitch": pitch, "cable_d": rng.choice([6.0, 8.0, 10.0])}  # fmt: skip
    if kind == "shaft":
        pins = n - 1
        d1 = rng.choice([20.0, 24.0, 30.0])
        d2 = d1 - rng.choice([6.0, 8.0])
        pin_d = rng.choice([3.0, 4.0])
        return {"d1": d1, "l1": rng.choice([30.0, 40.0, 50.0]), "d2": d2, "l2": 2 * 3 * pin_d + 3 * pin_d * pins, "key_w": rng.choice([4.0, 5.0, 6.0]), "key_depth": rng.choice([2.0, 2.5, 3.0]), "key_len": rng.choice([15.0, 20.0, 25.0]), "pins": pins, "pin_d": pin_d}  # fmt: skip
    if kind == "standoffs":
        cols, rows = _grid(n)
        post_d = 2.5 * hole_d
        return {"cols": cols, "rows": rows, "hole_d": hole_d, "post_d": post_d, "post_h": rng.choice([8.0, 10.0, 12.0]), "pitch": max(pitch, post_d + 2 * hole_d), "margin": margin + post_d / 2, "t": t}  # fmt: skip
    raise ValueError(f"unknown part kind {kind!r}")


def make_part(kind: str, params: dict[str, Any]) -> PartSpec:
    """The spec, reference tree and probes of one part; ValueError for an unknown kind."""
    builder = {"plate": _plate, "bracket": _bracket, "flange": _flange, "enclosure": _enclosure, "shaft": _shaft, "standoffs": _standoffs}.get(kind)  # fmt: skip
    if builder is None:
        raise ValueError(f"unknown part kind {kind!r}")
    return builder(params)


def _mm(value: float) -> str:
    return f"{value:g} mm"


# ----------------------------------------------------------------------------- the kinds


def _plate(p: dict[str, Any]) -> PartSpec:
    cols, rows, d, pitch, t = p["cols"], p["rows"], p["hole_d"], p["pitch"], p["t"]
    w = 2 * p["margin"] + pitch * (cols - 1)
    depth = 2 * p["margin"] + pitch * (rows - 1)
    centres = [[x, y, t / 2] for y in _centred(rows, pitch, depth / 2) for x in _centred(cols, pitch, w / 2)]  # fmt: skip
    tree = difference(cube(w, depth, t), *[_hole(c, "z", d / 2, t) for c in centres])
    probes = [pr for i, c in enumerate(centres) for pr in _hole_probes(f"hole {i + 1}", c, "z", d / 2, t)]  # fmt: skip
    text = (
        f"A flat rectangular plate {_mm(w)} long (x) by {_mm(depth)} wide (y) and {_mm(t)} thick (z), "
        f"one corner at the origin and the plate in the positive x, y and z directions. "
        f"It has {cols * rows} vertical through-holes of diameter {_mm(d)} in a grid of {cols} "
        f"column(s) along x by {rows} row(s) along y, spaced {_mm(pitch)} apart both ways, "
        f"the grid centred on the plate."
    )
    return PartSpec("plate", p, text, tree, probes, cols * rows, cols * rows)


def _bracket(p: dict[str, Any]) -> PartSpec:
    nb, nu, d, pitch, t = p["base_holes"], p["upright_holes"], p["hole_d"], p["pitch"], p["t"]
    w = 2 * p["margin"] + pitch * (max(nb, nu) - 1)
    depth, height = p["depth"], p["height"]
    base_c = [[x, t + (depth - t) / 2, t / 2] for x in _centred(nb, pitch, w / 2)]
    up_c = [[x, t / 2, t + (height - t) / 2] for x in _centred(nu, pitch, w / 2)]
    body = union(cube(w, depth, t), cube(w, t, height))
    tree = difference(body, *[_hole(c, "z", d / 2, t) for c in base_c], *[_hole(c, "y", d / 2, t) for c in up_c])  # fmt: skip
    probes = [pr for i, c in enumerate(base_c) for pr in _hole_probes(f"base hole {i + 1}", c, "z", d / 2, t)]  # fmt: skip
    probes += [pr for i, c in enumerate(up_c) for pr in _hole_probes(f"upright hole {i + 1}", c, "y", d / 2, t)]  # fmt: skip
    probes.append({"label": "the inside corner is clear", "expect": "empty", "region": translate([1, t + 1, t + 1], cube(w - 2, depth - t - 2, height - t - 2))})  # fmt: skip
    text = (
        f"An L-shaped bracket {_mm(w)} long along x. Its base leg is a plate {_mm(depth)} deep (y) and "
        f"{_mm(t)} thick (z) occupying x 0..{w:g}, y 0..{depth:g}, z 0..{t:g}; its upright leg is a plate "
        f"{_mm(t)} thick (y) rising to a height of {_mm(height)}, occupying x 0..{w:g}, y 0..{t:g}, z 0..{height:g}. "
        f"The base has {nb} vertical through-hole(s) of diameter {_mm(d)}, in a row along x at y = {t + (depth - t) / 2:g}; "
        f"the upright has {nu} horizontal through-hole(s) (along y) of diameter {_mm(d)}, in a row along x at z = {t + (height - t) / 2:g}. "
        f"Each row is spaced {_mm(pitch)} apart and centred at x = {w / 2:g}."
    )
    return PartSpec("bracket", p, text, tree, probes, nb + nu, nb + nu)


def _flange(p: dict[str, Any]) -> PartSpec:
    od, t, bore, circle, bolts, bd = p["od"], p["t"], p["bore"], p["circle"], p["bolts"], p["bolt_d"]  # fmt: skip
    hub_d, hub_h = p["hub_d"], p["hub_h"]
    top = t + hub_h
    disc = cylinder(t, od / 2)
    body = union(disc, cylinder(top, hub_d / 2)) if hub_h else disc
    angles = [360.0 * i / bolts for i in range(bolts)]
    centres = [[circle / 2 * math.cos(math.radians(a)), circle / 2 * math.sin(math.radians(a)), t / 2] for a in angles]  # fmt: skip
    centres = [[round(c, 6) for c in xyz] for xyz in centres]
    tree = difference(body, _hole([0, 0, top / 2], "z", bore / 2, top), *[_hole(c, "z", bd / 2, t) for c in centres])  # fmt: skip
    probes = _hole_probes("the bore", [0, 0, top / 2], "z", bore / 2, top)
    probes += [pr for i, c in enumerate(centres) for pr in _hole_probes(f"bolt hole {i + 1}", c, "z", bd / 2, t)]  # fmt: skip
    if hub_h:
        probes += _boss_probes("the hub", [0, 0], hub_d / 2, t, top)
    hub = (
        f" A round hub of diameter {_mm(hub_d)} rises from the disc's top face to z = {top:g}, coaxial with it."
        if hub_h
        else ""
    )
    text = (
        f"A round flange: a disc of diameter {_mm(od)} and thickness {_mm(t)}, centred on the z axis with its "
        f"bottom face at z = 0.{hub} A central bore of diameter {_mm(bore)} goes through everything. "
        f"{bolts} bolt holes of diameter {_mm(bd)} go through the disc, evenly spaced on a circle of diameter "
        f"{_mm(circle)} centred on the axis, the first on the positive x axis."
    )
    return PartSpec("flange", p, text, tree, probes, bolts + 1, bolts + 1)


def _enclosure(p: dict[str, Any]) -> PartSpec:
    x, y, z, wall, floor = p["x"], p["y"], p["z"], p["wall"], p["floor"]
    vents, vd, pitch, cable = p["vents"], p["vent_d"], p["pitch"], p["cable_d"]
    cable_at = [x / 2, wall / 2, floor + (z - floor) / 2]
    vent_c = [[vx, y / 2, floor / 2] for vx in _centred(vents, pitch, x / 2)]
    cavity = translate([wall, wall, floor], cube(x - 2 * wall, y - 2 * wall, z))
    tree = difference(cube(x, y, z), cavity, _hole(cable_at, "y", cable / 2, wall), *[_hole(c, "z", vd / 2, floor) for c in vent_c])  # fmt: skip
    inset = 0.2
    probes = [{"label": "the cavity is empty", "expect": "empty", "region": translate([wall + inset, wall + inset, floor + inset], cube(x - 2 * wall - 2 * inset, y - 2 * wall - 2 * inset, z - floor))}]  # fmt: skip
    walls = {
        "the back wall": translate(
            [inset, y - wall + inset, floor + inset],
            cube(x - 2 * inset, wall - 2 * inset, z - floor - 2 * inset),
        ),  # fmt: skip
        "the left wall": translate(
            [inset, inset, floor + inset],
            cube(wall - 2 * inset, y - 2 * inset, z - floor - 2 * inset),
        ),  # fmt: skip
        "the right wall": translate(
            [x - wall + inset, inset, floor + inset],
            cube(wall - 2 * inset, y - 2 * inset, z - floor - 2 * inset),
        ),  # fmt: skip
    }
    probes += [{"label": f"{name} is {wall:g} mm thick", "expect": "full", "region": region} for name, region in walls.items()]  # fmt: skip
    probes += _hole_probes("the cable hole", cable_at, "y", cable / 2, wall)
    probes += [pr for i, c in enumerate(vent_c) for pr in _hole_probes(f"vent {i + 1}", c, "z", vd / 2, floor)]  # fmt: skip
    text = (
        f"An open-top box (enclosure) with outside dimensions {_mm(x)} (x) by {_mm(y)} (y) by {_mm(z)} high (z), "
        f"one corner at the origin and the box in the positive x, y and z directions. Its four side walls are "
        f"{_mm(wall)} thick and its floor is {_mm(floor)} thick; the top is open. The front wall (the one at y = 0) "
        f"has a round cable hole of diameter {_mm(cable)} through it (along y), centred at x = {x / 2:g}, "
        f"z = {cable_at[2]:g}. The floor has {vents} vertical vent hole(s) of diameter {_mm(vd)} in a row along x "
        f"at y = {y / 2:g}, spaced {_mm(pitch)} apart and centred at x = {x / 2:g}."
    )
    return PartSpec("enclosure", p, text, tree, probes, vents + 1, vents + 1)


def _shaft(p: dict[str, Any]) -> PartSpec:
    d1, l1, d2, l2 = p["d1"], p["l1"], p["d2"], p["l2"]
    kw, kd, kl, pins, pd = p["key_w"], p["key_depth"], p["key_len"], p["pins"], p["pin_d"]
    key_z = (l1 - kl) / 2
    keyway = translate([d1 / 2 - kd, -kw / 2, key_z], cube(kd + 1, kw, kl))
    pin_z = [l1 + 3 * pd + 3 * pd * i + 1.5 * pd for i in range(pins)]
    body = union(cylinder(l1, d1 / 2), translate([0, 0, l1 - 0.0], cylinder(l2, d2 / 2)))
    tree = difference(body, keyway, *[_hole([0, 0, z], "x", pd / 2, d2) for z in pin_z])
    probes = _keyway_probes(d1 / 2, kw, kd, kl, key_z)
    probes += [pr for i, z in enumerate(pin_z) for pr in _hole_probes(f"cross hole {i + 1}", [0, 0, z], "x", pd / 2, d2 * 0.6)]  # fmt: skip
    text = (
        f"A stepped round shaft along the z axis. Its main section has diameter {_mm(d1)} from z = 0 to z = {l1:g}; "
        f"its journal has diameter {_mm(d2)} from z = {l1:g} to z = {l1 + l2:g}; both are centred on the z axis. "
        f"A keyway (a rectangular slot) is cut into the main section on the positive x side: {_mm(kw)} wide (y, "
        f"centred on y = 0), {_mm(kd)} deep (measured in from the surface at x = {d1 / 2:g}), from z = {key_z:g} to "
        f"z = {key_z + kl:g}. The journal has {pins} cross hole(s) of diameter {_mm(pd)} straight through it along "
        f"the x axis, at z = {', '.join(f'{z:g}' for z in pin_z)}."
    )
    return PartSpec("shaft", p, text, tree, probes, pins, pins + 1)


def _standoffs(p: dict[str, Any]) -> PartSpec:
    cols, rows, d, post_d, post_h, pitch, t = p["cols"], p["rows"], p["hole_d"], p["post_d"], p["post_h"], p["pitch"], p["t"]  # fmt: skip
    w = 2 * p["margin"] + pitch * (cols - 1)
    depth = 2 * p["margin"] + pitch * (rows - 1)
    top = t + post_h
    centres = [[x, y] for y in _centred(rows, pitch, depth / 2) for x in _centred(cols, pitch, w / 2)]  # fmt: skip
    body = union(cube(w, depth, t), *[translate([x, y, 0], cylinder(top, post_d / 2)) for x, y in centres])  # fmt: skip
    tree = difference(body, *[_hole([x, y, top / 2], "z", d / 2, top) for x, y in centres])
    probes = [pr for i, (x, y) in enumerate(centres) for pr in _hole_probes(f"standoff {i + 1}'s hole", [x, y, top / 2], "z", d / 2, top)]  # fmt: skip
    probes += [pr for i, (x, y) in enumerate(centres) for pr in _boss_probes(f"standoff {i + 1}", [x, y], post_d / 2, t, top)]  # fmt: skip
    text = (
        f"A base plate {_mm(w)} long (x) by {_mm(depth)} wide (y) and {_mm(t)} thick (z), one corner at the origin "
        f"and the plate in the positive x, y and z directions, carrying {cols * rows} round standoffs of diameter "
        f"{_mm(post_d)} that rise from the plate's top face to z = {top:g}, in a grid of {cols} column(s) along x by "
        f"{rows} row(s) along y, spaced {_mm(pitch)} apart both ways, the grid centred on the plate. Each standoff "
        f"has a hole of diameter {_mm(d)} on its axis, drilled through the standoff and the plate."
    )
    return PartSpec("standoffs", p, text, tree, probes, cols * rows, cols * rows)
