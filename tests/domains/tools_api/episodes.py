"""A tokenizer-free stand-in for the episode loop, for the `tools_api` tests.

`play(domain, task, steps)` plays a plan (or a `Reference`) the way
`posttrain.rollout.episode` does: tool calls parsed from each turn's text go to the
session, a turn without calls asks the scripted user, and the episode ends when the
user has nothing to say or `max_turns` is reached. It returns the domain's verdict.

Not guaranteed: no tokens, no chat template, no context limit; the self-check in
`test_family.py` is what replays through the real loop.
"""

from __future__ import annotations

from posttrain.domains.tools_api import ApiDomain
from posttrain.domains.tools_api.framework import Plan
from posttrain.tools import parse_tool_calls
from posttrain.types import Message, Reference, Rollout, Task, Turn, Verdict


def rollout_of(domain: ApiDomain, task: Task, script: list[str]) -> Rollout:
    session = domain.open(task)
    turns: list[Turn] = []
    while True:
        text = script[len(turns)] if len(turns) < len(script) else ""
        parsed = parse_tool_calls(text)
        turn = Turn(text, [], [], "stop", tool_calls=parsed.calls)
        turns.append(turn)
        if parsed.calls or parsed.errors:
            turn.observations = [
                Message("tool", session.call(c).content, name=c.name) for c in parsed.calls
            ]
            more = True
        else:
            more = session.user_turn(Message("assistant", text)) is not None
        if not more or len(turns) >= domain.max_turns:
            break
    return Rollout(
        id="test",
        task_id=task.id,
        domain=task.domain,
        difficulty=task.difficulty,
        prompt_ids=[],
        completion_ids=[],
        loss_mask=[],
        logprobs=[],
        messages=[],
        turns=turns,
        verdict=Verdict(0.0, False, "pending"),
    )


def play(domain: ApiDomain, task: Task, steps: Plan | Reference) -> Verdict:
    reference = steps if isinstance(steps, Reference) else domain.trajectory(steps)
    rollout = rollout_of(domain, task, [m.content for m in reference.turns])
    return domain.verify(task, rollout, None)


def with_final(task: Task, final: str) -> Plan:
    """The task's reference plan with another final answer."""
    return [*task.meta["plan"][:-1], final]
