"""twenty-questions: answers to questions, the final guess and malformed turns."""

from __future__ import annotations

from posttrain.domains.dialog.questions import TwentyQuestionsDomain
from posttrain.types import Message


def test_user_answers_yes_for_the_secrets_own_attribute() -> None:
    domain = TwentyQuestionsDomain()
    task = domain.generate(0, 4)
    world = task.meta["world"]
    attribute = world["attributes"][0]
    value = world["catalog"][world["secret"]][attribute]
    reply = domain.open(task).user_turn(Message("assistant", f"Q: {attribute}={value}?"))
    assert reply is not None and reply.content == "yes"


def test_unknown_value_is_malformed_not_answered() -> None:
    domain = TwentyQuestionsDomain()
    task = domain.generate(0, 4)
    state = domain.play(task, ["Q: colour=purple?"])
    assert state["malformed"] == 1 and state["questions"] == 0


def test_a_wrong_guess_ends_the_game_and_scores_zero() -> None:
    domain = TwentyQuestionsDomain()
    task = domain.generate(2, 5)
    wrong = next(n for n in task.meta["world"]["catalog"] if n != task.answer)
    state = domain.play(task, [f"GUESS: {wrong}", f"GUESS: {task.answer}"])
    assert state["over"] and state["turns"] == 1
    assert domain.judge(task, state).reward == 0.0


def test_guessing_at_once_right_passes() -> None:
    domain = TwentyQuestionsDomain()
    task = domain.generate(3, 2)
    assert domain.judge(task, domain.play(task, [f"GUESS: {task.answer}"])).passed
