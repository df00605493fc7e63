"""The 3D/CAD and scene-layout family (`cad/...`): parametric parts and spatial layouts.

CAD: `cad/openscad-part-v2`, `cad/openscad-render-v2` (multi-turn, a `render` tool),
`cad/openscad-modify-v2` (OpenSCAD compiled in the sandbox, tasks.py);
`cad/csg-part-v2`, `cad/csg-volume-v1`, `cad/csg-enclosure-v2` (our JSON CSG built with
manifold3d, csg_tasks.py). Scenes: `cad/scene-room-v1`, `cad/scene-room-render-v1`
(scenes.py), `cad/scene-level-v1` (level.py), `cad/scene-shelf-v1` (shelves.py).

    from posttrain.domains.cad import DOMAINS

Parts come from parts.py (spec, reference CSG, probes), solids are judged in judge.py
with posttrain/verify/geometry.py; docs/domains/cad.md has the details and baselines.

Not guaranteed: the OpenSCAD domains need the `openscad` binary and a sandbox; without
them their verdicts are verifier errors (`Verdict.error`), not wrong answers.
"""

from posttrain.domains.base import Domain
from posttrain.domains.cad.csg_tasks import DOMAINS as _CSG
from posttrain.domains.cad.level import DOMAINS as _LEVEL
from posttrain.domains.cad.scenes import DOMAINS as _SCENES
from posttrain.domains.cad.shelves import DOMAINS as _SHELVES
from posttrain.domains.cad.tasks import DOMAINS as _SCAD

DOMAINS: tuple[Domain, ...] = (*_SCAD, *_CSG, *_SCENES, *_LEVEL, *_SHELVES)

__all__ = ["DOMAINS"]
