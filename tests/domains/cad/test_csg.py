"""csg.py's parser: numbers too big for a float are refused as malformed answers."""

from __future__ import annotations

import pytest

from posttrain.domains.cad.csg import CsgError, parse_csg
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
