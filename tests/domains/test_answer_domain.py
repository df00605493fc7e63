"""`AnswerDomain`: a minimal subclass passes the self-check; a raising judge is an error;
the hooks are abstract; a problem's history comes before the prompt."""

from __future__ import annotations

import doctest
import random

import pytest

from posttrain.domains import answer_domain
from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.check import check_domains
from posttrain.types import Message, Rollout, Task, Turn, Verdict
from posttrain.verify.answers import strict_integer


class Double(AnswerDomain):
    id = "testfam/double-v1"
    axes = Axes("text", "none", "single", "exact")
    instructions = "Reply with the integer only."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = rng.randint(10 ** (difficulty - 1), 10**difficulty)
        return Problem(f"Double {n}.", str(2 * n), {"n": n}, measure=difficulty)

    def judge(self, task: Task, text: str) -> Verdict:
        got = strict_integer(text)
        return verdict(got == int(task.answer), "twice the number", why=f"got {text[:20]!r}")

    def wrong(self, task: Task) -> list[str]:
        n = int(task.answer)
        return [str(n + 1), str(n - 2), str(n // 2)]


class Raises(Double):
    id = "testfam/raises-v1"

    def judge(self, task: Task, text: str) -> Verdict:
        raise RuntimeError("verifier bug")


def _rollout(task: Task, text: str) -> Rollout:
    turn = Turn(text=text, token_ids=[], logprobs=[], finish_reason="stop")
    return Rollout("r", task.id, task.domain, task.difficulty, [], [], [], [],
                   [Message("assistant", text)], [turn], Verdict(0.0, False, "unscored"))  # fmt: skip


def test_a_minimal_subclass_passes_every_property() -> None:
    results = check_domains([Double()], difficulties=(1, 3))
    assert [r for r in results if not r.ok] == []


def test_the_prompt_carries_the_instructions_and_meta_the_measure() -> None:
    task = Double().generate(4, 3)
    assert task.prompt[0].content.endswith("Reply with the integer only.")
    assert task.meta["measure"] == 3.0 and Double().difficulty_measure(task) == 3.0


def test_a_raising_judge_is_a_verifier_error_not_an_exception() -> None:
    domain = Raises()
    task = domain.generate(0, 1)
    v = domain.verify(task, _rollout(task, task.answer), None)
    assert (v.reward, v.passed) == (0.0, False)
    assert v.error == "RuntimeError: verifier bug"


def test_corrupt_drops_a_wrong_answer_equal_to_the_reference() -> None:
    domain = Double()
    task = domain.generate(0, 1)
    domain_wrong = domain.wrong
    domain.wrong = lambda t: [t.answer, *domain_wrong(t)]  # type: ignore[method-assign]
    finals = [r.final for r in domain.corrupt(task, domain.reference(task))]
    assert task.answer not in finals and len(finals) == 3


class NoWrong(AnswerDomain):
    id = "testfam/no-wrong-v1"
    axes = Double.axes
    instructions = Double.instructions
    make = Double.make
    judge = Double.judge


class Followup(Double):
    id = "testfam/followup-v1"

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        earlier = (Message("user", "Double 3."), Message("assistant", "6"))
        return Problem("And 4?", "8", measure=difficulty, history=earlier)


def test_a_subclass_missing_a_hook_cannot_be_instantiated() -> None:
    with pytest.raises(TypeError, match="wrong"):
        NoWrong()  # type: ignore[abstract]


def test_a_problem_history_comes_before_the_prompt() -> None:
    task = Followup().generate(0, 1)
    assert [(m.role, m.content) for m in task.prompt[:2]] == [("user", "Double 3."), ("assistant", "6")]  # fmt: skip
    assert task.prompt[2].role == "user"
    assert task.prompt[2].content == "And 4?\n\n" + Double.instructions


def test_doctests_pass() -> None:
    assert doctest.testmod(answer_domain).failed == 0
