"""`num/integers.py`: subtraction, multiplication, division with remainder, expressions."""

from __future__ import annotations

import random

from posttrain.domains.num.integers import (
    AddOrMultiply,
    DivisionWithRemainder,
    ExpressionValue,
    LongMultiplication,
    SignedSubtraction,
    _left_to_right,
    _render,
    _tree,
    _value,
)


def test_subtraction_answers_are_negative() -> None:
    domain = SignedSubtraction()
    assert all(int(domain.generate(s, d).answer) < 0 for s in range(10) for d in (1, 5, 10))


def test_subtraction_refuses_the_unsigned_difference() -> None:
    domain = SignedSubtraction()
    task = domain.generate(0, 5)
    assert domain.judge(task, task.answer).passed
    assert not domain.judge(task, task.answer.lstrip("-")).passed


def test_multiplication_refuses_thousands_separators() -> None:
    domain = LongMultiplication()
    task = domain.generate(0, 8)
    assert not domain.judge(task, f"{int(task.answer):,}").passed


def test_divmod_gives_half_credit_for_the_quotient_alone() -> None:
    domain = DivisionWithRemainder()
    task = domain.generate(0, 4)
    q, r = task.answer.split()
    half = domain.judge(task, f"{q} {int(r) + 1}")
    assert not half.passed and half.reward == 0.5


def test_divmod_refuses_a_valid_identity_with_too_large_a_remainder() -> None:
    domain = DivisionWithRemainder()
    task = domain.generate(1, 6)
    q, r = (int(x) for x in task.answer.split())
    verdict = domain.judge(task, f"{q - 1} {r + task.meta['m']}")
    assert not verdict.passed and verdict.reward == 0.0


def test_divmod_refuses_other_separators() -> None:
    domain = DivisionWithRemainder()
    task = domain.generate(0, 3)
    q, r = task.answer.split()
    assert domain.judge(task, f" {q} {r} ").passed
    for text in (f"{q} R {r}", f"{q},{r}", f"{q}  {r}", f"{q}\n{r}"):
        assert not domain.judge(task, text).passed, text


def test_rendered_expressions_evaluate_to_their_tree_value() -> None:
    for seed in range(500):
        rng = random.Random(seed)
        tree = _tree(rng, rng.randint(1, 11), 50)
        assert eval(_render(tree)) == _value(tree)  # the rendering keeps needed parentheses


def test_left_to_right_ignores_precedence_but_not_parentheses() -> None:
    assert _left_to_right("2 + 3 * 4") == 20
    assert _left_to_right("2 * (3 + 4) - 1") == 13


def test_expression_answer_matches_python_evaluation() -> None:
    domain = ExpressionValue()
    for seed in range(5):
        task = domain.generate(seed, 9)
        assert int(task.answer) == eval(task.meta["expression"])


def test_add_multiply_is_two_digit_at_difficulty_3_with_both_operations() -> None:
    domain = AddOrMultiply()
    tasks = [domain.generate(s, 3) for s in range(40)]
    assert {t.meta["op"] for t in tasks} == {"+", "*"}
    for t in tasks:
        a, b, op = t.meta["a"], t.meta["b"], t.meta["op"]
        assert 10 <= a <= 99 and 10 <= b <= 99
        assert int(t.answer) == (a + b if op == "+" else a * b)
        assert f"Compute {a} {op} {b}." in t.prompt[-1].content


def test_add_multiply_scores_correctness_leniently_and_passes_only_the_bare_integer() -> None:
    domain = AddOrMultiply()
    task = domain.generate(3, 3)
    bare = domain.judge(task, f" {task.answer}\n")
    assert bare.passed and bare.components == {"format": 1.0, "correct": 1.0}
    prose = domain.judge(task, f"The answer is {task.answer}.")
    assert not prose.passed and prose.components == {"format": 0.0, "correct": 1.0}
    wrong = domain.judge(task, str(int(task.answer) + 1))
    assert not wrong.passed and wrong.components == {"format": 1.0, "correct": 0.0}
    assert all(not domain.judge(task, w).passed for w in domain.wrong(task))
