"""JSON round-trips of the shared dataclasses."""

from __future__ import annotations

import pytest

from posttrain.types import Message, Reference, Rollout, Task, ToolCall, Turn, Verdict


def _rollout() -> Rollout:
    call = ToolCall("calculator", {"expression": "3*4"}, id="call_0")
    return Rollout(
        id="r1",
        task_id="t1",
        domain="tools/calculator-v1",
        difficulty=2,
        prompt_ids=[1, 2],
        completion_ids=[3, 4, 5],
        loss_mask=[1, 0, 1],
        logprobs=[-0.1, 0.0, -0.2],
        messages=[Message("user", "calc 3*4"), Message("assistant", "x", tool_calls=[call])],
        turns=[
            Turn("x", [3], [-0.1], "stop", tool_calls=[call], observations=[Message("tool", "12")])
        ],
        verdict=Verdict(1.0, True, "right", components={"format": 1.0}),
    )


def test_rollout_round_trips_through_json_with_nested_types() -> None:
    original = _rollout()
    again = Rollout.from_json(original.to_json())
    assert again == original
    assert isinstance(again.turns[0].tool_calls[0], ToolCall)
    assert isinstance(again.verdict, Verdict)


def test_to_dict_is_asdict_and_a_copy() -> None:
    """The fast `to_dict` gives `dataclasses.asdict`'s result, sharing no list with it."""
    from dataclasses import asdict

    original = _rollout()
    plain = original.to_dict()
    assert plain == asdict(original)
    plain["prompt_ids"].append(99)
    plain["turns"][0]["token_ids"].append(99)
    plain["messages"][1]["tool_calls"][0]["arguments"]["expression"] = "0"
    assert original == _rollout()  # the rollout itself is untouched


def test_task_round_trips_through_json() -> None:
    task = Task("t", "arith/addition-v1", [Message("user", "1+2")], "3", 1, 7, meta={"k": [1]})
    assert Task.from_json(task.to_json()) == task


def test_reference_final_is_the_last_turn() -> None:
    ref = Reference([Message("assistant", "call"), Message("assistant", "42")])
    assert ref.final == "42"
    assert Reference.single("7").final == "7"


def test_unknown_field_is_rejected_by_name() -> None:
    with pytest.raises(ValueError, match="bogus"):
        Verdict.from_dict({"reward": 1.0, "passed": True, "reason": "", "bogus": 1})


def test_verdict_reward_outside_unit_interval_is_rejected() -> None:
    with pytest.raises(ValueError, match="reward"):
        Verdict(1.5, True, "too much")
