"""`list_ops/formats.py`: the strict judges shared by the `list` family."""

from __future__ import annotations

from fractions import Fraction

from posttrain.domains.list_ops.formats import (
    decimal_text,
    judge_grid,
    judge_int_list,
    judge_int_set,
    judge_integer,
    read_decimal,
)


def test_int_list_accepts_spaces_after_commas_only() -> None:
    assert judge_int_list([1, -2, 3], " 1, -2,3\n", "x").passed
    assert not judge_int_list([1, -2, 3], "[1,-2,3]", "x").passed
    assert not judge_int_list([1, -2, 3], "1 ,-2,3", "x").passed


def test_int_list_refuses_prose_around_the_answer() -> None:
    verdict = judge_int_list([1, 2], "The list is 1,2", "x")
    assert verdict.reward == 0.0 and verdict.components["format"] == 0.0


def test_integer_refuses_a_trailing_period() -> None:
    assert judge_integer(7, "7", "x").passed and not judge_integer(7, "7.", "x").passed


def test_int_set_accepts_any_order() -> None:
    assert judge_int_set([3, 1, 2], "2,3,1", "x").passed


def test_int_set_scores_a_repeat_zero() -> None:
    verdict = judge_int_set([1, 2], "1,2,2", "x")
    assert (verdict.passed, verdict.reward) == (False, 0.0)


def test_int_set_gives_half_f1_to_a_partial_set() -> None:
    verdict = judge_int_set([1, 2], "1", "x")
    assert not verdict.passed and abs(verdict.reward - 0.5 * 2 / 3) < 1e-9


def test_grid_accepts_json_spacing_and_a_fence() -> None:
    assert judge_grid([[1, 2], [3]], "[[1, 2],\n [3]]", "x").passed
    assert judge_grid([[1, 2], [3]], "```json\n[[1,2],[3]]\n```", "x").passed


def test_grid_gives_a_right_shape_with_a_wrong_value_0_2() -> None:
    assert judge_grid([[1, 2], [3]], "[[1,2],[4]]", "x").reward == 0.2
    assert judge_grid([[1, 2], [3]], "[[1,2,3]]", "x").reward == 0.0


def test_grid_refuses_floats_and_booleans() -> None:
    assert not judge_grid([[1, 0]], "[[1.0, 0]]", "x").passed
    assert not judge_grid([[1, 0]], "[[true, false]]", "x").passed


def test_decimals_read_and_write_exactly() -> None:
    assert read_decimal("3.50") == Fraction(7, 2) and read_decimal("3.") is None
    assert decimal_text(Fraction(-5, 2)) == "-2.5" and decimal_text(Fraction(4)) == "4"
