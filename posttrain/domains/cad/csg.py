"""Our JSON CSG: a small tree of primitives and booleans, built into a solid by manifold3d.

A node is a JSON object with an `op`:

    {"op": "cube", "size": [x, y, z], "center": false}
    {"op": "cylinder", "h": 10, "r": 2.5, "center": false}     # along +z; "d" for a diameter
    {"op": "sphere", "r": 4}
    {"op": "translate", "v": [x, y, z], "children": [...]}
    {"op": "rotate", "a": [ax, ay, az], "children": [...]}      # degrees, about x then y then z
    {"op": "union" | "difference" | "intersection", "children": [...]}

The semantics are OpenSCAD's (a `difference` subtracts every later child from the
first; transforms union their children), so `to_scad(tree)` prints the same solid as
OpenSCAD source, and `build(tree)` makes it a `manifold3d.Manifold`:

    solid = build(parse_csg(text))        # CsgError with a readable message if malformed

Round primitives use `SEGMENTS` (32) segments both here and in the printed OpenSCAD.

Not guaranteed: sizes are bounded (`MAX_SIZE` mm, `MAX_NODES` nodes, `MAX_DEPTH`
levels) and so is the estimated cost of the booleans (`estimated_cost`: each primitive's
triangles times the primitives whose bounding spheres overlap it, at most `COST_BUDGET`,
checked before building), so a model cannot make the verifier slow for long; the estimate
is rough, and a tree just under the budget whose surfaces all cut each other can still
take ~2 s to build. Nothing stops a valid tree from describing a different solid than the
one asked for — the verifier's comparisons do that.
"""

from __future__ import annotations

import json
import math
from typing import Any

import manifold3d
import numpy as np

SEGMENTS = 32
MAX_NODES = 300
MAX_DEPTH = 24
MAX_SIZE = 5000.0
MAX_TEXT = 200_000
# The references need at most 25,100 (cad/csg-part, difficulty 10; the enclosure's 2,760),
# measured over difficulties 1..10 × seeds 0..39. At the budget the slowest tree we found
# (19 spheres of r 4,000 at one centre, each rotated: every surface cuts every other)
# builds in ~2 s; 60 such spheres (est. 1.8M) took 10-12 s to judge, 149 overlapping ones
# of r 4,000 (est. 11.4M) 0.4-7 s: both are now refused in ~2 ms.
COST_BUDGET = 200_000
_SPHERE_TRIANGLES = SEGMENTS * SEGMENTS // 2  # manifold3d's sphere at SEGMENTS: 512
_BOOLEANS = ("union", "difference", "intersection")
_TRANSFORMS = ("translate", "rotate")
_KEYS = {
    "cube": {"op", "size", "center"},
    "cylinder": {"op", "h", "r", "d", "center"},
    "sphere": {"op", "r", "d"},
    "translate": {"op", "v", "children"},
    "rotate": {"op", "a", "children"},
    **{name: {"op", "children"} for name in _BOOLEANS},
}


class CsgError(ValueError):
    """A tree we refuse; the message says where and why."""


def parse_csg(text: str) -> dict[str, Any]:
    """The checked tree in `text` (a JSON object); CsgError when it is not one."""
    if not isinstance(text, str) or len(text) > MAX_TEXT:
        raise CsgError("the answer must be a JSON object under 200,000 characters")
    try:
        tree = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as exc:
        raise CsgError(f"not valid JSON ({str(exc)[:80]})") from None
    except ValueError:  # an integer over Python's 4300-digit limit
        raise CsgError("not valid JSON (a number in it is too long)") from None
    check_tree(tree)
    return tree  # type: ignore[no-any-return]


def check_tree(tree: Any) -> None:
    """CsgError unless `tree` is a well-formed node within the size limits and the
    `COST_BUDGET` (checked before anything is built)."""
    count = [0]
    _check(tree, "root", 0, count)
    cost = estimated_cost(tree)
    if cost > COST_BUDGET:
        raise CsgError(
            f"the tree would take too long to build: its estimated cost ({cost:,} triangle"
            f" tests of overlapping primitives) is over the budget of {COST_BUDGET:,}"
        )


def estimated_cost(tree: dict[str, Any]) -> int:
    """What building a checked tree costs, roughly: each primitive's triangles times
    one plus the number of other primitives whose bounding spheres overlap its own
    (booleans cut every pair of overlapping surfaces; apart, primitives cost little)."""
    centers: list[np.ndarray] = []
    radii: list[float] = []
    triangles: list[int] = []
    _primitives(tree, np.eye(3), np.zeros(3), centers, radii, triangles)
    c, r = np.array(centers), np.array(radii)
    apart = np.linalg.norm(c[:, None, :] - c[None, :, :], axis=-1)  # [P, P]
    overlaps = (apart <= r[:, None] + r[None, :]).sum(axis=1)  # itself included: the 1 +
    return int(np.dot(np.array(triangles), overlaps))


def _primitives(
    node: dict[str, Any],
    m: np.ndarray,
    t: np.ndarray,
    centers: list[np.ndarray],
    radii: list[float],
    triangles: list[int],
) -> None:
    """Each primitive's bounding sphere in world space (`m`, `t`: the transform so far)
    and its triangle count at `SEGMENTS`."""
    op = node["op"]
    if op in ("cube", "cylinder", "sphere"):
        center = bool(node.get("center", False))
        if op == "cube":
            half = np.array(node["size"], dtype=float) / 2
            local, radius, tris = (np.zeros(3) if center else half), float(np.linalg.norm(half)), 12
        else:
            r = float(node["r"]) if "r" in node else float(node["d"]) / 2
            if op == "sphere":
                local, radius, tris = np.zeros(3), r, _SPHERE_TRIANGLES
            else:
                h = float(node["h"]) / 2
                local, radius = np.array([0.0, 0.0, 0.0 if center else h]), math.hypot(r, h)
                tris = 4 * SEGMENTS - 4
        centers.append(m @ local + t)
        radii.append(radius)
        triangles.append(tris)
        return
    if op == "translate":
        t = t + m @ np.array(node["v"], dtype=float)
    elif op == "rotate":
        m = m @ _rotation([float(a) for a in node["a"]])
    for child in node["children"]:
        _primitives(child, m, t, centers, radii, triangles)


def _rotation(degrees: list[float]) -> np.ndarray:
    """OpenSCAD's rotate([ax, ay, az]): about x, then y, then z."""
    x, y, z = (math.radians(a) for a in degrees)
    rx = np.array([[1, 0, 0], [0, math.cos(x), -math.sin(x)], [0, math.sin(x), math.cos(x)]])
    ry = np.array([[math.cos(y), 0, math.sin(y)], [0, 1, 0], [-math.sin(y), 0, math.cos(y)]])
    rz = np.array([[math.cos(z), -math.sin(z), 0], [math.sin(z), math.cos(z), 0], [0, 0, 1]])
    return rz @ ry @ rx  # type: ignore[no-any-return]


def _number(value: Any, where: str, positive: bool = False) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise CsgError(f"{where} must be a finite number")
    # An int is finite, and math.isfinite would overflow on one past float's range.
    if isinstance(value, float) and not math.isfinite(value):
        raise CsgError(f"{where} must be a finite number")
    if abs(value) > MAX_SIZE:
        raise CsgError(f"{where} is larger than {MAX_SIZE:g}")
    if positive and value <= 0:
        raise CsgError(f"{where} must be positive")
    return float(value)


def _vector(value: Any, where: str, positive: bool = False) -> list[float]:
    if not isinstance(value, list) or len(value) != 3:
        raise CsgError(f"{where} must be a list of 3 numbers")
    return [_number(v, f"{where}[{i}]", positive) for i, v in enumerate(value)]


def _check(node: Any, where: str, depth: int, count: list[int]) -> None:
    count[0] += 1
    if count[0] > MAX_NODES:
        raise CsgError(f"the tree has more than {MAX_NODES} nodes")
    if depth > MAX_DEPTH:
        raise CsgError(f"the tree is deeper than {MAX_DEPTH} levels")
    if not isinstance(node, dict):
        raise CsgError(f"{where}: a node must be a JSON object")
    op = node.get("op")
    if not isinstance(op, str) or op not in _KEYS:
        raise CsgError(f"{where}: unknown op {str(op)[:30]!r}; use one of {', '.join(_KEYS)}")
    extra = sorted(str(k)[:30] for k in node if k not in _KEYS[op])
    if extra:
        raise CsgError(f"{where} ({op}): unknown key(s) {', '.join(extra)}")
    if "center" in node and not isinstance(node["center"], bool):
        raise CsgError(f"{where} ({op}): center must be true or false")
    if op == "cube":
        _vector(node.get("size"), f"{where}.size", positive=True)
    elif op in ("cylinder", "sphere"):
        if ("r" in node) == ("d" in node):
            raise CsgError(f"{where} ({op}): give exactly one of r and d")
        _number(node.get("r", node.get("d")), f"{where}.{'r' if 'r' in node else 'd'}", True)
        if op == "cylinder":
            _number(node.get("h"), f"{where}.h", positive=True)
    else:
        if op in _TRANSFORMS:
            key = "v" if op == "translate" else "a"
            _vector(node.get(key), f"{where}.{key}")
        children = node.get("children")
        if not isinstance(children, list) or not children:
            raise CsgError(f"{where} ({op}): children must be a non-empty list")
        for i, child in enumerate(children):
            _check(child, f"{where}.children[{i}]", depth + 1, count)


def build(tree: dict[str, Any], segments: int = SEGMENTS) -> manifold3d.Manifold:
    """The solid of a checked tree (run `check_tree` or `parse_csg` first); round
    primitives get `segments` segments."""
    op = tree["op"]
    if op == "cube":
        return manifold3d.Manifold.cube([float(v) for v in tree["size"]], bool(tree.get("center", False)))  # fmt: skip
    if op == "cylinder":
        r = float(tree["r"]) if "r" in tree else float(tree["d"]) / 2
        return manifold3d.Manifold.cylinder(float(tree["h"]), r, r, segments, bool(tree.get("center", False)))  # fmt: skip
    if op == "sphere":
        r = float(tree["r"]) if "r" in tree else float(tree["d"]) / 2
        return manifold3d.Manifold.sphere(r, segments)
    parts = [build(child, segments) for child in tree["children"]]
    if op == "difference":
        head = parts[0]
        return head - manifold3d.Manifold.batch_boolean(parts[1:], manifold3d.OpType.Add) if len(parts) > 1 else head  # fmt: skip
    if op == "intersection":
        return manifold3d.Manifold.batch_boolean(parts, manifold3d.OpType.Intersect)
    joined = manifold3d.Manifold.batch_boolean(parts, manifold3d.OpType.Add)
    if op == "translate":
        return joined.translate([float(v) for v in tree["v"]])
    if op == "rotate":
        return joined.rotate([float(v) for v in tree["a"]])
    return joined


def to_scad(tree: dict[str, Any], indent: int = 0) -> str:
    """The tree as OpenSCAD statements (callers put `$fn = 32;` first)."""
    pad = "    " * indent
    op = tree["op"]
    center = ", center=true" if tree.get("center") else ""
    if op == "cube":
        return f"{pad}cube([{_nums(tree['size'])}]{center});"
    if op == "cylinder":
        size = f"r={_num(tree['r'])}" if "r" in tree else f"d={_num(tree['d'])}"
        return f"{pad}cylinder(h={_num(tree['h'])}, {size}{center});"
    if op == "sphere":
        return f"{pad}sphere({'r' if 'r' in tree else 'd'}={_num(tree.get('r', tree.get('d')))});"
    head = {"translate": f"translate([{_nums(tree.get('v', []))}])", "rotate": f"rotate([{_nums(tree.get('a', []))}])"}.get(op, f"{op}()")  # fmt: skip
    body = "\n".join(to_scad(child, indent + 1) for child in tree["children"])
    return f"{pad}{head} {{\n{body}\n{pad}}}"


def _num(value: Any) -> str:
    return f"{float(value):.6g}"


def _nums(values: Any) -> str:
    return ", ".join(_num(v) for v in values)


def dumps(tree: dict[str, Any]) -> str:
    """The canonical one-line JSON of a tree (what references use)."""
    return json.dumps(tree, separators=(",", ":"))


# Constructors that keep the generators readable.
def cube(x: float, y: float, z: float, center: bool = False) -> dict[str, Any]:
    return {"op": "cube", "size": [x, y, z], "center": center}


def cylinder(h: float, r: float, center: bool = False) -> dict[str, Any]:
    return {"op": "cylinder", "h": h, "r": r, "center": center}


def translate(v: list[float], *children: dict[str, Any]) -> dict[str, Any]:
    return {"op": "translate", "v": v, "children": list(children)}


def rotate(a: list[float], *children: dict[str, Any]) -> dict[str, Any]:
    return {"op": "rotate", "a": a, "children": list(children)}


def union(*children: dict[str, Any]) -> dict[str, Any]:
    return {"op": "union", "children": list(children)}


def difference(*children: dict[str, Any]) -> dict[str, Any]:
    return {"op": "difference", "children": list(children)}
