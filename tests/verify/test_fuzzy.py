"""Fuzzy field matching: string similarity, per-field scores, and junk."""

from __future__ import annotations

import doctest
import random
import string
import time
from collections.abc import Callable
from typing import Any

import pytest

from posttrain.verify import field_score, field_scores, fuzzy, fuzzy_ratio
from tests.verify.junk import junk_texts


def test_doctests_pass() -> None:
    assert doctest.testmod(fuzzy).failed == 0


def test_fuzzy_ratio_ignores_case_and_whitespace() -> None:
    assert fuzzy_ratio("  ACME\tCorp ", "acme corp") == 1.0


def test_fuzzy_ratio_is_between_zero_and_one_for_near_misses() -> None:
    assert 0.8 < fuzzy_ratio("kitten", "kittens") < 1.0


def test_fuzzy_ratio_is_zero_for_unrelated_strings() -> None:
    assert fuzzy_ratio("abc", "xyz") == 0.0


def test_fuzzy_ratio_of_two_long_different_strings_is_zero() -> None:
    assert fuzzy_ratio("a" * 6000, "a" * 5999 + "b") == 0.0
    assert fuzzy_ratio("a" * 6000, "A" * 6000) == 1.0


def test_field_score_accepts_a_near_miss_string_with_its_ratio() -> None:
    assert field_score("Jon Smith", "John Smith") == pytest.approx(
        fuzzy_ratio("Jon Smith", "John Smith")
    )


def test_field_score_rejects_a_string_below_threshold() -> None:
    assert field_score("Jon Smith", "John Smith", threshold=0.99) == 0.0


def test_field_score_compares_numbers_by_value() -> None:
    assert field_score("1,200.00", 1200) == 1.0
    assert field_score(1200, "$1,200") == 1.0


def test_field_score_gives_no_partial_credit_for_numbers() -> None:
    assert field_score("1201", 1200) == 0.0


def test_field_score_requires_the_same_scale_word() -> None:
    assert field_score("1200000", "1.2 million") == 0.0


def test_field_score_formats_a_number_for_a_string_gold() -> None:
    assert field_score(12, "12 Main St", threshold=0.1) > 0.0


def test_field_score_needs_equal_booleans_lists_and_null() -> None:
    assert field_score(True, True) == 1.0
    assert field_score(1, True) == 0.0
    assert field_score([1, 2.0], [1, 2]) == 1.0
    assert field_score([2, 1], [1, 2]) == 0.0
    assert field_score("", None) == 0.0


def test_field_scores_score_missing_fields_zero_and_ignore_extras() -> None:
    assert field_scores({"b": "x", "extra": 1}, {"a": "x", "b": "x"}) == {"a": 0.0, "b": 1.0}


def test_field_scores_of_a_non_mapping_prediction_are_zero() -> None:
    assert field_scores(["a"], {"a": "a"}) == {"a": 0.0}  # type: ignore[arg-type]


def test_field_scores_rejects_a_non_mapping_gold() -> None:
    with pytest.raises(TypeError):
        field_scores({}, ["a"])  # type: ignore[arg-type]


def _junk() -> list[Any]:
    return junk_texts("nan", "inf", None, float("nan"), float("inf"), 10**5000, [[[[[]]]]])


_FUNCTIONS: list[Callable[[Any], Any]] = [
    lambda value: field_score(value, "Acme Corporation"),
    lambda value: field_score(value, 12.5),
    lambda value: field_score(value, True),
    lambda value: field_scores({"name": value, "total": value}, {"name": "Acme", "total": 3})[
        "total"
    ],
    lambda value: field_scores(value, {"name": "Acme"})["name"],
]


@pytest.mark.parametrize("function", _FUNCTIONS)
def test_junk_scores_zero_and_never_raises(function: Callable[[Any], Any]) -> None:
    assert all(function(value) == 0.0 for value in _junk())


def test_fuzzy_ratio_of_junk_is_low_and_never_raises() -> None:
    assert all(fuzzy_ratio(value, "Acme Corporation") < 0.3 for value in _junk())


def test_100kb_field_values_finish_without_a_backtracking_blowup() -> None:
    long_gold = "".join(random.Random(1).choice(string.ascii_letters) for _ in range(4000))
    for value in _junk():
        started = time.perf_counter()
        field_scores({"a": value, "b": value}, {"a": "Acme Corporation", "b": long_gold})
        assert time.perf_counter() - started < 1.0
