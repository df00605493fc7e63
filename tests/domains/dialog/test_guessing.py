"""guess-number and mastermind: the scripted user's feedback and the verdicts."""

from __future__ import annotations

from posttrain.domains.dialog.guessing import GuessNumberDomain, MastermindDomain, pegs
from posttrain.types import Message


def test_guess_number_user_says_higher_or_lower() -> None:
    domain = GuessNumberDomain()
    task = domain.generate(2, 4)
    secret, low = int(task.answer), task.meta["world"]["low"]
    session = domain.open(task)
    reply = session.user_turn(Message("assistant", f"GUESS: {low}"))
    assert reply is None if secret == low else reply is not None and reply.content == "higher"


def test_guess_number_guess_outside_the_allowed_range_is_a_violation() -> None:
    domain = GuessNumberDomain()
    task = domain.generate(0, 5)
    reference = domain.solve(task)
    high = task.meta["world"]["high"]
    state = domain.play(task, [f"GUESS: {high + 5}", *reference])
    assert state["solved"] and state["violations"] == 1
    assert domain.judge(task, state).reward == 0.25


def test_guess_number_bare_number_is_malformed_and_never_wins() -> None:
    domain = GuessNumberDomain()
    task = domain.generate(1, 2)
    verdict = domain.judge(task, domain.play(task, [task.answer] * 20))
    assert not verdict.passed and verdict.components["malformed"] == task.meta["budget"]


def test_pegs_count_repeated_digits_once() -> None:
    assert pegs("1122", "2211") == (0, 4)
    assert pegs("1234", "1111") == (1, 0)


def test_mastermind_reference_solves_within_budget_at_every_difficulty() -> None:
    domain = MastermindDomain()
    for difficulty in (1, 6, 9):
        task = domain.generate(3, difficulty)
        verdict = domain.judge(task, domain.play(task, domain.solve(task)))
        assert verdict.passed, task.id


def test_mastermind_wrong_length_guess_is_malformed() -> None:
    domain = MastermindDomain()
    task = domain.generate(0, 5)
    state = domain.play(task, ["GUESS: 12"])
    assert state["malformed"] == 1 and not state["solved"]


def test_guess_number_unicode_digits_are_malformed_not_a_crash() -> None:
    domain = GuessNumberDomain()
    task = domain.generate(0, 3)
    session = domain.open(task)
    reply = session.user_turn(Message("assistant", "GUESS: ²"))
    assert reply is not None and "GUESS" in reply.content
    state = domain.play(task, ["GUESS: ①", *domain.solve(task)])
    assert state["solved"] and state["malformed"] == 1
