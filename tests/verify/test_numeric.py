"""Numeric answers: reading quantities, the FinQA / TAT-QA match rules, and junk."""

from __future__ import annotations

import doctest
import time
from collections.abc import Callable
from typing import Any

import pytest

from posttrain.verify import (
    numeric,
    numeric_match,
    parse_number,
    parse_quantity,
    strict_number,
    written_as_integer,
)
from tests.verify.junk import junk_texts


def test_doctests_pass() -> None:
    assert doctest.testmod(numeric).failed == 0


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("42", 42.0),
        ("-3", -3.0),
        ("+3", 3.0),
        ("\u22123", -3.0),
        ("1,234.5", 1234.5),
        (".5", 0.5),
        ("1e3", 1000.0),
        ("(12)", -12.0),
        ("12%", 0.12),
        ("12 %", 0.12),
        ("$1.2 million", 1.2e6),
        ("-$5", -5.0),
        ("$-5", -5.0),
        ("€ 7", 7.0),
        ("3 thousand", 3000.0),
        ("2 Billion", 2e9),
        ("(4.5%)", -0.045),
    ],
)
def test_strict_number_reads_one_quantity(text: str, value: float) -> None:
    assert strict_number(f" {text}\n") == pytest.approx(value)


@pytest.mark.parametrize(
    "text",
    [
        "",
        "12 apples",
        "about 12",
        "1,2",
        "3,5",
        "0,100",  # 0.1 with a decimal comma, not 100 with a thousands comma
        "01,000",
        "-0,250.5",
        "12.",
        "-$-5",
        "(-5)",
        "(5",
        "5million",
        "1.2M",
        "--5",
    ],
)
def test_strict_number_rejects_anything_else(text: str) -> None:
    assert strict_number(text) is None


def test_parse_quantity_keeps_scale_and_percent() -> None:
    assert parse_quantity("5 MILLION") == (5e6, "million", False)
    assert parse_quantity("5%") == (0.05, None, True)


@pytest.mark.parametrize(
    ("text", "value"),
    [
        ("The answer is 42.", 42.0),
        ("from 3 to 7, so 7", 7.0),
        ("a loss of (12) this year", -12.0),
        ("growth was 12.5% overall", 0.125),
        ("about $1.2 million in total", 1.2e6),
        ("5 and then 1,2", 5.0),
        ("5 and then 0,100", 5.0),
    ],
)
def test_parse_number_reads_the_last_quantity_in_prose(text: str, value: float) -> None:
    assert parse_number(text) == pytest.approx(value)


def test_parse_number_finds_an_answer_after_long_prose() -> None:
    assert parse_number("x" * 50_000 + " so 17") == 17.0
    assert parse_number("17 " + "x" * 50_000) == 17.0


def test_parse_number_reads_a_quantity_straddling_its_search_windows() -> None:
    text = "1,2 " * 600 + "9,876,543" + " and" + " 1,2" * 600
    assert parse_number(text) == 9876543.0


def test_numeric_match_accepts_rounding_to_five_places() -> None:
    assert numeric_match("0.333333", "0.33333")
    assert numeric_match("0.33333", 1 / 3)


def test_numeric_match_accepts_relative_tolerance() -> None:
    assert numeric_match("1000050", "1000000")
    assert not numeric_match("1000200", "1000000")


def test_numeric_match_divides_percent_by_100() -> None:
    assert numeric_match("12.5%", "0.125")
    assert numeric_match("12.5%", "12.5%")
    assert not numeric_match("12.5", "12.5%")


def test_numeric_match_requires_the_same_scale_word() -> None:
    assert numeric_match("$1.2 million", "1.2 million")
    assert not numeric_match("1200000", "1.2 million")
    assert not numeric_match("1.2 million", "1200000")
    assert not numeric_match("1200 thousand", "1.2 million")


def test_numeric_match_rejects_prose_around_the_number() -> None:
    assert not numeric_match("The answer is 7.", 7)


def test_numeric_match_rejects_a_near_miss() -> None:
    assert not numeric_match("7.01", 7)
    assert not numeric_match("-7", 7)


def test_numeric_match_takes_numbers_as_expected() -> None:
    assert numeric_match("1,234", 1234)
    assert not numeric_match("1", True)  # type: ignore[arg-type]


def test_numeric_match_is_false_for_unreadable_expected() -> None:
    assert not numeric_match("5", "five")
    assert not numeric_match("5", float("nan"))


def test_tiny_values_are_equal_after_rounding() -> None:
    assert numeric_match("0.000001", "0.000004")


_FUNCTIONS: list[Callable[[str], Any]] = [
    parse_number,
    strict_number,
    parse_quantity,
    lambda text: numeric_match(text, "5"),
]


def _junk() -> list[Any]:
    return junk_texts(
        "1e999",
        "nan",
        "inf",
        "-inf",
        "(" * 100_000,
        "(-$1,2" * 17_000,
        "1," * 50_000,
        "1e" * 50_000,
        "9" * 100_000,
    )


@pytest.mark.parametrize("function", _FUNCTIONS)
def test_never_raises_on_junk(function: Callable[[str], Any]) -> None:
    for text in _junk():
        function(text)


@pytest.mark.parametrize(
    "function", [strict_number, parse_quantity, lambda t: numeric_match(t, "5")]
)
def test_strict_readers_find_nothing_in_junk(function: Callable[[str], Any]) -> None:
    assert all(function(text) in (None, False) for text in _junk())


def test_parse_number_finds_nothing_in_digitless_or_malformed_junk() -> None:
    junk = [t for t in _junk() if not any(c.isdigit() for c in t[:50])]
    junk += ["9" * 5000, "1," * 50_000, "(-$1,2" * 17_000, "9" * 100_000]
    assert all(parse_number(text) is None for text in junk)


@pytest.mark.parametrize("text", ["9" * 5000, "nan", "inf", "1e999", "9" * 400 + ".5"])
def test_huge_and_non_finite_numbers_are_absent(text: str) -> None:
    assert strict_number(text) is None
    assert parse_number(text) is None


@pytest.mark.parametrize("function", _FUNCTIONS)
def test_non_string_input_gives_no_answer(function: Callable[[str], Any]) -> None:
    assert function(None) in (None, False)  # type: ignore[arg-type]


@pytest.mark.parametrize("function", _FUNCTIONS)
def test_100kb_inputs_finish_without_a_backtracking_blowup(function: Callable[[str], Any]) -> None:
    for text in _junk():
        started = time.perf_counter()
        function(text)
        assert time.perf_counter() - started < 1.0, text[:20]


@pytest.mark.parametrize(
    ("text", "integer"),
    [("10000", True), (" 10,000 ", True), ("$3 million", True), ("(12)", True), ("12%", True),
     ("10000.0", False), ("1e4", False), (".5", False), ("ten", False), ("1 2", False),
     ("1" * 500, False)],
)  # fmt: skip
def test_written_as_integer_means_one_quantity_without_a_point_or_exponent(
    text: str, integer: bool
) -> None:
    assert written_as_integer(text) is integer
