"""`list_ops/sets.py`: set algebra, pairs summing to a target, missing numbers."""

from __future__ import annotations

from posttrain.domains.list_ops.sets import MissingNumbers, PairSums, SetAlgebra, _evaluate


def test_set_algebra_evaluates_the_nested_expression() -> None:
    meta = {"sets": {"A": [1, 2, 3], "B": [3, 4], "C": [1, 4, 9]}, "op1": "△", "op2": "−"}
    assert _evaluate(meta) == {2}


def test_set_algebra_accepts_any_order_and_refuses_repeats() -> None:
    domain = SetAlgebra()
    task = domain.generate(0, 5)
    items = task.answer.split(",")
    assert domain.judge(task, ", ".join(reversed(items))).passed
    assert domain.judge(task, ",".join([*items, items[0]])).reward == 0.0


def test_pair_sums_accept_pairs_either_way_round() -> None:
    domain = PairSums()
    task = domain.generate(1, 6)
    flipped = "; ".join("+".join(reversed(p.split("+"))) for p in task.answer.split("; "))
    assert domain.judge(task, flipped).passed


def test_pair_sums_refuse_a_pair_repeated_the_other_way_round() -> None:
    domain = PairSums()
    task = domain.generate(1, 6)
    first = task.answer.split("; ")[0]
    flipped = "+".join(reversed(first.split("+")))
    assert domain.judge(task, f"{task.answer}; {flipped}").reward == 0.0


def test_pair_sums_refuse_commas_between_pairs() -> None:
    domain = PairSums()
    task = domain.generate(2, 9)
    assert "; " in task.answer
    assert not domain.judge(task, task.answer.replace("; ", ", ")).passed


def test_missing_numbers_partial_answer_fails_with_partial_reward() -> None:
    domain = MissingNumbers()
    task = domain.generate(0, 10)
    items = task.answer.split(",")
    assert len(items) >= 2
    verdict = domain.judge(task, ",".join(items[:-1]))
    assert not verdict.passed and 0.0 < verdict.reward < 0.5
