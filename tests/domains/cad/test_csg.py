"""csg.py's parser: numbers too big for a float are refused as malformed answers; trees
over the cost budget are refused before they are built."""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import pytest

from posttrain.domains.cad import csg
from posttrain.domains.cad.csg import COST_BUDGET, CsgError, estimated_cost, parse_csg
from posttrain.domains.cad.csg_tasks import CsgEnclosureDomain, CsgPartDomain

BIG = "1" + "0" * 400  # a JSON integer past float's range
HUGE = "1" * 5000  # past Python's 4300-digit limit for int from text


def _sphere(radius: str) -> str:
    return '{"op": "sphere", "r": ' + radius + "}"


@pytest.mark.parametrize("number", [BIG, HUGE], ids=["past float range", "over 4300 digits"])
def test_a_huge_integer_is_refused_with_a_reason(number: str) -> None:
    with pytest.raises(CsgError, match="number|larger"):
        parse_csg(_sphere(number))


@pytest.mark.parametrize("domain", [CsgPartDomain(), CsgEnclosureDomain()], ids=lambda d: d.id)
@pytest.mark.parametrize("number", [BIG, HUGE], ids=["past float range", "over 4300 digits"])
def test_a_huge_integer_fails_the_answer_without_a_verifier_error(domain: CsgPartDomain, number: str) -> None:  # fmt: skip
    task = domain.generate(0, 1)
    verdict = domain.judge(task, _sphere(number))
    assert verdict.error is None and not verdict.passed
    assert "not a valid CSG tree" in verdict.reason


def _spheres(n: int, radius: float = 4000, apart: float = 0.0) -> dict[str, Any]:
    """`n` spheres in a row, centres `apart` mm apart (0: all at one centre)."""
    ball = {"op": "sphere", "r": radius}
    return csg.union(*(csg.translate([i * apart, 0, 0], ball) for i in range(n)))


def test_estimated_cost_counts_the_triangles_of_overlapping_primitives() -> None:
    sphere = 512  # manifold3d's sphere at 32 segments
    assert csg.build({"op": "sphere", "r": 1}).num_tri() == sphere
    assert estimated_cost(_spheres(2, radius=10, apart=100)) == 2 * sphere  # apart
    assert estimated_cost(_spheres(2, radius=10, apart=15)) == 2 * 2 * sphere  # overlapping
    assert estimated_cost(_spheres(3, radius=10)) == 3 * 3 * sphere


def test_estimated_cost_places_primitives_as_manifold3d_does() -> None:
    tree = csg.rotate([30, 40, 50], csg.translate([100, 20, 0], csg.cube(2, 2, 2, center=True)))
    box = csg.build(tree).bounding_box()
    built = (np.array(box[:3]) + np.array(box[3:])) / 2
    centers: list[np.ndarray] = []
    csg._primitives(tree, np.eye(3), np.zeros(3), centers, [], [])
    assert np.allclose(centers[0], built, atol=1e-6)


def test_a_tree_over_the_cost_budget_is_refused_naming_the_budget() -> None:
    with pytest.raises(CsgError, match=f"over the budget of {COST_BUDGET:,}"):
        parse_csg(csg.dumps(_spheres(149)))


@pytest.mark.parametrize("domain", [CsgPartDomain(), CsgEnclosureDomain()], ids=lambda d: d.id)
def test_an_over_budget_answer_fails_without_being_built(
    domain: CsgPartDomain, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_build(*args: object, **kwargs: object) -> None:
        raise AssertionError("an over-budget tree was built")

    task = domain.generate(0, 10)
    monkeypatch.setattr("posttrain.domains.cad.csg_tasks.build", no_build)
    verdict = domain.judge(task, csg.dumps(_spheres(149)))
    assert verdict.error is None and not verdict.passed and verdict.reward == 0.0
    assert "estimated cost" in verdict.reason and f"budget of {COST_BUDGET:,}" in verdict.reason


@pytest.mark.parametrize("domain", [CsgPartDomain(), CsgEnclosureDomain()], ids=lambda d: d.id)
def test_every_reference_is_far_under_the_cost_budget(domain: CsgPartDomain) -> None:
    costs = [
        estimated_cost(json.loads(domain.generate(seed, difficulty).answer))
        for difficulty in range(1, 11)
        for seed in range(5)
    ]
    assert max(costs) * 5 <= COST_BUDGET
