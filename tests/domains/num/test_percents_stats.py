"""`num/percents_stats.py`: tolerant percent and mean answers; the exact median."""

from __future__ import annotations

from fractions import Fraction

from posttrain.domains.num.numerals import rounded_text
from posttrain.domains.num.percents_stats import Mean, Median, PercentChange, PercentOf


def test_percent_of_accepts_two_place_rounding_and_refuses_a_percent_sign() -> None:
    domain = PercentOf()
    task = domain.generate(0, 9)
    exact = Fraction(task.answer)
    assert domain.judge(task, rounded_text(exact, 2)).passed
    assert not domain.judge(task, rounded_text(exact + Fraction(1, 100), 2)).passed
    assert not domain.judge(task, task.answer + "%").passed


def test_percent_change_sign_matters() -> None:
    domain = PercentChange()
    task = domain.generate(2, 5)
    assert domain.judge(task, task.answer).passed
    flipped = task.answer[1:] if task.answer.startswith("-") else "-" + task.answer
    assert not domain.judge(task, flipped).passed


def test_percent_change_tolerance_is_five_hundredths() -> None:
    domain = PercentChange()
    task = domain.generate(1, 3)
    exact = Fraction(task.meta["new"] - task.meta["old"], task.meta["old"]) * 100
    assert domain.judge(task, rounded_text(exact + Fraction(4, 100), 3)).passed
    assert not domain.judge(task, rounded_text(exact + Fraction(6, 100), 3)).passed


def test_mean_accepts_more_decimals_and_refuses_the_sum() -> None:
    domain = Mean()
    task = domain.generate(0, 6)
    values = task.meta["values"]
    exact = Fraction(sum(values), len(values))
    assert domain.judge(task, rounded_text(exact, 5)).passed
    assert not domain.judge(task, str(sum(values))).passed


def test_median_of_an_even_list_is_the_middle_pair_mean() -> None:
    domain = Median()
    task = next(t for t in (domain.generate(s, 1) for s in range(20)) if len(t.meta["values"]) % 2 == 0)  # fmt: skip
    ordered = sorted(task.meta["values"])
    middle = len(ordered) // 2
    assert Fraction(task.answer) == Fraction(ordered[middle - 1] + ordered[middle], 2)


def test_median_accepts_an_equal_decimal_but_not_a_near_one() -> None:
    domain = Median()
    task = domain.generate(0, 4)
    value = Fraction(task.answer)
    assert domain.judge(task, rounded_text(value, 2)).passed
    assert not domain.judge(task, rounded_text(value + Fraction(1, 100), 2)).passed
