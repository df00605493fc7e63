"""Judging a candidate solid against a part spec: the components and the verdict.

Both OpenSCAD answers (compiled in the sandbox, read back from STL) and CSG answers
(built by manifold3d) end here:

    verdict = judge_part(part_meta, load_stl(stl))        # part_meta: task.meta["part"]
    verdict = judge_part(part_meta, LoadedMesh(solid, True, 0, bounds_of(solid)))

Components (each in [0, 1]) and what passing needs:

- `manifold`  — the mesh is watertight and a valid 2-manifold (needed for the rest)
- `bbox`      — every face of the bounding box within 0.3 mm (or 1% of the size)
- `volume`    — within 3% of the reference volume
- `features`  — the share of the spec's probes that hold (holes open and of the right
  size, hubs, standoffs and keyways of the right size, walls as thick as asked,
  cavities empty): all must
- `holes`     — the genus (number of through holes) equals the spec's
- `symmetry`  — the share of the reference's mirror symmetries the candidate keeps
- `iou`       — volume IoU with the reference, ≥ 0.95
- `silhouette` — mean IoU of the top and front silhouettes, ≥ 0.95

The reward is a weighted mean of the components (features and iou count double), 1.0
only when everything passes; a failed answer gets at most 0.95.

Not guaranteed: the reference solid is cached per spec in this process (64 specs);
the candidate is compared in place, never re-aligned, because specs state placement.
"""

from __future__ import annotations

import functools
import json
from typing import Any

import manifold3d

from posttrain.domains.cad.csg import build
from posttrain.types import Verdict
from posttrain.verify.geometry import (
    LoadedMesh,
    bounds_match,
    bounds_of,
    iou,
    mirror_iou,
    probe,
    relative_error,
    silhouette_iou,
)

WEIGHTS = {"manifold": 1, "bbox": 1, "volume": 1, "features": 2, "holes": 1, "symmetry": 1, "iou": 2, "silhouette": 1}  # fmt: skip
IOU_PASS = 0.95
SILHOUETTE_PASS = 0.95
VOLUME_TOLERANCE = 0.03


@functools.lru_cache(maxsize=64)
def _reference(tree_json: str) -> tuple[manifold3d.Manifold, tuple[int, ...]]:
    """The reference solid and the axes across which it is mirror-symmetric."""
    solid = build(json.loads(tree_json))
    axes = tuple(axis for axis in range(3) if mirror_iou(solid, axis) >= 0.995)
    return solid, axes


@functools.lru_cache(maxsize=64)
def _probe_regions(probes_json: str) -> tuple[tuple[tuple[str, str, manifold3d.Manifold], ...], dict[str, tuple[manifold3d.Manifold, float]]]:  # fmt: skip
    """Each probe's label, expectation and region; and per expectation the union of its
    regions with the smallest region's volume (for the one-boolean fast path)."""
    regions = tuple((p["label"], p["expect"], build(p["region"])) for p in json.loads(probes_json))
    batches = {}
    for expect in ("empty", "full"):
        group = [r for _, e, r in regions if e == expect]
        if group:
            joined = manifold3d.Manifold.batch_boolean(group, manifold3d.OpType.Add)
            batches[expect] = (joined, min(r.volume() for r in group))
    return regions, batches


def failed_probes(solid: manifold3d.Manifold, probes: list[dict[str, Any]]) -> tuple[list[str], int]:  # fmt: skip
    """The labels of the probes `solid` fails, and how many probes there are. When the
    whole group's stray volume is under 2% of its smallest region, every probe in it holds,
    so one boolean per group settles the usual case."""
    regions, batches = _probe_regions(json.dumps(probes, sort_keys=True))
    failed = []
    for expect, (joined, smallest) in batches.items():
        stray = (solid ^ joined).volume() if expect == "empty" else (joined - solid).volume()
        if stray <= 0.02 * smallest:
            continue
        failed += [
            label
            for label, e, region in regions
            if e == expect and not probe(solid, region, "empty" if e == "empty" else "full")
        ]
    return failed, len(regions)


def reference_solid(part: dict[str, Any]) -> manifold3d.Manifold:
    """The reference solid of a part's meta (cached)."""
    return _reference(json.dumps(part["tree"], sort_keys=True))[0]


def judge_part(part: dict[str, Any], candidate: LoadedMesh) -> Verdict:
    """The verdict for a candidate solid against `part` (a `PartSpec` as task meta)."""
    reference, sym_axes = _reference(json.dumps(part["tree"], sort_keys=True))
    components = dict.fromkeys(WEIGHTS, 0.0)
    solid = candidate.manifold
    if solid is None:
        if candidate.bounds is not None:
            components["bbox"] = float(bounds_match(candidate.bounds, bounds_of(reference)))
        return _verdict(components, False, f"The model is not a valid solid: {candidate.problem or 'no mesh'}.")  # fmt: skip
    components["manifold"] = 1.0
    components["bbox"] = float(bounds_match(bounds_of(solid), bounds_of(reference)))
    components["volume"] = float(relative_error(solid.volume(), reference.volume()) <= VOLUME_TOLERANCE)  # fmt: skip
    failed, count = failed_probes(solid, part["probes"])
    components["features"] = 1.0 - len(failed) / count if count else 1.0
    components["holes"] = float(solid.genus() == part["genus"])
    kept = [axis for axis in sym_axes if mirror_iou(solid, axis) >= 0.98]
    components["symmetry"] = len(kept) / len(sym_axes) if sym_axes else 1.0
    components["iou"] = iou(solid, reference)
    components["silhouette"] = (silhouette_iou(solid, reference, "top") + silhouette_iou(solid, reference, "front")) / 2  # fmt: skip
    problems = []
    if not components["bbox"]:
        want = ", ".join(f"{v:.4g}" for v in bounds_of(reference))
        problems.append(f"the bounding box is off (the spec's box is {want})")
    if not components["volume"]:
        problems.append(f"the volume is {solid.volume():.5g} mm³, more than 3% from the spec's")
    if failed:
        problems.append("features fail: " + "; ".join(failed[:4]) + (" ..." if len(failed) > 4 else ""))  # fmt: skip
    if not components["holes"]:
        problems.append(f"it has {solid.genus()} through hole(s), the spec {part['genus']}")
    if components["symmetry"] < 1.0:
        problems.append("it lost a symmetry of the spec")
    if components["iou"] < IOU_PASS:
        problems.append(f"its overlap with the spec's solid is IoU {components['iou']:.3f} (needs {IOU_PASS})")  # fmt: skip
    if components["silhouette"] < SILHOUETTE_PASS:
        problems.append(f"its silhouettes differ (IoU {components['silhouette']:.3f})")
    if problems:
        return _verdict(components, False, "The model misses the spec: " + "; ".join(problems) + ".")  # fmt: skip
    return _verdict(components, True, "The model matches the spec: size, volume, features, holes, symmetry and shape.")  # fmt: skip


def _verdict(components: dict[str, float], passed: bool, reason: str) -> Verdict:
    total = sum(WEIGHTS.values())
    reward = sum(WEIGHTS[k] * components[k] for k in WEIGHTS) / total
    reward = 1.0 if passed else min(reward, 0.95)
    return Verdict(round(reward, 6), passed, reason, {k: round(v, 6) for k, v in components.items()})  # fmt: skip
