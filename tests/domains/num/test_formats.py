"""`num/formats.py`: bases, Roman numerals both ways, scientific notation."""

from __future__ import annotations

import doctest

from posttrain.domains.num import formats
from posttrain.domains.num.formats import (
    BaseConversion,
    FromRoman,
    ScientificNotation,
    ToRoman,
    to_roman,
)


def test_the_doctests_hold() -> None:
    assert doctest.testmod(formats).failed == 0


def test_base_conversion_round_trips() -> None:
    domain = BaseConversion()
    for seed in range(20):
        task = domain.generate(seed, 7)
        assert int(task.answer, task.meta["target"]) == task.meta["n"]


def test_hex_letters_may_be_lower_case_but_prefixes_and_leading_zeros_fail() -> None:
    domain = BaseConversion()
    task = next(t for t in (domain.generate(s, 6) for s in range(50)) if t.meta["target"] == 16)
    assert domain.judge(task, task.answer.lower()).passed
    assert not domain.judge(task, "0x" + task.answer).passed
    assert not domain.judge(task, "0" + task.answer).passed


def test_binary_answer_refuses_non_binary_digits() -> None:
    domain = BaseConversion()
    task = next(t for t in (domain.generate(s, 3) for s in range(50)) if t.meta["target"] == 2)
    assert not domain.judge(task, str(task.meta["n"])).passed


def test_roman_numerals_use_subtractive_notation() -> None:
    assert [to_roman(n) for n in (4, 9, 14, 40, 90, 400, 1994, 3999)] == [
        "IV", "IX", "XIV", "XL", "XC", "CD", "MCMXCIV", "MMMCMXCIX"
    ]  # fmt: skip


def test_to_roman_refuses_additive_and_lower_case_forms() -> None:
    domain = ToRoman()
    task = domain.generate(0, 10)
    assert domain.judge(task, task.answer).passed
    assert not domain.judge(task, to_roman(task.meta["n"], subtractive=False)).passed
    assert not domain.judge(task, task.answer.lower()).passed


def test_from_roman_reads_back_what_to_roman_writes() -> None:
    domain = FromRoman()
    for seed in range(20):
        task = domain.generate(seed, 9)
        assert to_roman(int(task.answer)) == task.meta["numeral"]


def test_scientific_accepts_trailing_zeros_and_a_plus_exponent() -> None:
    domain = ScientificNotation()
    task = domain.generate(0, 5)
    body, _, exponent = task.answer.partition("e")
    padded = body + ("0" if "." in body else ".0")
    assert domain.judge(task, f"{padded}e{exponent}").passed
    if not exponent.startswith("-"):
        assert domain.judge(task, f"{body}e+{exponent}").passed


def test_scientific_refuses_rounding_unnormalized_and_other_notations() -> None:
    domain = ScientificNotation()
    task = domain.generate(1, 9)
    body, _, exponent = task.answer.partition("e")
    assert not domain.judge(task, f"{body[:-1]}e{exponent}").passed  # a digit lost
    assert not domain.judge(task, f"{body} x 10^{exponent}").passed
    assert not domain.judge(task, f"{body}E{exponent}").passed
    assert not domain.judge(task, task.meta["value"]).passed
