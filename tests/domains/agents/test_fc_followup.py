"""Follow-up function calling: arguments resolved from the conversation, decoys and repeats fail."""

from __future__ import annotations

import json
import re

from posttrain.domains.agents.fc_followup import DOMAINS, FunctionFollowupDomain
from posttrain.domains.check import check_domains
from posttrain.types import Task

DOMAIN = FunctionFollowupDomain()


def _call(name: str, arguments: dict) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def _gold(task: Task) -> tuple[str, dict]:
    return task.meta["call"]["name"], task.meta["call"]["arguments"]


def _tasks(difficulty: int, count: int = 12) -> list[Task]:
    return [DOMAIN.generate(s, difficulty) for s in range(count)]


def test_self_check_passes() -> None:
    failures = [r for r in check_domains(list(DOMAINS), difficulties=(1, 5)) if not r.ok]
    assert not failures, failures


def test_prompt_is_a_dialogue_with_tool_results_and_a_final_follow_up() -> None:
    task = DOMAIN.generate(0, 5)
    roles = [m.role for m in task.prompt]
    assert roles[0] == "system" and roles[-1] == "user"
    assert roles[1:-1] == ["user", "assistant", "tool"] * ((len(roles) - 2) // 3)
    assert all("<tool_call>" in m.content for m in task.prompt if m.role == "assistant")
    assert DOMAIN.difficulty_measure(task) == len(task.prompt)


def test_more_difficulty_means_a_longer_history() -> None:
    assert len(DOMAIN.generate(0, 1).prompt) < len(DOMAIN.generate(0, 10).prompt)


def _said(value: object, text: str) -> bool:
    if isinstance(value, str):
        return value.lower() in text.lower()
    return str(value) in re.findall(r"\d[\d.:-]*\d|\d", text)


def test_an_argument_taken_from_the_earlier_turn_is_required() -> None:
    for task in _tasks(3, 20):
        name, args = _gold(task)
        follow_up = task.prompt[-1].content
        history = "\n".join(m.content for m in task.prompt[1:-1])
        from_context = [
            k for k, v in args.items() if not _said(v, follow_up) and json.dumps(v) in history
        ]
        assert from_context, follow_up
        for key in from_context:
            dropped = {k: v for k, v in args.items() if k != key}
            assert not DOMAIN.judge(task, _call(name, dropped)).passed


def test_restating_the_earlier_call_unchanged_fails() -> None:
    for task in _tasks(5):
        earlier = [m.content for m in task.prompt if m.role == "assistant"]
        assert not any(DOMAIN.judge(task, text).passed for text in earlier)


def test_the_gold_call_passes_in_an_equivalent_form() -> None:
    for task in _tasks(7, 6):
        name, args = _gold(task)
        reordered = dict(reversed(list(args.items())))
        shouted = {k: v.upper() if isinstance(v, str) else v for k, v in reordered.items()}
        assert DOMAIN.judge(task, "\n" + _call(name, shouted) + "  ").passed


def test_corruptions_fail_including_the_wrong_exchanges_values() -> None:
    for task in _tasks(9, 6):
        wrong = DOMAIN.wrong(task)
        assert len(wrong) >= 3
        assert all(DOMAIN.judge(task, text).reward == 0.0 for text in wrong)


def test_prose_around_the_call_fails() -> None:
    task = DOMAIN.generate(1, 2)
    assert not DOMAIN.judge(task, "Sure, here it is: " + task.answer).passed
