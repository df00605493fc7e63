"""Numeric answers: read a number the way a financial report writes it, compare with tolerance.

    numeric_match("$1.2 million", "1.2 million")    # True
    numeric_match("12.5%", "0.125")                 # True: "%" divides by 100
    numeric_match("1200000", "1.2 million")         # False: the scale word must match

A quantity is an optional sign, an optional currency sign ($ € £ ¥), digits with
optional thousands commas, decimals and exponent, then optionally "%" or a scale
word (thousand, million, billion, trillion). "(12)" is -12, as in accounts.
`strict_number` and `parse_quantity` accept text that is exactly one quantity
(after stripping), `written_as_integer` says whether it has no decimal point or
exponent; `parse_number` takes the last quantity anywhere in prose.
`numeric_match` follows the FinQA / TAT-QA rules: the scale words of the answer
and the expected value must be the same (both absent, or the same word), then
the values agree when equal after rounding to `decimals` places or within the
relative tolerance `rel_tol`. No function here raises on model text.

Not guaranteed: only ASCII digits, "." as the decimal point and "," for
thousands (so "3,5" is not three and a half, "0,100" is not a hundred, and
"1,2,3" holds no number); no number words ("seven"), no fractions ("1/2"), no
unit words other than the four scale words, no abbreviations ("1.2M", "5bn");
a sign and parentheses together, or a sign on both sides of the currency, are
rejected; quantities longer than 400 characters, or that overflow a float,
count as absent; rounding
to 5 places makes all values below 5e-6 in size equal; "%" is not required to
match, so "0.125" matches "12.5%" (check the format yourself if it matters);
`parse_number` looks back through at most about 20 000 characters of digit-bearing
text from the last digit, then gives up (None).
"""

from __future__ import annotations

import math
import re
from typing import NamedTuple

_MAX_TOKEN = 400
_SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}
_QUANTITY = (
    r"(?P<paren>\(\s?)?"
    r"(?P<s1>[-+\u2212])?(?P<cur>[$€£¥]\s?)?(?P<s2>[-+\u2212])?"
    r"(?P<num>(?:[1-9][0-9]{0,2}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?|\.[0-9]+)"
    r"(?P<exp>[eE][-+]?[0-9]+)?"
    r"(?![0-9]|[.,][0-9])"
    r"(?:\s?(?P<pct>%)|\s(?P<scale>thousand|million|billion|trillion)\b)?"
    r"(?(paren)\s?\))"
)
_STRICT = re.compile(_QUANTITY, re.IGNORECASE)
# The lookahead lets the regex engine skip characters that cannot start a quantity.
_LENIENT = re.compile(r"(?<![0-9.,])(?=[-+\u2212($€£¥.0-9])" + _QUANTITY, re.IGNORECASE)
_WINDOW = 2_000
_SEARCH_BUDGET = 20_000


class Quantity(NamedTuple):
    """A number read from text: its value (scale and % applied) and how it was written."""

    value: float
    scale: str | None  # "thousand", "million", "billion", "trillion" or None
    percent: bool


def _quantity(match: re.Match[str]) -> Quantity | None:
    if len(match.group(0)) > _MAX_TOKEN:
        return None
    sign = match.group("s1") or match.group("s2")
    if match.group("s1") and match.group("s2"):
        return None
    if match.group("paren") and sign:
        return None
    try:
        value = float(match.group("num").replace(",", "") + (match.group("exp") or ""))
    except ValueError:
        return None
    scale = match.group("scale")
    scale = scale.lower() if scale else None
    if scale:
        value *= _SCALES[scale]
    percent = match.group("pct") is not None
    if percent:
        value /= 100
    if sign in ("-", "\u2212") or match.group("paren"):
        value = -value
    if not math.isfinite(value):
        return None
    return Quantity(value, scale, percent)


def parse_quantity(text: str) -> Quantity | None:
    """The quantity when the whole stripped text is one, with its scale word and % flag.

    >>> parse_quantity(" -$1,200.5 thousand ")
    Quantity(value=-1200500.0, scale='thousand', percent=False)
    >>> parse_quantity("(12%)")
    Quantity(value=-0.12, scale=None, percent=True)
    >>> parse_quantity("about 12") is None, parse_quantity("nan") is None
    (True, True)
    """
    if not isinstance(text, str):
        return None
    stripped = text.strip()
    if len(stripped) > _MAX_TOKEN:
        return None
    match = _STRICT.fullmatch(stripped)
    return _quantity(match) if match else None


def strict_number(text: str) -> float | None:
    """The value when the whole stripped text is one quantity.

    >>> strict_number("1,234.5"), strict_number("12%"), strict_number("(12)")
    (1234.5, 0.12, -12.0)
    >>> strict_number("$1.2 million"), strict_number("12 apples") is None
    (1200000.0, True)
    """
    quantity = parse_quantity(text)
    return quantity.value if quantity else None


def written_as_integer(text: str) -> bool:
    """Whether the whole stripped text is one quantity whose digits have no decimal point
    and no exponent (a count, a year, an exact amount; "%" and scale words allowed).

    >>> written_as_integer("10,000"), written_as_integer("$3 million"), written_as_integer("12%")
    (True, True, True)
    >>> written_as_integer("10000.0"), written_as_integer("1e4"), written_as_integer("ten")
    (False, False, False)
    """
    if not isinstance(text, str) or len(text.strip()) > _MAX_TOKEN:
        return False
    match = _STRICT.fullmatch(text.strip())
    if match is None or _quantity(match) is None:
        return False
    return "." not in match.group("num") and not match.group("exp")


def parse_number(text: str) -> float | None:
    """The value of the last quantity anywhere in the text.

    >>> parse_number("Revenue grew from 3 to 3 thousand dollars.")
    3000.0
    >>> parse_number("so the loss is (12)"), parse_number("no number") is None
    (-12.0, True)
    """
    if not isinstance(text, str):
        return None
    # Search backwards window by window from the last digit, so long prose around the
    # answer costs little; stop after a budget so digit-laden junk stays fast. A window
    # reaches a quantity's length past where the previous one began, so a quantity that
    # straddles the boundary is read whole; matches starting inside the previous window
    # were ruled out there (any found now are cut short by `stop`) and are skipped.
    end = len(text)  # quantities starting at or after `end` are already ruled out
    stop = len(text)
    scanned = 0
    while scanned < _SEARCH_BUDGET:
        last_digit = max(text.rfind(digit, 0, end) for digit in "0123456789")
        if last_digit < 0:
            return None
        start = max(0, last_digit - _WINDOW)
        stop = min(stop, last_digit + _MAX_TOKEN + 32)
        last = None
        for match in _LENIENT.finditer(text, start, stop):
            if match.start() < end:
                last = match
        if last is not None:
            quantity = _quantity(last)
            return quantity.value if quantity else None
        scanned += stop - start
        end, stop = start, min(len(text), start + _MAX_TOKEN + 32)
    return None


def _expected_quantity(expected: str | float) -> Quantity | None:
    if isinstance(expected, str):
        return parse_quantity(expected)
    if isinstance(expected, (int, float)) and not isinstance(expected, bool):
        try:
            value = float(expected)
        except OverflowError:
            return None
        return Quantity(value, None, False) if math.isfinite(value) else None
    return None


def values_close(a: float, b: float, *, rel_tol: float = 1e-4, decimals: int = 5) -> bool:
    """True when a and b are equal after rounding to `decimals` places or within `rel_tol`.

    >>> values_close(0.333333, 1 / 3), values_close(100.0, 100.01), values_close(1.0, 1.1)
    (True, True, False)
    """
    if not (math.isfinite(a) and math.isfinite(b)):
        return False
    return round(a, decimals) == round(b, decimals) or math.isclose(a, b, rel_tol=rel_tol)


def numeric_match(
    text: str, expected: str | float, *, rel_tol: float = 1e-4, decimals: int = 5
) -> bool:
    """True when the text is one quantity equal to `expected` by the FinQA / TAT-QA rules.

    >>> numeric_match("1,234.50", "1234.5"), numeric_match("12%", 0.12)
    (True, True)
    >>> numeric_match("3 million", "3 million"), numeric_match("3000000", "3 million")
    (True, False)
    >>> numeric_match("The answer is 7", 7), numeric_match("7.1", 7)
    (False, False)
    """
    quantity = parse_quantity(text)
    gold = _expected_quantity(expected)
    if quantity is None or gold is None or quantity.scale != gold.scale:
        return False
    return values_close(quantity.value, gold.value, rel_tol=rel_tol, decimals=decimals)
