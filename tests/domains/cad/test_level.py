"""level.py's judge on malformed answers."""

from __future__ import annotations

from posttrain.domains.cad.level import SceneLevelDomain


def test_an_integer_over_4300_digits_fails_as_malformed() -> None:
    domain = SceneLevelDomain()
    task = domain.generate(0, 3)
    huge = "1" * 5000  # past Python's 4300-digit limit for int from text
    verdict = domain.judge(task, '{"key": [' + huge + ', 1], "coins": [], "enemies": []}')
    assert verdict.error is None and not verdict.passed and verdict.components["format"] == 0.0
