"""The four starter domains against the domain contract, plus the calculator's session."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from posttrain.domains import STARTER_DOMAINS, Domain, Session, get_domain
from posttrain.domains.base import Axes
from posttrain.domains.calculator import MAX_EXPRESSION_CHARS, CalculatorDomain, CalculatorSession
from posttrain.tools import parse_tool_calls
from posttrain.types import Message, Reference, Rollout, Task, ToolCall, Turn, Verdict

REPO_ROOT = Path(__file__).resolve().parents[2]
CASES = [(0, 1), (1, 2), (2, 5), (3, 7), (7, 10), (123_456_789, 3)]


# ---- helpers ----------------------------------------------------------------------------


def open_session(domain: Domain, task: Task) -> Session | None:
    """The domain's session for `task`, or None for a single-turn domain."""
    opener = getattr(domain, "open", None)
    return opener(task, None) if opener is not None else None


def rollout_from_reference(task: Task, reference: Reference, session: Session | None) -> Rollout:
    """A Rollout whose turns are the reference's assistant messages, with the tool calls
    run through `session` (when given) to fill in observations. Token fields are empty."""
    messages = list(task.prompt)
    turns = []
    for message in reference.turns:
        observations = []
        for call in message.tool_calls:
            if session is not None:
                observation = session.call(call)
                observations.append(Message("tool", observation.content, name=call.name))
        turns.append(
            Turn(
                text=message.content,
                token_ids=[],
                logprobs=[],
                finish_reason="stop",
                tool_calls=list(message.tool_calls),
                observations=observations,
            )
        )
        messages += [message, *observations]
    return Rollout(
        id=f"{task.id}#replay",
        task_id=task.id,
        domain=task.domain,
        difficulty=task.difficulty,
        prompt_ids=[],
        completion_ids=[],
        loss_mask=[],
        logprobs=[],
        messages=messages,
        turns=turns,
        verdict=Verdict(0.0, False, "pending"),
    )


def judge(domain: Domain, task: Task, reference: Reference) -> Verdict:
    session = open_session(domain, task)
    try:
        return domain.verify(task, rollout_from_reference(task, reference, session), session)
    finally:
        if session is not None:
            session.close()


@pytest.fixture(params=STARTER_DOMAINS)
def domain(request: pytest.FixtureRequest) -> Domain:
    return get_domain(request.param)


# ---- the contract, per domain ------------------------------------------------------------


def test_domain_declares_its_contract_attributes(domain: Domain) -> None:
    assert isinstance(domain, Domain)
    assert isinstance(domain.axes, Axes)
    assert domain.max_turns >= 1
    assert domain.id in STARTER_DOMAINS


def test_generate_gives_the_same_json_twice(domain: Domain) -> None:
    for seed, difficulty in CASES:
        first = domain.generate(seed, difficulty).to_json()
        assert domain.generate(seed, difficulty).to_json() == first


def test_task_round_trips_through_json(domain: Domain) -> None:
    task = domain.generate(5, 6)
    assert Task.from_json(task.to_json()) == task


def test_task_carries_its_id_domain_seed_and_difficulty(domain: Domain) -> None:
    task = domain.generate(9, 4)
    assert (task.id, task.domain, task.seed, task.difficulty) == (
        f"{domain.id}@9.d4",
        domain.id,
        9,
        4,
    )


def test_prompt_is_one_short_user_message(domain: Domain) -> None:
    for seed in range(5):
        prompt = domain.generate(seed, 10).prompt
        assert [m.role for m in prompt] == ["user"]
        assert len(prompt[0].content) <= 40


def test_reference_passes(domain: Domain) -> None:
    for seed, difficulty in CASES:
        task = domain.generate(seed, difficulty)
        verdict = judge(domain, task, domain.reference(task))
        assert verdict.passed, verdict.reason
        assert verdict.reward == 1.0
        assert verdict.error is None
        assert set(verdict.components) >= {"format", "correct"}
        assert all(v == 1.0 for v in verdict.components.values())


def test_every_corruption_fails_and_one_scores_at_most_0_2(domain: Domain) -> None:
    corrupt = getattr(domain, "corrupt")  # noqa: B009 - optional in the protocol
    for seed in range(20):
        for difficulty in (1, 2, 5, 10):
            task = domain.generate(seed, difficulty)
            reference = domain.reference(task)
            best = judge(domain, task, reference).reward
            rewards = []
            for wrong in corrupt(task, reference):
                verdict = judge(domain, task, wrong)
                assert not verdict.passed, (task.id, wrong.final)
                assert verdict.reward < best
                rewards.append(verdict.reward)
            assert min(rewards) <= 0.2


def test_answer_of_another_seeds_task_fails(domain: Domain) -> None:
    task = domain.generate(0, 3)
    other = next(
        t for t in (domain.generate(s, 3) for s in range(1, 50)) if t.answer != task.answer
    )
    verdict = judge(domain, task, domain.reference(other))
    assert not verdict.passed
    assert verdict.reward == 0.0


def test_difficulty_measure_never_decreases_from_1_to_10(domain: Domain) -> None:
    measure = getattr(domain, "difficulty_measure")  # noqa: B009 - optional in the protocol
    for seed in range(5):
        values = [measure(domain.generate(seed, d)) for d in range(1, 11)]
        assert values == sorted(values)
        assert values[-1] > values[0]


@pytest.mark.parametrize("difficulty", [0, 11])
def test_generate_rejects_difficulty_outside_1_to_10(domain: Domain, difficulty: int) -> None:
    with pytest.raises(ValueError, match="difficulty must be an integer in 1..10"):
        domain.generate(0, difficulty)


JUNK_KINDS = [
    "empty",
    "whitespace",
    "100KB junk",
    "broken utf-8",
    "prompt echoed",
    "answer in prose",
    "answer then junk",
    "no turns",
    "junk tool calls",
]


def junk_rollout(kind: str, task: Task) -> Rollout:
    texts = {
        "empty": "",
        "whitespace": " \n\t  \n",
        "100KB junk": ("Zq9 #@!\x00\u2603{" * 10_000)[:100_000],
        "broken utf-8": b"\xff\xfe\xc3(\x80 \xed\xa0\x80".decode(errors="replace"),
        "prompt echoed": task.prompt[0].content,
        "answer in prose": f"I worked it out: the answer is {task.answer}, I think.",
        "answer then junk": f"{task.answer} \ufffd\ufffd",
        "junk tool calls": "<tool_call>{oops",
    }
    if kind == "no turns":
        return rollout_from_reference(task, Reference([]), None)
    tool_calls = []
    if kind == "junk tool calls":
        tool_calls = [
            ToolCall("calculator", {"expression": 5}),
            ToolCall("calculator", {"expression": "__import__('os')"}),
            ToolCall("calculator", {"expression": "9" * 5_000}),
            ToolCall("shell", {"cmd": "rm -rf /"}),
            ToolCall("calculator", {}),
        ]
    message = Message("assistant", texts[kind], tool_calls=tool_calls)
    return rollout_from_reference(task, Reference([message]), None)


@pytest.mark.parametrize("kind", JUNK_KINDS)
def test_junk_scores_zero_with_a_short_reason(domain: Domain, kind: str) -> None:
    for seed, difficulty in CASES:
        task = domain.generate(seed, difficulty)
        verdict = domain.verify(task, junk_rollout(kind, task), None)
        assert verdict.reward == 0.0
        assert not verdict.passed
        assert verdict.error is None
        assert 0 < len(verdict.reason) < 200


def test_generation_is_identical_in_a_process_with_another_hash_seed() -> None:
    script = (
        "import json, sys\n"
        "from posttrain.domains import STARTER_DOMAINS, get_domain\n"
        "cases = json.loads(sys.argv[1])\n"
        "print(json.dumps({i: [get_domain(i).generate(s, d).to_json() for s, d in cases]"
        " for i in STARTER_DOMAINS}))\n"
    )
    hash_seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    env = {**os.environ, "PYTHONHASHSEED": hash_seed, "PYTHONPATH": str(REPO_ROOT)}
    result = subprocess.run(
        [sys.executable, "-c", script, json.dumps(CASES)],
        capture_output=True,
        text=True,
        env=env,
        cwd=REPO_ROOT,
        timeout=120,
        check=True,
    )
    here = {i: [get_domain(i).generate(s, d).to_json() for s, d in CASES] for i in STARTER_DOMAINS}
    assert json.loads(result.stdout) == here


# ---- domain specifics --------------------------------------------------------------------


def test_arithmetic_operand_lengths_follow_difficulty() -> None:
    domain = get_domain("arith/addition-v1")
    lengths = [
        tuple(len(str(x)) for x in domain.generate(3, d).meta["operands"]) for d in (1, 4, 9, 10)
    ]
    assert lengths == [(1, 1), (2, 2), (3, 3), (3, 3)]


def test_sort_format_tolerates_spaces_after_commas() -> None:
    domain = get_domain("list/sort-v1")
    task = domain.generate(0, 4)
    spaced = Reference.single(task.answer.replace(",", ", "))
    assert judge(domain, task, spaced).passed


def test_reverse_accepts_the_answer_as_the_last_word_only_as_correct() -> None:
    domain = get_domain("text/reverse-v1")
    task = domain.generate(0, 4)
    verdict = judge(domain, task, Reference.single(f"Reversed: {task.answer}."))
    assert verdict.components == {"format": 0.0, "correct": 1.0}


def test_calculator_reference_markup_parses_to_its_tool_calls() -> None:
    domain = CalculatorDomain()
    first_turn = domain.reference(domain.generate(0, 5)).turns[0]
    assert parse_tool_calls(first_turn.content).calls == first_turn.tool_calls


def test_calculator_operands_outgrow_head_arithmetic_at_difficulty_1() -> None:
    a, b = CalculatorDomain().generate(0, 1).meta["operands"]
    assert a >= 10 and b >= 2


def test_calculator_without_a_tool_call_fails_even_when_right() -> None:
    domain = CalculatorDomain()
    task = domain.generate(0, 2)
    verdict = judge(domain, task, Reference.single(task.answer))
    assert verdict.components == {"format": 1.0, "correct": 1.0, "used_tool": 0.0}
    assert verdict.reward == 0.0


def test_calculator_call_on_a_bare_number_is_not_tool_use() -> None:
    domain = CalculatorDomain()
    task = domain.generate(0, 2)
    call = ToolCall("calculator", {"expression": task.answer}, id="call_0")
    turns = [Message("assistant", "", tool_calls=[call]), Message("assistant", task.answer)]
    assert judge(domain, task, Reference(turns)).components["used_tool"] == 0.0


@pytest.fixture
def session() -> CalculatorSession:
    domain = CalculatorDomain()
    return domain.open(domain.generate(0, 1))


def calc(session: CalculatorSession, expression: object) -> tuple[str, bool]:
    observation = session.call(ToolCall("calculator", {"expression": expression}))
    return observation.content, observation.error


def test_calculator_session_satisfies_the_session_protocol(session: CalculatorSession) -> None:
    assert isinstance(session, Session)
    assert session.tools[0]["function"]["name"] == "calculator"
    assert session.tools[0]["function"]["parameters"]["required"] == ["expression"]


@pytest.mark.parametrize(
    ("expression", "value"),
    [("3*4", "12"), ("(2 + 3) * -4", "-20"), ("17 // 5", "3"), ("17 % 5", "2"), (" 1-2 ", "-1")],
)
def test_calculator_session_evaluates_integer_expressions(
    session: CalculatorSession, expression: str, value: str
) -> None:
    assert calc(session, expression) == (value, False)


@pytest.mark.parametrize(
    "expression",
    ["__import__('os')", "open('/etc/passwd').read()", "().__class__", "x + 1", "'a' * 3", "1.5*2"],
)
def test_calculator_session_rejects_unsafe_or_non_integer_input(
    session: CalculatorSession, expression: str
) -> None:
    content, error = calc(session, expression)
    assert error
    assert content.startswith("error: ")
    assert "not allowed" in content


@pytest.mark.parametrize("expression", ["9**9**9", "10**40", "2**3"])
def test_calculator_session_rejects_powers(session: CalculatorSession, expression: str) -> None:
    assert calc(session, expression) == (
        "error: operator ** is not supported; use + - * // % ( )",
        True,
    )


def test_calculator_session_rejects_results_beyond_10_to_the_30(session: CalculatorSession) -> None:
    content, error = calc(session, "99999999999 * 99999999999 * 99999999999")
    assert error
    assert "10**30" in content


def test_calculator_session_rejects_long_expressions(session: CalculatorSession) -> None:
    content, error = calc(session, "1+" * MAX_EXPRESSION_CHARS + "1")
    assert error
    assert f"{MAX_EXPRESSION_CHARS} characters" in content


@pytest.mark.parametrize("expression", ["1 // 0", "1 % (2 - 2)"])
def test_calculator_session_reports_division_by_zero(
    session: CalculatorSession, expression: str
) -> None:
    assert calc(session, expression) == ("error: division by zero", True)


@pytest.mark.parametrize("expression", ["", "1 +", "(((", "\x00"])
def test_calculator_session_reports_bad_syntax(session: CalculatorSession, expression: str) -> None:
    content, error = calc(session, expression)
    assert error
    assert content.startswith("error: ")


def test_calculator_session_reports_an_unknown_tool(session: CalculatorSession) -> None:
    observation = session.call(ToolCall("shell", {"cmd": "ls"}))
    assert observation.error
    assert observation.content == "error: unknown tool 'shell'; the only tool is 'calculator'"


@pytest.mark.parametrize("arguments", [{}, {"expr": "1+1"}, {"expression": 12}])
def test_calculator_session_reports_a_missing_expression(
    session: CalculatorSession, arguments: dict[str, object]
) -> None:
    observation = session.call(ToolCall("calculator", arguments))
    assert (observation.content, observation.error) == (
        "error: missing string argument 'expression'",
        True,
    )


def test_calculator_session_survives_deeply_nested_arguments(session: CalculatorSession) -> None:
    # The parser refuses such text; a call built some other way must not crash either.
    text = '<tool_call>{"name":"calculator","arguments":{"expression":' + "[" * 900
    assert parse_tool_calls(text + "]" * 900 + "}}</tool_call>").calls == []
    nested: list[Any] = []
    for _ in range(900):
        nested = [nested]
    observation = session.call(ToolCall("calculator", {"expression": nested}))
    assert observation.error
    assert session.snapshot()[0].name == "calculator"


def test_calculator_session_has_no_scripted_user(session: CalculatorSession) -> None:
    assert session.user_turn(Message("assistant", "42")) is None


def test_calculator_session_snapshot_and_restore_the_calls_made(
    session: CalculatorSession,
) -> None:
    calc(session, "1+1")
    saved = session.snapshot()
    calc(session, "2+2")
    session.restore(saved)
    assert [c.arguments["expression"] for c in session.calls] == ["1+1"]


def test_calculator_session_refuses_calls_after_close(session: CalculatorSession) -> None:
    session.close()
    with pytest.raises(RuntimeError, match="closed"):
        calc(session, "1+1")


@pytest.mark.parametrize(
    ("answer", "digits"),
    [("1234", 1.0), ("1244", 0.75), ("234", 0.75), ("12345", 0.0), ("4321", 0.0), ("x", 0.0)],
)
def test_addition_gives_partial_credit_per_digit_place(answer: str, digits: float) -> None:
    domain = get_domain("arith/addition-v1")
    task = domain.generate(0, 10)
    task = dataclasses.replace(task, answer="1234")  # a sum with distinct digits
    verdict = judge(domain, task, Reference.single(answer))
    assert verdict.components["digits"] == digits
    assert verdict.reward == (1.0 if answer == "1234" else 0.0)  # the reward stays exact


def test_a_final_text_of_none_scores_zero_with_a_reason(domain: Domain) -> None:
    task = domain.generate(0, 1)
    session = open_session(domain, task)
    rollout = rollout_from_reference(task, domain.reference(task), session)
    rollout.turns[-1] = dataclasses.replace(rollout.turns[-1], text=None)  # type: ignore[arg-type]
    verdict = domain.verify(task, rollout, session)
    assert not verdict.passed and verdict.reward == 0.0 and verdict.reason
