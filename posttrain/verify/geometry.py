"""Solid geometry checks for CAD answers: meshes in, measurements and overlaps out.

A verifier turns a model's STL (from OpenSCAD) or its own CSG into a `manifold3d.Manifold`
and compares it with a reference solid:

    solid = load_stl(stl_bytes)          # a LoadedMesh: watertight?, manifold?, the solid
    iou(solid.manifold, reference)       # volume of A∩B over A∪B (exact booleans)
    silhouette_iou(a, b, "top")          # the same for orthographic projections
    probe(solid.manifold, region, "empty")  # is a hole open? is a wall solid?
    mirror_iou(reference, axis=0)        # how symmetric about the box's centre plane
    text_silhouette(solid.manifold, "front")  # an ASCII picture, for a `render` tool

Every function here is pure and never raises on a bad mesh: an unreadable or broken
STL, or one reaching over `MAX_EXTENT` mm from the origin, gives a `LoadedMesh` with
`manifold=None` and a `problem` sentence. A solid too large for manifold3d's 2D
booleans (about 1e11 mm; they raise past it) has silhouette and mirror IoU 0 and no
picture.

Not guaranteed: STL files are read with trimesh (vertices merged); a mesh that trimesh
calls watertight may still self-intersect, which manifold3d then rejects (we report it
as not manifold). Overlap measures are of polyhedra: round features are as fine as the
segments each side used, so tolerances must absorb faceting (about 0.6% of the area of
a 32-gon circle). Text pictures are point-sampled at cell centres: thin features can
fall between samples.
"""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Literal

import manifold3d
import numpy as np

View = Literal["top", "front", "side"]
# Parts are tens to hundreds of millimetres; manifold3d's 2D booleans (integer
# coordinates) raise "Values exceed permitted range" on a solid of about 1e11 mm.
MAX_EXTENT = 1e6
# Which coordinate axis a view looks along, and which two it keeps (horizontal, vertical).
_VIEW_AXES: dict[str, tuple[int, int, int]] = {"top": (2, 0, 1), "front": (1, 0, 2), "side": (0, 1, 2)}  # fmt: skip


@dataclass
class LoadedMesh:
    """An STL read back: its measures, and the solid when it is a valid 2-manifold."""

    manifold: manifold3d.Manifold | None
    watertight: bool
    triangles: int
    bounds: tuple[float, float, float, float, float, float] | None
    problem: str = ""


def load_stl(data: bytes, max_triangles: int = 400_000) -> LoadedMesh:
    """Read binary or ASCII STL bytes; never raises."""
    import trimesh  # heavy import, only where STL files are read

    try:
        mesh = trimesh.load(io.BytesIO(data), file_type="stl", process=True)
    except Exception as exc:
        return LoadedMesh(None, False, 0, None, f"the STL could not be read ({type(exc).__name__})")
    if not isinstance(mesh, trimesh.Trimesh) or len(mesh.faces) == 0:
        return LoadedMesh(None, False, 0, None, "the STL holds no triangles")
    if len(mesh.faces) > max_triangles:
        return LoadedMesh(None, False, len(mesh.faces), None, f"the mesh has over {max_triangles} triangles")  # fmt: skip
    lo, hi = mesh.bounds
    bounds = (float(lo[0]), float(lo[1]), float(lo[2]), float(hi[0]), float(hi[1]), float(hi[2]))
    if not all(abs(v) <= MAX_EXTENT for v in bounds):  # NaN fails this too
        return LoadedMesh(None, False, len(mesh.faces), bounds, f"the mesh has a coordinate beyond ±{MAX_EXTENT:g} mm (or not a number)")  # fmt: skip
    watertight = bool(mesh.is_watertight and mesh.is_winding_consistent)
    if not watertight:
        return LoadedMesh(None, False, len(mesh.faces), bounds, "the mesh is not watertight (open or non-manifold edges)")  # fmt: skip
    solid = manifold_from_arrays(np.asarray(mesh.vertices), np.asarray(mesh.faces))
    if solid is None:
        return LoadedMesh(None, True, len(mesh.faces), bounds, "the mesh is not a valid 2-manifold")
    if solid.volume() <= 0:
        return LoadedMesh(None, True, len(mesh.faces), bounds, "the mesh encloses no volume (inside out?)")  # fmt: skip
    return LoadedMesh(solid, True, len(mesh.faces), bounds)


def manifold_from_arrays(vertices: np.ndarray, faces: np.ndarray) -> manifold3d.Manifold | None:
    """A Manifold from vertex and triangle arrays, or None when manifold3d rejects them."""
    try:
        mesh = manifold3d.Mesh(
            vert_properties=np.ascontiguousarray(vertices, dtype=np.float32),
            tri_verts=np.ascontiguousarray(faces, dtype=np.uint32),
        )
        solid = manifold3d.Manifold(mesh)
    except Exception:
        return None
    if solid.status() != manifold3d.Error.NoError or solid.is_empty():
        return None
    return solid


def bounds_of(solid: manifold3d.Manifold) -> tuple[float, float, float, float, float, float]:
    """(xmin, ymin, zmin, xmax, ymax, zmax)."""
    box = solid.bounding_box()
    return (box[0], box[1], box[2], box[3], box[4], box[5])


def bounds_match(got: tuple[float, ...], want: tuple[float, ...], tolerance: float = 0.3) -> bool:
    """Every face of the box within `tolerance` (mm) or 1% of the largest extent."""
    extent = max(want[3] - want[0], want[4] - want[1], want[5] - want[2], 1e-9)
    limit = max(tolerance, 0.01 * extent)
    return all(abs(g - w) <= limit for g, w in zip(got, want, strict=True))


def relative_error(got: float, want: float) -> float:
    return abs(got - want) / max(abs(want), 1e-9)


def iou(a: manifold3d.Manifold, b: manifold3d.Manifold) -> float:
    """Volume of the intersection over the volume of the union (1.0 for the same solid).

    One boolean, not two: the union's volume is |A| + |B| - |A∩B|."""
    both = (a ^ b).volume()
    union = a.volume() + b.volume() - both
    if union <= 0:
        return 0.0
    return float(min(max(both / union, 0.0), 1.0))


def _projection(solid: manifold3d.Manifold, view: View) -> manifold3d.CrossSection:
    """The outline seen along the view's axis, in the view's (horizontal, vertical) axes;
    RuntimeError for a solid too large for 2D booleans (module docstring)."""
    along = _VIEW_AXES[view][0]
    if along == 2:
        return solid.project()
    # Turn the solid so that the viewing axis becomes z, keeping the view's axes in order.
    turned = solid.rotate([-90.0, 0.0, 0.0]) if along == 1 else solid.rotate([0.0, 90.0, 0.0]).rotate([0.0, 0.0, 90.0])  # fmt: skip
    section = turned.project()
    if along == 0:
        return section.mirror([1.0, 0.0])
    return section


def silhouette_iou(a: manifold3d.Manifold, b: manifold3d.Manifold, view: View) -> float:
    """Area IoU of the two solids' orthographic silhouettes in `view` (0 when either is
    too large for 2D booleans)."""
    try:
        pa, pb = _projection(a, view), _projection(b, view)
        union = (pa + pb).area()
        both = (pa ^ pb).area()
    except RuntimeError:  # "Values exceed permitted range"
        return 0.0
    if union <= 0:
        return 0.0
    return float(min(max(both / union, 0.0), 1.0))


def probe(solid: manifold3d.Manifold, region: manifold3d.Manifold, expect: Literal["empty", "full"], tolerance: float = 0.02) -> bool:  # fmt: skip
    """Is `region` free of material ("empty": an open hole, a cavity) or all material
    ("full": a wall, the rim around a hole), up to `tolerance` of its volume?"""
    size = region.volume()
    if size <= 0:
        return False
    stray = (solid ^ region).volume() if expect == "empty" else (region - solid).volume()
    return bool(stray <= tolerance * size)


def mirror_iou(solid: manifold3d.Manifold, axis: int) -> float:
    """How mirror-symmetric the solid is across the centre plane of its box normal to
    `axis`: the smaller area IoU, over the two views that see that axis, of a silhouette
    with its own mirror image (2D booleans: a hundred times faster than 3D ones); 0 when
    the solid is too large for them."""
    views: list[View] = [v for v in ("top", "front", "side") if axis in _VIEW_AXES[v][1:]]  # type: ignore[misc]
    scores = []
    for view in views:
        try:
            section = _projection(solid, view)
            which = 0 if _VIEW_AXES[view][1] == axis else 1
            lo, hi = section.bounds()[which], section.bounds()[which + 2]
            normal = [1.0, 0.0] if which == 0 else [0.0, 1.0]
            shift = [lo + hi, 0.0] if which == 0 else [0.0, lo + hi]
            mirrored = section.mirror(normal).translate(shift)
            union = (section + mirrored).area()
            scores.append((section ^ mirrored).area() / union if union > 0 else 0.0)
        except RuntimeError:  # "Values exceed permitted range"
            return 0.0
    return float(min(scores))


def text_silhouette(solid: manifold3d.Manifold, view: View, columns: int = 48) -> str:
    """An ASCII picture of the silhouette: '#' inside, '.' outside, rows top down, with
    the axes and the millimetres per cell in a header line."""
    try:
        section = _projection(solid, view)
    except RuntimeError:  # "Values exceed permitted range"
        return f"{view} view: too large to draw (over about 1e11 mm)"
    polygons = [np.asarray(p, dtype=float) for p in section.to_polygons() if len(p) >= 3]
    _, h_axis, v_axis = _VIEW_AXES[view]
    if not polygons:
        return f"{view} view: empty"
    points = np.concatenate(polygons)
    (x0, y0), (x1, y1) = points.min(axis=0), points.max(axis=0)
    cell = max((x1 - x0) / columns, (y1 - y0) / columns, 1e-6)
    # Terminal cells are about twice as tall as wide: sample rows at twice the pitch.
    nx, ny = max(1, int(np.ceil((x1 - x0) / cell))), max(1, int(np.ceil((y1 - y0) / (2 * cell))))
    xs = x0 + (np.arange(nx) + 0.5) * cell
    ys = y1 - (np.arange(ny) + 0.5) * 2 * cell
    gx, gy = np.meshgrid(xs, ys)
    inside = np.zeros(gx.shape, dtype=bool)
    for poly in polygons:  # even-odd rule over every contour handles holes
        inside ^= _crossings(poly, gx, gy)
    h, v = "xyz"[h_axis], "xyz"[v_axis]
    header = (
        f"{view} view: {h} across ({x0:.4g}..{x1:.4g} mm), {v} up ({y0:.4g}..{y1:.4g} mm); "
        f"a column is {cell:.3g} mm, a row {2 * cell:.3g} mm"
    )
    rows = ["".join("#" if v else "." for v in row) for row in inside]
    return header + "\n" + "\n".join(rows)


def _crossings(poly: np.ndarray, gx: np.ndarray, gy: np.ndarray) -> np.ndarray:
    """Points inside one closed polygon by ray crossing parity (vectorised over the grid)."""
    inside = np.zeros(gx.shape, dtype=bool)
    xa, ya = poly[:, 0], poly[:, 1]
    xb, yb = np.roll(xa, -1), np.roll(ya, -1)
    for ax, ay, bx, by in zip(xa, ya, xb, yb, strict=True):
        if ay == by:
            continue
        spans = (ay > gy) != (by > gy)
        cross_x = ax + (gy - ay) * (bx - ax) / (by - ay)
        inside ^= spans & (gx < cross_x)
    return inside
