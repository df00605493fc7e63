"""scenes.py: malformed scenes fail the verdict and come back from `render` as tool errors."""

from __future__ import annotations

import json

from posttrain.domains.cad.scenes import SceneRoomDomain, SceneRoomRenderDomain, judge_layout
from posttrain.types import ToolCall

HUGE = "1" * 5000  # past Python's 4300-digit limit for int from text


def _huge_scene(layout_json: str) -> str:
    layout = json.loads(layout_json)
    first = next(iter(layout))
    return json.dumps({**layout, first: {**layout[first], "x": "HUGE"}}).replace('"HUGE"', HUGE)


def test_an_integer_over_4300_digits_fails_as_malformed() -> None:
    task = SceneRoomDomain().generate(0, 3)
    verdict = judge_layout(task.meta["scene"], _huge_scene(task.answer))
    assert verdict.error is None and not verdict.passed and verdict.components["format"] == 0.0


def test_the_render_tool_answers_an_integer_over_4300_digits_with_an_error() -> None:
    domain = SceneRoomRenderDomain()
    task = domain.generate(0, 3)
    session = domain.open(task)
    observation = session.call(ToolCall("render", {"scene": _huge_scene(task.answer)}, id="c0"))
    assert observation.error and "not valid JSON" in observation.content
    assert session.snapshot() == []
