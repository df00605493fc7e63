"""shelves.py's judge on malformed answers."""

from __future__ import annotations

import json

from posttrain.domains.cad.shelves import SceneShelfDomain


def test_an_integer_over_4300_digits_fails_as_malformed() -> None:
    domain = SceneShelfDomain()
    task = domain.generate(0, 3)
    answer = json.loads(task.answer)
    first = next(iter(answer))
    text = json.dumps({**answer, first: "HUGE"}).replace('"HUGE"', f"[{'1' * 5000}, 0, 0]")
    verdict = domain.judge(task, text)
    assert verdict.error is None and not verdict.passed and verdict.components["format"] == 0.0
