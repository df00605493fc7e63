"""`list_ops/order.py`: deduplicate, rotate, flatten."""

from __future__ import annotations

import json

from posttrain.domains.list_ops.order import Deduplicate, Flatten, Rotate, _rotated


def test_dedupe_inputs_always_hold_a_repeat() -> None:
    domain = Deduplicate()
    for seed in range(20):
        task = domain.generate(seed, 1)
        assert task.answer != ",".join(str(v) for v in task.meta["values"])


def test_dedupe_refuses_keeping_last_occurrences() -> None:
    domain = Deduplicate()
    task = domain.generate(0, 1)
    task.meta["values"] = [3, 1, 3, 2]
    assert domain.judge(task, "3,1,2").passed
    assert not domain.judge(task, "1,3,2").passed


def test_rotation_directions_follow_the_prompt() -> None:
    assert _rotated([1, 2, 3, 4], 1, "left") == [2, 3, 4, 1]
    assert _rotated([1, 2, 3, 4], 5, "right") == [4, 1, 2, 3]


def test_rotate_refuses_the_other_direction() -> None:
    domain = Rotate()
    task = domain.generate(2, 6)
    m = task.meta
    other = "right" if m["direction"] == "left" else "left"
    wrong = ",".join(str(v) for v in _rotated(m["values"], m["k"], other))
    assert domain.judge(task, task.answer).passed and not domain.judge(task, wrong).passed


def test_flatten_answer_lists_the_leaves_of_the_shown_json() -> None:
    domain = Flatten()
    task = domain.generate(3, 9)
    shown = json.loads(task.prompt[0].content.split("\n")[1])
    assert shown == task.meta["nested"] and any(isinstance(x, list) for x in shown)


def test_flatten_refuses_a_bracketed_answer() -> None:
    domain = Flatten()
    task = domain.generate(0, 4)
    assert not domain.judge(task, f"[{task.answer}]").passed
