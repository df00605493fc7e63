"""Test helper: serve tool-call turns in a domain's session and judge the outcome."""

from __future__ import annotations

from typing import Any

from posttrain.types import Message, Rollout, Task, Turn, Verdict


def play(domain: Any, task: Task, turns: list[Message]) -> Verdict:
    """Each message's tool calls served in order (one turn each), then `verify`."""
    session = domain.open(task) if hasattr(domain, "open") else None
    played = []
    for message in turns:
        for call in message.tool_calls:
            assert session is not None
            session.call(call)
        played.append(Turn(text=message.content, token_ids=[], logprobs=[], finish_reason="stop", tool_calls=message.tool_calls))  # fmt: skip
    rollout = Rollout("r", task.id, task.domain, task.difficulty, [], [], [], [], list(turns), played, Verdict(0.0, False, "-"))  # fmt: skip
    return domain.verify(task, rollout, session)  # type: ignore[no-any-return]
