"""`code/function-synthesis-v1`: hidden cases judged in the sandbox; shortcuts never pass."""

from __future__ import annotations

import pytest

from posttrain.domains.code_synthesis import TEMPLATES, FunctionSynthesisDomain, extract_code
from posttrain.sandbox import layers
from posttrain.types import Message, Rollout, Task, Turn, Verdict

pytestmark = pytest.mark.skipif(layers.best_mode() is None, reason="no isolation on this machine")
DOMAIN = FunctionSynthesisDomain()


def judge(task: Task, text: str) -> Verdict:
    turn = Turn(text=text, token_ids=[], logprobs=[], finish_reason="stop")
    rollout = Rollout("r", task.id, task.domain, task.difficulty, [], [], [], [],
                      [Message("assistant", text)], [turn], Verdict(0.0, False, "-"))  # fmt: skip
    return DOMAIN.verify(task, rollout, None)


def task_for(template: str, difficulty: int = 4) -> Task:
    return next(
        t for s in range(200) if (t := DOMAIN.generate(s, difficulty)).meta["template"] == template
    )


@pytest.mark.parametrize("template", [t.name for t in TEMPLATES])
def test_every_template_reference_passes(template: str) -> None:
    task = task_for(template)
    verdict = judge(task, DOMAIN.reference(task).final)
    assert verdict.passed and verdict.components["pass_rate"] == 1.0, verdict


def test_hidden_cases_are_not_in_the_prompt() -> None:
    task = task_for("sum_of_evens", difficulty=8)
    prompt = task.prompt[0].content
    assert all(repr(case[0]) not in prompt for case in task.meta["cases"] if case[0])


def test_hard_coding_the_shown_examples_fails() -> None:
    task = task_for("running_max")
    shown = [line for line in task.prompt[0].content.splitlines() if line.startswith(">>> ")]
    arg = shown[0][len(">>> running_max(") : -1]
    out = task.prompt[0].content.splitlines()[
        task.prompt[0].content.splitlines().index(shown[0]) + 1
    ]
    cheat = (
        f"```python\ndef running_max(numbers):\n    return {out} if numbers == {arg} else []\n```"
    )
    verdict = judge(task, cheat)
    assert not verdict.passed and verdict.components["pass_rate"] < 1.0


def test_wrong_function_name_or_no_code_block_fails_on_format() -> None:
    task = task_for("dedupe")
    for text in (
        "def dedupe(items): return items",
        "```python\ndef unique(items): return items\n```",
    ):
        verdict = judge(task, text)
        assert verdict.components["format"] == 0.0 and verdict.reward == 0.0


def test_extract_code_takes_the_last_python_block() -> None:
    text = "First:\n```python\nx = 1\n```\nbetter:\n```py\nx = 2\n```"
    assert extract_code(text) == "x = 2\n" and extract_code("no code") is None
