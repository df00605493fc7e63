"""The `geo` family: plane and solid geometry tasks with objective geometric checks.

    from posttrain.domains.geo import DOMAINS
    for domain in DOMAINS:
        task = domain.generate(seed=0, difficulty=3)

Every domain is a single-turn `AnswerDomain` in modality "geometry" (the prompt is a
scene given as coordinates and shapes), tools "none", verified by one of:

- geometry — the answer is a geometric object checked by exact predicates, and many
  answers pass: `polygons.py` (a point inside a region with holes),
  `constructions.py` (a lattice triangle of a given area around given points);
- validity — a constraint check: `constructions.py` (a packing of rectangles);
- numeric — a measured quantity within a stated tolerance: `polygons.py` (polygon
  area), `segments.py` (a segment intersection point), `solids.py` (volume and
  surface area of a union of boxes);
- exact — one discrete fact: `segments.py` (the convex hull's vertices in order);
- set_match — `polygons.py` (the points strictly inside a polygon).

`plane.py` holds the exact predicates, generators and strict point parser they share.

Not guaranteed: answers must be exactly in the format each prompt states (prose
around the answer scores 0); all shapes are polygons, circles and axis-aligned boxes.
"""

from posttrain.domains.answer_domain import AnswerDomain
from posttrain.domains.geo import constructions, polygons, segments, solids

DOMAINS: tuple[AnswerDomain, ...] = (
    *polygons.DOMAINS,
    *constructions.DOMAINS,
    *segments.DOMAINS,
    *solids.DOMAINS,
)

__all__ = ["DOMAINS"]
