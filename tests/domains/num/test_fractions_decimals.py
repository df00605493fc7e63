"""`num/fractions_decimals.py`: reduced fractions, equivalent forms, rounding, the largest."""

from __future__ import annotations

from fractions import Fraction

from posttrain.domains.num.fractions_decimals import (
    FractionArithmetic,
    LargestNumber,
    RoundDecimal,
    SimplifyFraction,
)


def test_simplify_gives_half_credit_to_an_equal_unreduced_fraction() -> None:
    domain = SimplifyFraction()
    task = domain.generate(0, 5)
    p, q = (int(x) for x in task.answer.split("/"))
    verdict = domain.judge(task, f"{2 * p}/{2 * q}")
    assert not verdict.passed and verdict.reward == 0.5
    assert verdict.components["reduced"] == 0.0


def test_simplify_gives_nothing_for_the_questions_own_fraction() -> None:
    domain = SimplifyFraction()
    for seed in range(10):
        task = domain.generate(seed, 5)
        echo = f"{task.meta['numerator']}/{task.meta['denominator']}"
        assert echo in task.prompt[0].content
        verdict = domain.judge(task, echo)
        assert (verdict.passed, verdict.reward) == (False, 0.0), echo
        assert verdict.components["value"] == 1.0 and "not reduced at all" in verdict.reason


def test_simplify_refuses_a_decimal_of_the_right_value() -> None:
    domain = SimplifyFraction()
    for seed in range(40):
        task = domain.generate(seed, 2)
        value = Fraction(task.answer)
        if value.denominator in (2, 4, 5, 8):
            assert not domain.judge(task, str(float(value))).passed
            return
    raise AssertionError("no task with a terminating value")


def test_fraction_arithmetic_accepts_unreduced_and_decimal_forms() -> None:
    domain = FractionArithmetic()
    task = domain.generate(3, 4)
    value = Fraction(task.answer)
    assert domain.judge(task, f"{value.numerator * 3}/{value.denominator * 3}").passed
    half = FractionArithmetic().judge(task, "1/2")
    assert half.passed == (value == Fraction(1, 2))
    for seed in range(60):
        task = domain.generate(seed, 1)
        value = Fraction(task.answer)
        if value.denominator in (1, 2, 4, 5, 10):
            assert domain.judge(task, str(float(value))).passed
            return
    raise AssertionError("no task with a terminating value")


def test_fraction_arithmetic_refuses_spaces_mixed_numbers_and_a_trailing_sign() -> None:
    domain = FractionArithmetic()
    task = domain.generate(0, 3)
    p, _, q = task.answer.lstrip("-").partition("/")
    for text in (f"{p} / {q}", f"{p}/-{q}", f"1 {p}/{q}", f"\\frac{{{p}}}{{{q}}}"):
        assert not domain.judge(task, text).passed, text


def test_rounding_keeps_trailing_zeros_and_the_asked_places() -> None:
    domain = RoundDecimal()
    for seed in range(50):
        task = domain.generate(seed, 7)
        if task.answer.endswith("0"):
            assert not domain.judge(task, task.answer.rstrip("0").rstrip(".")).passed
            assert domain.judge(task, task.answer).passed
            return
    raise AssertionError("no rounded answer with a trailing zero")


def test_rounding_ties_go_away_from_zero() -> None:
    domain = RoundDecimal()
    ties = [t for t in (domain.generate(s, 8) for s in range(60)) if len(t.meta["number"].split(".")[1]) == t.meta["places"] + 1]  # fmt: skip
    assert ties, "no tie among the seeds"
    for task in ties:
        value = Fraction(task.meta["number"])
        assert abs(Fraction(task.answer)) > abs(value)


def test_largest_must_be_copied_as_written() -> None:
    domain = LargestNumber()
    task = domain.generate(0, 6)
    best = max(task.meta["items"], key=Fraction)
    assert task.answer == best and domain.judge(task, f" {best}\n").passed
    if "/" in best:
        assert not domain.judge(task, str(float(Fraction(best)))).passed


def test_largest_items_have_distinct_values() -> None:
    domain = LargestNumber()
    for seed in range(20):
        items = domain.generate(seed, 10).meta["items"]
        assert len({Fraction(t) for t in items}) == len(items)
