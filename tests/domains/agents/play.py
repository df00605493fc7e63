"""Play scripted assistant turns through an `agent/*` session and verify, without tokens."""

from __future__ import annotations

from typing import Any

from posttrain.tools import parse_tool_calls
from posttrain.tools.parse import format_tool_call
from posttrain.types import Message, Rollout, Task, ToolCall, Turn, Verdict


def play(domain: Any, task: Task, turns: list[str]) -> tuple[Verdict, Any]:
    """The verdict of the assistant texts `turns` and the session they ran in."""
    session = domain.open(task, None)
    played = []
    for text in turns:
        calls = parse_tool_calls(text).calls
        for call in calls:
            session.call(call)
        if not calls:
            session.user_turn(Message("assistant", text))
        played.append(
            Turn(text=text, token_ids=[], logprobs=[], finish_reason="stop", tool_calls=calls)
        )
    rollout = Rollout("r", task.id, task.domain, task.difficulty, [], [], [], [],
                      [Message("assistant", t) for t in turns], played, Verdict(0.0, False, "unscored"))  # fmt: skip
    return domain.verify(task, rollout, session), session


def tool(name: str, /, **arguments: Any) -> str:
    """One tool call in the markup a model writes."""
    return format_tool_call(ToolCall(name, arguments))
