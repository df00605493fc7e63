"""`coding/fix-failing-test-v1`: what the prompt reveals, per-turn feedback, other correct fixes."""

from __future__ import annotations

import pytest

from posttrain.domains.coding.domain import FixFailingTestDomain, tool_turn
from posttrain.sandbox import layers
from posttrain.types import Message

from .replay import play

DOMAIN = FixFailingTestDomain()
needs_sandbox = pytest.mark.skipif(
    layers.best_mode() is None, reason="no isolation on this machine"
)


def test_difficulty_decides_how_much_the_failure_reveals() -> None:
    easy, middle, hard = (DOMAIN.generate(0, d).prompt[0].content for d in (2, 5, 9))
    assert "expected" in easy and "Failing tests:" in middle
    assert "expected" not in hard and "Failing tests:" not in hard


def test_generation_is_the_same_task_twice() -> None:
    assert DOMAIN.generate(5, 6).to_json() == DOMAIN.generate(5, 6).to_json()


@needs_sandbox
def test_the_reference_gets_dense_per_turn_feedback() -> None:
    task = DOMAIN.generate(1, 3)
    verdict = play(DOMAIN, task, DOMAIN.reference(task).turns)
    assert verdict.passed
    assert (
        verdict.components["turn_1_visible"] < 1.0 and verdict.components["turn_5_visible"] == 1.0
    )


@needs_sandbox
def test_a_whole_file_rewrite_is_as_good_as_the_patch() -> None:
    task = DOMAIN.generate(2, 4)
    turns = [tool_turn("write_file", path=p, content=t) for p, t in task.meta["fixed"].items()]
    assert play(DOMAIN, task, [*turns, Message("assistant", "Done.")]).passed


@needs_sandbox
def test_a_syntax_error_scores_zero_without_a_verifier_error() -> None:
    task = DOMAIN.generate(2, 4)
    path = task.meta["bugs"][0]["path"]
    verdict = play(DOMAIN, task, [tool_turn("write_file", path=path, content="def (:\n"), Message("assistant", "x")])  # fmt: skip
    assert verdict.reward == 0.0 and verdict.error is None
