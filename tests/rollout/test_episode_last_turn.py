"""The last allowed turn (`max_turns`): its tool calls run in the session, and their
observations are recorded like any other turn's (messages, `Turn.observations`,
environment tokens with loss mask 0), without the header of a next model turn."""

from __future__ import annotations

from typing import Any

from posttrain.domains import Domain
from posttrain.domains.calculator import CalculatorDomain, CalculatorSession, format_tool_call
from posttrain.engines import ReplayEngine
from posttrain.rollout.episode import run_episodes
from posttrain.rollout.scheduler import Scheduler, SchedulerConfig
from posttrain.types import Message, Reference, Rollout, Task, ToolCall
from tests.rollout.test_episode import PARAMS, ExplodingCalculator


class KeptCalculator(CalculatorDomain):
    """The calculator, keeping each session it opens so a test can see its calls."""

    id = "test/kept-calculator-v1"

    def __init__(self) -> None:
        self.sessions: list[CalculatorSession] = []

    def open(self, task: Task, sandbox: object | None = None) -> CalculatorSession:
        self.sessions.append(CalculatorSession(task))
        return self.sessions[-1]


def tool_turn(expression: str) -> Message:
    call = ToolCall("calculator", {"expression": expression}, id="call_0")
    return Message("assistant", format_tool_call(call), tool_calls=[call])


def play(turns: list[Message], tokenizer: Any, domain: Domain, **kwargs: Any) -> Rollout:
    """One episode of `domain`'s calculator task whose assistant turns are `turns`."""
    task = domain.generate(0, 3)
    engine = ReplayEngine(tokenizer)
    engine.add(task.id, Reference(turns))
    [[rollout]] = run_episodes([task], engine, tokenizer, PARAMS, lambda _: domain, **kwargs)
    return rollout


def calls_to_the_end(n: int) -> list[Message]:
    return [tool_turn(f"{k + 2}*3") for k in range(n)]


def test_the_last_turns_tool_calls_run_and_their_observations_are_recorded(
    tokenizer: Any,
) -> None:
    domain = KeptCalculator()
    rollout = play(calls_to_the_end(domain.max_turns), tokenizer, domain)
    [session] = domain.sessions
    assert len(session.calls) == domain.max_turns  # the last call ran ...
    last = rollout.turns[-1]
    assert [(m.role, m.content) for m in last.observations] == [("tool", "12")]  # ... and shows
    assert rollout.messages[-1] == last.observations[0]
    assert rollout.error is None
    assert [len(t.observations) for t in rollout.turns] == [1] * domain.max_turns


def test_no_model_turn_follows_the_last_turns_observations(tokenizer: Any) -> None:
    domain = KeptCalculator()
    turns = [*calls_to_the_end(domain.max_turns), Message("assistant", "never asked")]
    rollout = play(turns, tokenizer, domain)
    assert len(rollout.turns) == domain.max_turns
    assert all(m.content != "never asked" for m in rollout.messages)


def test_the_last_turns_observation_tokens_are_environment_tokens_without_a_next_header(
    tokenizer: Any,
) -> None:
    domain = KeptCalculator()
    rollout = play(calls_to_the_end(domain.max_turns), tokenizer, domain)
    assert rollout.completion_ids == [
        i for t in rollout.turns for i in t.token_ids + t.env_token_ids
    ]
    assert rollout.loss_mask == [
        m for t in rollout.turns for m in [1] * len(t.token_ids) + [0] * len(t.env_token_ids)
    ]
    assert len(rollout.logprobs) == len(rollout.completion_ids)
    last = rollout.turns[-1]
    assert tokenizer.decode(last.env_token_ids, skip_special_tokens=False) == "<|tool|>12<|end|>"
    assert rollout.logprobs[-len(last.env_token_ids) :] == [0.0] * len(last.env_token_ids)
    conversation = [{"role": m.role, "content": m.content} for m in rollout.messages]
    rendered = tokenizer.apply_chat_template(conversation, tokenize=False)
    decoded = tokenizer.decode(
        rollout.prompt_ids + rollout.completion_ids, skip_special_tokens=False
    )
    assert decoded == rendered


def test_a_malformed_call_on_the_last_turn_is_answered_with_a_recorded_error(
    tokenizer: Any,
) -> None:
    domain = KeptCalculator()
    broken = Message("assistant", "<tool_call>{not json</tool_call>")
    rollout = play([*calls_to_the_end(domain.max_turns - 1), broken], tokenizer, domain)
    [observation] = rollout.turns[-1].observations
    assert observation.role == "tool" and observation.content.startswith("error:")
    assert rollout.tool_stats["tools/malformed"] == 1.0
    assert rollout.error is None


def test_the_last_turn_does_not_fill_the_context(tokenizer: Any) -> None:
    """No turn follows the last one, so it needs no room for one: the episode is judged
    as it ended, with its observations, even past the limit a next turn would need."""
    domain = KeptCalculator()
    full = play(calls_to_the_end(domain.max_turns), tokenizer, domain)
    before_last = (
        len(full.prompt_ids) + len(full.completion_ids) - len(full.turns[-1].env_token_ids)
    )
    limit = before_last - len(full.turns[-1].token_ids) + PARAMS.max_tokens  # room for the last
    rollout = play(
        calls_to_the_end(domain.max_turns), tokenizer, KeptCalculator(), max_context=limit
    )
    assert rollout.error is None and rollout.judged
    assert len(rollout.turns) == domain.max_turns
    assert rollout.turns[-1].observations == full.turns[-1].observations
    assert rollout.completion_ids == full.completion_ids


def test_a_tool_episode_that_answers_before_max_turns_is_unchanged(tokenizer: Any) -> None:
    domain = KeptCalculator()
    rollout = play(domain.reference(domain.generate(0, 3)).turns, tokenizer, domain)
    assert rollout.verdict.passed
    assert [m.role for m in rollout.messages] == ["user", "assistant", "tool", "assistant"]
    assert rollout.turns[-1].observations == [] and rollout.turns[-1].env_token_ids == []


def test_a_tool_that_crashes_on_the_last_turn_shows_its_error_observation(
    tokenizer: Any,
) -> None:
    domain = ExplodingCalculator()
    rollout = play(calls_to_the_end(domain.max_turns), tokenizer, domain)
    [observation] = rollout.turns[-1].observations
    assert observation.content == "error: tool failed: RuntimeError: the sandbox went away"
    assert rollout.error is None  # a tool's crash is an observation, not a session failure


class AskingUserCalculator(KeptCalculator):
    """The calculator with a scripted user who asks again after every answer."""

    id = "test/asking-user-v1"

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def open(self, task: Task, sandbox: object | None = None) -> CalculatorSession:
        domain = self

        class Asking(CalculatorSession):
            def user_turn(self, assistant_message: Message) -> Message | None:
                domain.asked += 1
                return Message("user", "and again?")

        self.sessions.append(Asking(task))
        return self.sessions[-1]


def test_a_scripted_user_is_asked_on_the_last_turn_but_not_recorded(tokenizer: Any) -> None:
    domain = AskingUserCalculator()
    turns = [Message("assistant", str(k)) for k in range(domain.max_turns)]
    rollout = play(turns, tokenizer, domain)
    assert domain.asked == domain.max_turns  # the session saw the last answer ...
    assert [m.role for m in rollout.messages][-2:] == ["user", "assistant"]  # ... no reply kept
    assert rollout.turns[-1].observations == [] and rollout.turns[-1].env_token_ids == []


def test_the_scheduler_records_the_last_turns_observations_too(tokenizer: Any) -> None:
    domain = KeptCalculator()
    task = domain.generate(0, 3)
    engine = ReplayEngine(tokenizer)
    engine.add(task.id, Reference(calls_to_the_end(domain.max_turns)))
    [[lockstep]] = run_episodes([task], engine, tokenizer, PARAMS, lambda _: domain)
    with Scheduler(engine, tokenizer, lambda _: domain, PARAMS, SchedulerConfig()) as sched:
        [[concurrent]] = sched.run([task])
    assert concurrent.turns[-1].observations == lockstep.turns[-1].observations != []
    assert concurrent.completion_ids == lockstep.completion_ids
    assert concurrent.loss_mask == lockstep.loss_mask
