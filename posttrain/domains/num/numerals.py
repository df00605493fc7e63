"""Strict readers and writers of numbers as text, shared by the `num/*` domains.

The readers take a model's whole final text and return the exact value, or None when
the stripped text is not exactly one number of the stated shape; they never raise and
never round (values are `fractions.Fraction`, so "0.1" is exactly one tenth):

    strict_decimal(" -12.50 ")  # Fraction(-25, 2)
    strict_ratio("6/8")         # (6, 8): the written numerator and denominator
    strict_rational("7/-2")     # None: only a leading minus sign

The writers turn exact values into the canonical answer text (`decimal_text`,
`rounded_text`), `wrong_answers` filters a domain's candidate corruptions down to
distinct ones that really are wrong, and `judge_integer` / `judge_value` build the
verdict (components `format` and `correct`) for a one-number answer.

Not guaranteed: ASCII digits only, "." as the decimal point, no thousands separators,
no exponents, no spaces inside a number; texts longer than `MAX_CHARS` characters
read as None (no task here needs a longer answer).
"""

from __future__ import annotations

import random
import re
from collections.abc import Callable, Iterable
from fractions import Fraction

from posttrain.domains.answer_domain import verdict
from posttrain.types import Verdict
from posttrain.verify.answers import strict_integer

MAX_CHARS = 400
_DECIMAL = re.compile(r"[+-]?[0-9]+(?:\.[0-9]+)?")
_RATIO = re.compile(r"(-?)([0-9]+)/([0-9]+)")


def number_with_digits(rng: random.Random, digits: int) -> int:
    """A uniform random non-negative integer with exactly `digits` digits (0..9 for one)."""
    if digits <= 1:
        return rng.randint(0, 9)
    return rng.randint(10 ** (digits - 1), 10**digits - 1)


def _short(text: str) -> str | None:
    if not isinstance(text, str) or len(text) > MAX_CHARS:
        return None
    return text.strip()


def strict_decimal(text: str) -> Fraction | None:
    """The value when the stripped text is an optionally signed integer or decimal.

    >>> strict_decimal(" -12.50 "), strict_decimal("3")
    (Fraction(-25, 2), Fraction(3, 1))
    >>> strict_decimal("1,000") is None, strict_decimal(".5") is None, strict_decimal("5.") is None
    (True, True, True)
    """
    stripped = _short(text)
    if stripped is None or not _DECIMAL.fullmatch(stripped):
        return None
    return Fraction(stripped)


def strict_ratio(text: str) -> tuple[int, int] | None:
    """The signed numerator and the denominator of a stripped `p/q` (`-p/q` allowed, q > 0).

    >>> strict_ratio("-6/8"), strict_ratio("3/0"), strict_ratio("3 / 4")
    ((-6, 8), None, None)
    """
    stripped = _short(text)
    if stripped is None:
        return None
    match = _RATIO.fullmatch(stripped)
    if match is None or int(match.group(3)) == 0:
        return None
    numerator = int(match.group(2))
    return (-numerator if match.group(1) else numerator), int(match.group(3))


def strict_rational(text: str) -> Fraction | None:
    """The value of a stripped integer, decimal or `p/q` fraction (leading minus only).

    >>> strict_rational("10/4"), strict_rational("-2.5"), strict_rational("7/-2") is None
    (Fraction(5, 2), Fraction(-5, 2), True)
    """
    ratio = strict_ratio(text)
    if ratio is not None:
        return Fraction(*ratio)
    return strict_decimal(text)


def fraction_text(value: Fraction) -> str:
    """The canonical text of a rational: an integer, or `p/q` in lowest terms.

    >>> fraction_text(Fraction(-6, 8)), fraction_text(Fraction(4, 2))
    ('-3/4', '2')
    """
    if value.denominator == 1:
        return str(value.numerator)
    return f"{value.numerator}/{value.denominator}"


def rounded_text(value: Fraction, places: int) -> str:
    """`value` rounded half away from zero to exactly `places` decimals (0: an integer).

    >>> rounded_text(Fraction(5, 2), 0), rounded_text(Fraction(-1, 8), 2), rounded_text(Fraction(1), 2)
    ('3', '-0.13', '1.00')
    """
    scale = 10**places
    units = abs(value) * scale
    whole = int(units)
    if units - whole >= Fraction(1, 2):
        whole += 1
    sign = "-" if value < 0 and whole else ""
    digits = str(whole).rjust(places + 1, "0")
    if places == 0:
        return sign + digits
    return f"{sign}{digits[:-places]}.{digits[-places:]}"


def decimal_text(value: Fraction) -> str:
    """The exact decimal text of a terminating rational, without trailing zeros.

    >>> decimal_text(Fraction(5, 4)), decimal_text(Fraction(-3)), decimal_text(Fraction(1, 10))
    ('1.25', '-3', '0.1')
    """
    places = 0
    while (value * 10**places).denominator != 1:
        places += 1
        if places > 60:
            raise ValueError(f"{value} has no short terminating decimal")
    text = rounded_text(value, places)
    return text.rstrip("0").rstrip(".") if "." in text else text


def within(value: Fraction | None, target: Fraction, tolerance: Fraction) -> bool:
    """True when `value` is read and lies within `tolerance` of `target` (inclusive)."""
    return value is not None and abs(value - target) <= tolerance


def wrong_answers(
    answer: str, candidates: Iterable[str], is_right: Callable[[str], bool]
) -> list[str]:
    """The candidates, in order, without repeats, without the answer and without any the
    verifier would accept (`is_right`): the corruptions a domain can honestly offer."""
    out: list[str] = []
    for text in candidates:
        if text and text != answer and text not in out and not is_right(text):
            out.append(text)
    return out


def judge_integer(expected: int, text: str, what: str) -> Verdict:
    """The verdict for a final text that must be exactly the integer `expected`."""
    got = strict_integer(text)
    components = {"format": float(got is not None), "correct": float(got == expected)}
    if got is None:
        return verdict(False, what, components=components, why="the text is not one integer")
    return verdict(got == expected, what, components=components, why=f"got {got}")


def judge_value(
    text: str,
    target: Fraction,
    tolerance: Fraction,
    what: str,
    read: Callable[[str], Fraction | None],
) -> Verdict:
    """The verdict for a number `read` from the text that must lie within `tolerance`."""
    got = read(text)
    close = within(got, target, tolerance)
    components = {"format": float(got is not None), "correct": float(close)}
    if got is None:
        return verdict(
            False, what, components=components, why="the text is not a number in the stated format"
        )
    return verdict(close, what, components=components, why=f"got {text.strip()[:40]}")
