"""Single-turn function calling: equivalent forms pass, near-misses and prose fail."""

from __future__ import annotations

import json

from posttrain.domains.agents.function_calling import (
    NO_CALL,
    FunctionNestedDomain,
    FunctionParallelDomain,
    FunctionRelevanceDomain,
    FunctionSelectDomain,
    calls_in,
)
from posttrain.types import Task


def _call(name: str, arguments: dict) -> str:
    return "<tool_call>" + json.dumps({"name": name, "arguments": arguments}) + "</tool_call>"


def _gold(task: Task) -> tuple[str, dict]:
    return task.meta["call"]["name"], task.meta["call"]["arguments"]


def test_argument_order_spacing_and_case_do_not_matter() -> None:
    domain = FunctionSelectDomain()
    task = domain.generate(3, 5)
    name, args = _gold(task)
    shuffled = dict(reversed(list(args.items())))
    shouted = {k: v.upper() if isinstance(v, str) else v for k, v in shuffled.items()}
    assert domain.judge(task, "  " + _call(name, shouted) + "\n").passed


def test_a_missing_or_extra_or_changed_argument_fails() -> None:
    domain = FunctionSelectDomain()
    task = domain.generate(1, 5)
    name, args = _gold(task)
    key = sorted(args)[0]
    assert not domain.judge(task, _call(name, {k: v for k, v in args.items() if k != key})).passed
    assert not domain.judge(task, _call(name, {**args, "extra": 1})).passed
    assert not domain.judge(task, _call(name, {**args, key: 12345})).passed


def test_text_around_the_call_fails() -> None:
    domain = FunctionSelectDomain()
    task = domain.generate(0, 2)
    assert calls_in("Sure! " + task.answer) is None
    assert not domain.judge(task, "Sure! " + task.answer).passed


def test_nested_lists_keep_the_users_order() -> None:
    domain = FunctionNestedDomain()
    task = next(
        t
        for t in (domain.generate(s, 9) for s in range(20))
        if len(_gold(t)[1].get("items", [])) > 1
    )
    name, args = _gold(task)
    assert domain.judge(task, _call(name, args)).passed
    assert not domain.judge(task, _call(name, {**args, "items": args["items"][::-1]})).passed


def test_parallel_calls_match_in_any_order_with_partial_credit() -> None:
    domain = FunctionParallelDomain()
    task = domain.generate(2, 7)
    calls = [_call(c["name"], c["arguments"]) for c in task.meta["calls"]]
    assert domain.judge(task, "\n\n".join(calls[::-1])).passed
    partial = domain.judge(task, "\n".join(calls[:-1]))
    assert not partial.passed and partial.reward == (len(calls) - 1) / len(calls)


def test_relevance_wants_no_call_exactly_when_no_function_fits() -> None:
    domain = FunctionRelevanceDomain()
    tasks = [domain.generate(s, 4) for s in range(12)]
    no_call = [t for t in tasks if not t.meta["specs"]]
    needs_call = [t for t in tasks if t.meta["specs"]]
    assert no_call and needs_call
    for task in no_call:
        assert f'"name": "{_gold(task)[0]}"' not in task.prompt[0].content
        assert (
            domain.judge(task, f" {NO_CALL}\n").passed
            and not domain.judge(task, "no_call please").passed
        )
    for task in needs_call:
        assert not domain.judge(task, NO_CALL).passed and domain.judge(task, task.answer).passed
