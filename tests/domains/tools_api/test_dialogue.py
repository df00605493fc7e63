"""The conversation domains: a scripted customer who must be asked, and follow-up questions."""

from __future__ import annotations

from posttrain.domains.tools_api.dialogue import FollowUpDomain, SlotFillingDomain, quote_price
from posttrain.types import Message
from tests.domains.tools_api.episodes import play, with_final

SLOTS, FOLLOW = SlotFillingDomain(), FollowUpDomain()


def test_the_customer_leaves_when_the_agent_makes_a_statement() -> None:
    task = SLOTS.generate(0, 9)
    session = SLOTS.open(task)
    assert session.user_turn(Message("assistant", "123.45")) is None


def test_the_customer_reveals_what_the_question_names() -> None:
    task = SLOTS.generate(0, 9)
    assert task.meta["missing"] == ["destination", "weight_kg", "service"]
    session = SLOTS.open(task)
    reply = session.user_turn(Message("assistant", "How heavy is it, and which service?"))
    assert reply is not None
    assert f"{task.meta['slots']['weight_kg']} kg" in reply.content
    assert "service" in reply.content and task.meta["slots"]["destination"] not in reply.content


def test_a_vague_question_gets_the_next_missing_detail_then_a_nudge() -> None:
    task = SLOTS.generate(1, 1)
    session = SLOTS.open(task)
    first = session.user_turn(Message("assistant", "Anything else?"))
    second = session.user_turn(Message("assistant", "Anything else?"))
    assert first is not None and second is not None
    assert "please get me the quote" in second.content


def test_one_question_asking_for_everything_is_enough() -> None:
    task = SLOTS.generate(2, 9)
    question = "What is the destination, the weight in kg and the service?"
    assert play(SLOTS, task, [question, *task.meta["plan"][-2:]]).passed


def test_quoting_without_asking_uses_a_guess_and_fails() -> None:
    task = SLOTS.generate(2, 9)
    plan = task.meta["plan"]
    assert play(SLOTS, task, plan[-2:]).reward == 0.0


def test_quote_price_grows_with_weight_and_express_costs_more() -> None:
    world = {"zones": {"Ka": 1, "Vo": 3}, "tariff": {"standard": [5, 1.0], "express": [20, 5.0]}}
    assert quote_price(world, "Ka", "Vo", 2.0, "standard") == 11.0
    assert quote_price(world, "Ka", "Vo", 2.0, "express") == 50.0


def test_follow_up_scores_the_share_of_answers_right() -> None:
    task = FOLLOW.generate(3, 10)
    plan = task.meta["plan"]
    assert len(task.meta["questions"]) == 5
    wrong_second = [*plan[:3], "Nobody", *plan[4:]]
    verdict = play(FOLLOW, task, wrong_second)
    assert verdict.reward == 0.8 and not verdict.passed
    assert verdict.components["answer_2"] == 0.0


def test_follow_up_answers_without_lookups_score_zero() -> None:
    task = FOLLOW.generate(3, 4)
    assert play(FOLLOW, task, list(task.meta["answers"])).reward == 0.0


def test_follow_up_user_asks_each_question_once_then_stops() -> None:
    task = FOLLOW.generate(4, 7)
    session = FOLLOW.open(task)
    asked = [session.user_turn(Message("assistant", "x")) for _ in task.meta["questions"]]
    assert [m.content for m in asked if m] == task.meta["questions"][1:]
    assert asked[-1] is None


def test_follow_up_last_answer_alone_is_not_enough() -> None:
    task = FOLLOW.generate(5, 5)
    verdict = play(FOLLOW, task, with_final(task, task.answer)[-3:])
    assert not verdict.passed
