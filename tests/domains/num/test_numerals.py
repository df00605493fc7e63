"""`num/numerals.py`: strict readers refuse near-misses; writers round and format exactly."""

from __future__ import annotations

import doctest
from fractions import Fraction

from posttrain.domains.num import numerals
from posttrain.domains.num.numerals import (
    decimal_text,
    judge_integer,
    judge_value,
    rounded_text,
    strict_decimal,
    strict_rational,
    wrong_answers,
)


def test_the_doctests_hold() -> None:
    assert doctest.testmod(numerals).failed == 0


def test_strict_decimal_refuses_separators_exponents_and_prose() -> None:
    for text in ["1,000", "1e3", "12 %", "about 3", "3.5.1", "", "-", "1/2"]:
        assert strict_decimal(text) is None, text


def test_strict_decimal_reads_exactly_without_float_error() -> None:
    assert strict_decimal("0.1") == Fraction(1, 10)
    assert strict_decimal("+7") == 7


def test_overlong_text_reads_as_nothing() -> None:
    assert strict_rational("1" * 1000) is None


def test_rounding_is_half_away_from_zero_on_exact_ties() -> None:
    assert rounded_text(Fraction("2.675"), 2) == "2.68"  # a float would give 2.67
    assert rounded_text(Fraction("-2.5"), 0) == "-3"
    assert rounded_text(Fraction("-0.004"), 2) == "0.00"


def test_decimal_text_drops_trailing_zeros() -> None:
    assert decimal_text(Fraction("12.500")) == "12.5"


def test_wrong_answers_drops_repeats_the_answer_and_accepted_forms() -> None:
    got = wrong_answers("4", ["5", "5", "4", "04", "3"], lambda t: int(t) == 4)
    assert got == ["5", "3"]


def test_judge_integer_separates_format_from_value() -> None:
    assert judge_integer(7, " 7\n", "x").passed
    bad_format = judge_integer(7, "7.0", "x")
    assert not bad_format.passed and bad_format.components["format"] == 0.0


def test_judge_value_accepts_the_tolerance_boundary_only() -> None:
    tol = Fraction(1, 200)
    assert judge_value("1.23", Fraction("1.235"), tol, "x", strict_decimal).passed
    assert not judge_value("1.229", Fraction("1.235"), tol, "x", strict_decimal).passed
