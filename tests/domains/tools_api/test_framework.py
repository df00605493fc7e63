"""The shared body of the family: argument checks, the session, verify's guarantees."""

from __future__ import annotations

import pytest

from posttrain.domains.base import Session
from posttrain.domains.tools_api import DOMAINS
from posttrain.domains.tools_api.conversion import UnitConvertDomain
from posttrain.domains.tools_api.dialogue import SlotFillingDomain
from posttrain.domains.tools_api.framework import (
    ApiDomain,
    ApiSession,
    FinalAnswerApiDomain,
    ToolSpec,
    check_arguments,
    close_enough,
    strict_date,
    strict_decimal,
)
from posttrain.tools import parse_tool_calls
from posttrain.types import Message, ToolCall
from tests.domains.tools_api.episodes import play, rollout_of

SPEC = ToolSpec("f", "A test tool.", (("x", "number", "a number"), ("s", "string", "text")))


@pytest.fixture
def session() -> ApiSession:
    domain = UnitConvertDomain()
    return domain.open(domain.generate(0, 3))


def links_of(session: ApiSession) -> str:
    return str(session.task.meta["world"]["path"][0])


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        ({"x": 1, "s": "a"}, None),
        ({"x": 1.0, "s": "a"}, None),
        ({"s": "a"}, "missing argument 'x'"),
        ({"x": "1", "s": "a"}, "must be a number"),
        ({"x": True, "s": "a"}, "must be a number"),
        ({"x": float("nan"), "s": "a"}, "finite"),
        ({"x": 1, "s": "a", "y": 2}, "unexpected argument 'y'"),
        ({"x": 1, "s": "a" * 201}, "longer than 200"),
        ([1, 2], "must be a JSON object"),
    ],
)
def test_check_arguments_names_the_problem(arguments: object, problem: str | None) -> None:
    found = check_arguments(SPEC, arguments)
    assert found is None if problem is None else problem in (found or "")


def test_session_satisfies_the_session_protocol(session: ApiSession) -> None:
    assert isinstance(session, Session)
    assert [t["function"]["name"] for t in session.tools] == ["convert", "links"]


def test_session_reports_an_unknown_tool_as_an_error_observation(session: ApiSession) -> None:
    observation = session.call(ToolCall("shell", {"cmd": "ls"}))
    assert observation.error
    assert "unknown tool 'shell'; tools: convert, links" in observation.content


def test_session_reports_bad_arguments_without_raising(session: ApiSession) -> None:
    for arguments in ({}, {"unit": 5}, {"unit": "x" * 5000}, {"unit": "nope"}):
        observation = session.call(ToolCall("links", arguments))
        assert observation.error
        assert observation.content.startswith("error: ")


def test_session_records_every_call_and_snapshot_restores_them(session: ApiSession) -> None:
    session.call(ToolCall("links", {"unit": links_of(session)}))
    saved = session.snapshot()
    session.call(ToolCall("links", {"unit": "nope"}))
    session.restore(saved)
    assert [(c.name, c.ok) for c in session.calls] == [("links", True)]


def test_session_refuses_calls_after_close(session: ApiSession) -> None:
    session.close()
    with pytest.raises(RuntimeError, match="closed"):
        session.call(ToolCall("links", {"unit": "x"}))


def test_session_without_a_scripted_user_ends_the_episode(session: ApiSession) -> None:
    assert session.user_turn(Message("assistant", "12.00")) is None


@pytest.mark.parametrize("domain", DOMAINS, ids=lambda d: d.id)
def test_reference_markup_parses_to_its_tool_calls(domain: object) -> None:
    reference = domain.reference(domain.generate(1, 6))  # type: ignore[attr-defined]
    for turn in reference.turns:
        assert parse_tool_calls(turn.content).calls == turn.tool_calls


@pytest.mark.parametrize("domain", DOMAINS, ids=lambda d: d.id)
def test_junk_tool_calls_and_text_score_zero_without_verifier_errors(domain: object) -> None:
    task = domain.generate(0, 5)  # type: ignore[attr-defined]
    junk = (
        '<tool_call>{"name":"lookup","arguments":{"name":'
        + "[" * 500
        + "]" * 500
        + "}}</tool_call>"
    )
    for script in (["<tool_call>{oops"], [junk, "\x00\ufffd"], ["? ?", "?", "?"]):
        verdict = domain.verify(task, rollout_of(domain, task, script), None)  # type: ignore[attr-defined]
        assert (verdict.reward, verdict.passed, verdict.error) == (0.0, False, None)
        assert verdict.reason


def test_verify_judges_the_replayed_calls_not_the_live_session() -> None:
    domain = UnitConvertDomain()
    task = domain.generate(2, 4)
    assert play(domain, task, domain.reference(task)).passed


def test_strict_formats_accept_only_the_bare_value() -> None:
    assert strict_decimal(" 1,234.50\n") == 1234.5
    assert strict_decimal("about 12") is None and strict_decimal("12 kg") is None
    assert strict_date("2047-01-31") == "2047-01-31" and strict_date("31/01/2047") is None


def test_close_enough_takes_the_larger_of_the_tolerances() -> None:
    assert close_enough(100.01, 100.0, abs_tol=0.01)
    assert close_enough(1_000_050.0, 1_000_000.0, abs_tol=0.01)
    assert not close_enough(100.2, 100.0, abs_tol=0.01)
    assert not close_enough(None, 100.0, abs_tol=0.01)


def test_a_subclass_missing_its_judge_hook_cannot_be_instantiated() -> None:
    class NoJudge(FinalAnswerApiDomain):
        make = UnitConvertDomain.make
        serve = UnitConvertDomain.serve
        wrong = UnitConvertDomain.wrong

    class NoJudgeRollout(ApiDomain):
        make = SlotFillingDomain.make
        serve = SlotFillingDomain.serve
        wrong = SlotFillingDomain.wrong

    with pytest.raises(TypeError, match="judge"):
        NoJudge()  # type: ignore[abstract]
    with pytest.raises(TypeError, match="judge_rollout"):
        NoJudgeRollout()  # type: ignore[abstract]
