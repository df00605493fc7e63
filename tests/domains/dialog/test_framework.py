"""The shared dialog machinery: the protocol line, the session, the budget."""

from __future__ import annotations

from posttrain.domains.dialog.framework import protocol_value
from posttrain.domains.dialog.guessing import GuessNumberDomain
from posttrain.types import Message, ToolCall


def test_protocol_value_accepts_one_line_and_refuses_prose_or_two_lines() -> None:
    assert protocol_value(" GUESS: 42\n", "GUESS") == "42"
    assert protocol_value("GUESS: 42\nGUESS: 43", "GUESS") is None
    assert protocol_value("My guess is GUESS: 42", "GUESS") is None
    assert protocol_value("guess: 42", "GUESS") is None


def test_session_ends_once_the_budget_is_spent_on_malformed_turns() -> None:
    domain = GuessNumberDomain()
    task = domain.generate(0, 1)
    session = domain.open(task)
    replies = [session.user_turn(Message("assistant", "hmm")) for _ in range(task.meta["budget"])]
    assert all(r is not None and "GUESS:" in r.content for r in replies[:-1])
    assert replies[-1] is None


def test_session_snapshot_and_restore_rewind_the_user() -> None:
    domain = GuessNumberDomain()
    task = domain.generate(0, 3)
    session = domain.open(task)
    saved = session.snapshot()
    session.user_turn(Message("assistant", "nonsense"))
    session.restore(saved)
    assert session.state["turns"] == 0 and session.state["malformed"] == 0


def test_a_tool_call_gets_an_error_observation() -> None:
    session = GuessNumberDomain().open(GuessNumberDomain().generate(0, 1))
    assert session.call(ToolCall("calculator", {})).error
