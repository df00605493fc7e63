"""Strict and lenient answer extraction: what each accepts, and that junk never raises."""

from __future__ import annotations

import doctest
from collections.abc import Callable
from typing import Any

import pytest

from posttrain.verify import (
    answers,
    exact_match,
    last_int_list,
    last_integer,
    normalize_text,
    parse_int_list,
    strict_integer,
)
from tests.verify.junk import junk_texts


@pytest.mark.parametrize(
    ("text", "expected"),
    [("42", 42), (" 42\n", 42), ("-7", -7), ("+3", 3), ("007", 7), ("0", 0)],
)
def test_strict_integer_reads_a_lone_integer(text: str, expected: int) -> None:
    assert strict_integer(text) == expected


@pytest.mark.parametrize(
    "text", ["", " ", "4 2", "42.", "4.2", "x42", "the answer is 42", "--4", "٣"]
)
def test_strict_integer_rejects_anything_else(text: str) -> None:
    assert strict_integer(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("The answer is 42.", 42),
        ("first 3 then 17", 17),
        ("12-5=7", 7),
        ("x = -4", -4),
        ("1,234", 234),
    ],
)
def test_last_integer_reads_the_last_integer_in_prose(text: str, expected: int) -> None:
    assert last_integer(text) == expected


def test_lenient_extractors_read_the_unicode_minus_as_a_minus() -> None:
    assert last_integer("x = \u22125") == -5
    assert last_integer("12\u22125") == 5  # after a digit it is an operator, as "-" is
    assert last_int_list("\u22123, \u22121, 2") == [-3, -1, 2]
    assert strict_integer("\u22125") is None and parse_int_list("\u22125") is None


def test_last_integer_is_none_without_digits() -> None:
    assert last_integer("no digits here") is None


def test_normalize_text_strips_and_collapses_whitespace() -> None:
    assert normalize_text("\t a  b\n\nc ") == "a b c"


def test_exact_match_ignores_whitespace_but_not_case() -> None:
    assert exact_match("  New   York\n", "New York")
    assert not exact_match("new york", "New York")


@pytest.mark.parametrize(
    ("text", "expected"),
    [("1,2,3", [1, 2, 3]), ("1, 2,  3", [1, 2, 3]), (" 5 ", [5]), ("-1,+2", [-1, 2])],
)
def test_parse_int_list_reads_a_comma_separated_list(text: str, expected: list[int]) -> None:
    assert parse_int_list(text) == expected


@pytest.mark.parametrize("text", ["", "1 ,2", "1,,2", "1,2,", "[1,2]", "1 2", "1;2", "sorted: 1,2"])
def test_parse_int_list_rejects_anything_else(text: str) -> None:
    assert parse_int_list(text) is None


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Sorted: 1, 2 ,3.", [1, 2, 3]),
        ("from 3,1,2 to 1,2,3", [1, 2, 3]),
        ("1,2 and then 7", [7]),
        ("[4,5]", [4, 5]),
    ],
)
def test_last_int_list_reads_the_last_run_in_prose(text: str, expected: list[int]) -> None:
    assert last_int_list(text) == expected


def test_last_int_list_is_none_without_digits() -> None:
    assert last_int_list("nothing") is None


def test_integers_longer_than_the_parse_limit_count_as_absent() -> None:
    huge = "9" * 10_000
    assert strict_integer(huge) is None
    assert last_integer(f"x {huge}") is None
    assert parse_int_list(f"1,{huge}") is None


_FUNCTIONS: list[Callable[[str], Any]] = [
    strict_integer,
    last_integer,
    normalize_text,
    parse_int_list,
    last_int_list,
    lambda text: exact_match(text, "42"),
]


def _junk() -> list[Any]:
    return junk_texts("1," * 50_000, "-" * 100_000)


@pytest.mark.parametrize("function", _FUNCTIONS)
def test_never_raises_on_junk(function: Callable[[str], Any]) -> None:
    for text in _junk():
        function(text)


@pytest.mark.parametrize("function", _FUNCTIONS)
def test_non_string_input_gives_no_answer(function: Callable[[str], Any]) -> None:
    assert function(None) in (None, "", False)  # type: ignore[arg-type]


def test_doctests_pass() -> None:
    assert doctest.testmod(answers).failed == 0
