"""`num/*` percentages and summary statistics: a percent of a number, the percent change
between two values, the mean and the median of a list.

    from posttrain.domains.num.percents_stats import DOMAINS
    task = DOMAINS[1].generate(seed=0, difficulty=5)  # "... changes from 840 to 615 ..."

The three tolerant domains are "numeric": the answer is a plain decimal and passes when
it lies within the tolerance the prompt states (0.005 for a percent of a number and for
the mean, so rounding to 2 places passes; 0.05 for a percent change, so 1 place
passes). The median is exact: its value (an integer or a half) must be equal.

`measure` is the digits of the operands, or the list's length plus its values' digits.

Not guaranteed: the tolerance is absolute, not relative, so large answers need as many
correct decimals as small ones; a "%" sign, thousands commas or words make the answer
unreadable (reward 0), as the prompts say.
"""

from __future__ import annotations

import random
from fractions import Fraction

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.domains.num.numerals import (
    decimal_text,
    judge_value,
    number_with_digits,
    rounded_text,
    strict_decimal,
    wrong_answers,
)
from posttrain.types import Task, Verdict

_NUMERIC = Axes("text", "none", "single", "numeric")
_HUNDREDTH = Fraction(1, 200)


def _within_hundredth(what: str) -> str:
    return (
        f"Reply with {what} only, as a plain decimal number (a leading minus sign if negative, "
        "no % sign, no commas); you may round it to 2 decimal places: any answer within 0.005 "
        "of the exact value is accepted."
    )


class PercentOf(AnswerDomain):
    """`p% of N`: whole percents up to d=6, then one decimal; N has 2 (d=1) to 6 digits."""

    id = "num/percent-of-v1"
    axes = _NUMERIC
    instructions = _within_hundredth("the number")

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        digits = 2 + (difficulty - 1) * 4 // 9  # 2..6
        n = number_with_digits(rng, digits)
        if difficulty <= 3:
            percent = Fraction(rng.choice([5, 10, 15, 20, 25, 30, 40, 50, 60, 75, 80, 90]))
        elif difficulty <= 6:
            percent = Fraction(rng.randint(1, 200))
        else:
            percent = Fraction(rng.randint(1, 2000), 10)
        return Problem(
            f"What is {decimal_text(percent)}% of {n}?",
            decimal_text(percent * n / 100),
            {"percent": decimal_text(percent), "n": n},
            measure=digits + (difficulty > 3) + (difficulty > 6),
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_value(text, Fraction(task.answer), _HUNDREDTH, "the percentage", strict_decimal)  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        percent, n = Fraction(task.meta["percent"]), task.meta["n"]
        exact = Fraction(task.answer)
        candidates = [
            decimal_text(percent * n),  # forgot to divide by 100
            rounded_text(n * 100 / percent, 2),  # divided the wrong way round
            decimal_text(exact * 10),  # the decimal point one place off
            decimal_text(exact + 1),
        ]
        return wrong_answers(task.answer, candidates, lambda t: self.judge(task, t).passed)


class PercentChange(AnswerDomain):
    """The percent change from an old to a new value; the old one has 2 (d=1) to 7 digits."""

    id = "num/percent-change-v1"
    axes = _NUMERIC
    instructions = (
        "Reply with the percent change only, as a plain decimal number with a leading minus "
        "sign for a decrease (no % sign, no commas); you may round it to 1 decimal place: any "
        "answer within 0.05 of the exact value is accepted."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        digits = 2 + (difficulty - 1) * 5 // 9  # 2..7
        old = number_with_digits(rng, digits)
        new = old
        while new == old:
            new = max(1, old + rng.randint(-old * 9 // 10, old * 2))
        return Problem(
            f"A value changes from {old} to {new}. By what percent does it change, "
            "relative to the old value?",
            rounded_text(Fraction(new - old, old) * 100, 1),
            {"old": old, "new": new},
            measure=digits,
        )

    def judge(self, task: Task, text: str) -> Verdict:
        exact = Fraction(task.meta["new"] - task.meta["old"], task.meta["old"]) * 100
        return judge_value(text, exact, Fraction(1, 20), "the percent change", strict_decimal)

    def wrong(self, task: Task) -> list[str]:
        old, new = task.meta["old"], task.meta["new"]
        exact = Fraction(new - old, old) * 100
        candidates = [
            rounded_text(-exact, 1),  # the sign of the change reversed
            rounded_text(Fraction(new - old, new) * 100, 1),  # relative to the new value
            str(new - old),  # the absolute change
            rounded_text(exact + 1, 1),
        ]
        return wrong_answers(task.answer, candidates, lambda t: self.judge(task, t).passed)


def _integer_list(rng: random.Random, difficulty: int) -> tuple[list[int], int]:
    """4 (d=1) to 13 (d=10) integers of 1 to 4 digits, some negative from d=6; and the
    measure (length plus digits)."""
    count = 3 + difficulty
    digits = 1 + (difficulty - 1) // 3
    values = [number_with_digits(rng, digits) for _ in range(count)]
    if difficulty >= 6:
        values = [-v if rng.random() < 0.3 else v for v in values]
    return values, count + digits


def _listed(values: list[int]) -> str:
    return ", ".join(str(v) for v in values)


def _median(values: list[int]) -> Fraction:
    ordered = sorted(values)
    middle = len(ordered) // 2
    if len(ordered) % 2:
        return Fraction(ordered[middle])
    return Fraction(ordered[middle - 1] + ordered[middle], 2)


class Mean(AnswerDomain):
    """The arithmetic mean of a list of integers."""

    id = "num/mean-v1"
    axes = _NUMERIC
    instructions = _within_hundredth("the mean")

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        values, measure = _integer_list(rng, difficulty)
        mean = Fraction(sum(values), len(values))
        return Problem(
            f"What is the mean (average) of these numbers: {_listed(values)}?",
            decimal_text(Fraction(rounded_text(mean, 2))),
            {"values": values},
            measure=measure,
        )

    def judge(self, task: Task, text: str) -> Verdict:
        values = task.meta["values"]
        exact = Fraction(sum(values), len(values))
        return judge_value(text, exact, _HUNDREDTH, "the mean", strict_decimal)

    def wrong(self, task: Task) -> list[str]:
        values = task.meta["values"]
        exact = Fraction(sum(values), len(values))
        candidates = [
            str(sum(values)),  # never divided
            rounded_text(Fraction(sum(values), len(values) - 1), 2),  # one item miscounted
            rounded_text(_median(values), 2),
            rounded_text(exact + 1, 2),
        ]
        return wrong_answers(task.answer, candidates, lambda t: self.judge(task, t).passed)


class Median(AnswerDomain):
    """The median of an unsorted list of integers, odd or even in length."""

    id = "num/median-v1"
    axes = Axes("text", "none", "single", "exact")
    instructions = (
        "For an even count the median is the mean of the two middle values. Reply with the "
        "median only, as an integer or a decimal such as 7.5, and nothing else."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        values, measure = _integer_list(rng, difficulty)
        return Problem(
            f"What is the median of these numbers: {_listed(values)}?",
            decimal_text(_median(values)),
            {"values": values},
            measure=measure,
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_value(text, _median(task.meta["values"]), Fraction(0), "the median", strict_decimal)  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        values = task.meta["values"]
        ordered = sorted(values)
        median = _median(values)
        candidates = [
            str(values[len(values) // 2]),  # the middle of the list as given, unsorted
            str(ordered[len(values) // 2]),  # the upper middle only
            rounded_text(Fraction(sum(values), len(values)), 1),  # the mean
            decimal_text(median + 1),
            decimal_text(median - 1),
            str(ordered[0]),  # the smallest, not the middle
            decimal_text(median + 10),
        ]
        return wrong_answers(task.answer, candidates, lambda t: self.judge(task, t).passed)


DOMAINS: tuple[AnswerDomain, ...] = (PercentOf(), PercentChange(), Mean(), Median())
