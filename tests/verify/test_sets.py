"""Set answers: splitting items, set-F1 and exact set match, and junk."""

from __future__ import annotations

import doctest
import time
from collections.abc import Callable
from typing import Any

import pytest

from posttrain.verify import normalize_text, parse_items, set_f1, set_match, sets
from tests.verify.junk import junk_texts


def test_doctests_pass() -> None:
    assert doctest.testmod(sets).failed == 0


def test_parse_items_strips_and_drops_empty_items() -> None:
    assert parse_items(" a ,, b,\n c ,") == ["a", "b", "c"]


def test_parse_items_splits_on_another_separator() -> None:
    assert parse_items("a | b", sep="|") == ["a", "b"]


def test_parse_items_with_empty_separator_gives_nothing() -> None:
    assert parse_items("a,b", sep="") == []


def test_set_f1_is_one_for_the_same_items_in_another_order() -> None:
    assert set_f1("c, a, b", "a,b,c") == 1.0


def test_set_f1_ignores_case_and_whitespace_by_default() -> None:
    assert set_f1("New   York, PARIS", ["new york", "Paris"]) == 1.0


def test_set_f1_gives_partial_credit() -> None:
    assert set_f1("a, b, x", "a, b, c, d") == pytest.approx(2 * 2 / (3 + 4))


def test_set_f1_counts_duplicates_once() -> None:
    assert set_f1("a, a, a", "a, b") == pytest.approx(2 / 3)


def test_set_f1_is_zero_without_common_items() -> None:
    assert set_f1("x, y", "a, b") == 0.0


def test_set_f1_of_two_empty_sets_is_one() -> None:
    assert set_f1("", []) == 1.0


def test_set_f1_takes_a_custom_normalizer() -> None:
    assert set_f1("A", "a", normalize=normalize_text) == 0.0


def test_set_f1_rejects_lists_with_non_strings() -> None:
    assert set_f1([1, 2], ["1", "2"]) == 0.0  # type: ignore[list-item]


def test_set_match_needs_the_same_sets() -> None:
    assert set_match("b, a", ["A", "B"])
    assert not set_match("a", "a, b")
    assert not set_match("a, b, c", "a, b")


_FUNCTIONS: list[Callable[[str], Any]] = [
    parse_items,
    lambda text: set_f1(text, "alpha, beta"),
    lambda text: set_match(text, "alpha, beta"),
]


def _junk() -> list[Any]:
    return junk_texts("\ud800, 12", "nan, inf", "," * 100_000, "x," * 50_000)


@pytest.mark.parametrize("function", _FUNCTIONS)
def test_never_raises_on_junk(function: Callable[[str], Any]) -> None:
    for text in _junk():
        function(text)


@pytest.mark.parametrize("function", _FUNCTIONS[1:])
def test_junk_scores_zero(function: Callable[[str], Any]) -> None:
    assert all(not function(text) for text in _junk())


@pytest.mark.parametrize("function", _FUNCTIONS)
def test_non_string_input_gives_nothing(function: Callable[[str], Any]) -> None:
    assert function(None) in ([], 0.0, False)  # type: ignore[arg-type]


@pytest.mark.parametrize("function", _FUNCTIONS)
def test_100kb_inputs_finish_without_a_backtracking_blowup(function: Callable[[str], Any]) -> None:
    for text in _junk():
        started = time.perf_counter()
        function(text)
        assert time.perf_counter() - started < 1.0, text[:20]
