"""`num/*` number formats: base conversion, Roman numerals both ways, scientific notation.

    from posttrain.domains.num.formats import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=3)  # "Convert the binary number ..."

All four are exact: the answer is the number written in the target format, and the
verifier reads it back and compares values, so only what the prompt allows varies
(hexadecimal letters in either case; trailing zeros in a scientific mantissa).

- `num/base-convert-v1`: decimal to and from binary, octal and hexadecimal (binary and
  hexadecimal to each other from d=6); `measure` is the value's bit length, 6..33.
- `num/to-roman-v1` / `num/from-roman-v1`: 1..3999 in standard subtractive notation;
  from d=9 the numbers are built from the digits 4 and 9 that need subtraction;
  `measure` is the number's decimal digits (plus 1 from d=9).
- `num/scientific-v1`: a plain decimal to `MeE` with every significant digit;
  `measure` is the significant digits plus the largest exponent size.

Not guaranteed: a Roman numeral is checked against the one standard spelling (no
`IIII`, no vinculum); numbers above 3999 never occur. Base prefixes (0x, 0b) and
leading zeros are refused, as the prompts say.
"""

from __future__ import annotations

import random
import re
from fractions import Fraction

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.num.numerals import decimal_text, judge_integer, wrong_answers
from posttrain.types import Task, Verdict
from posttrain.verify.answers import strict_integer

_EXACT = Axes("text", "none", "single", "exact")
_BASE_NAMES = {2: "binary (base 2)", 8: "octal (base 8)", 10: "decimal (base 10)", 16: "hexadecimal (base 16)"}  # fmt: skip
_BASE_DIGITS = {2: "[01]", 8: "[0-7]", 10: "[0-9]", 16: "[0-9A-Fa-f]"}
_DIRECTIONS = [(10, 2), (10, 16), (10, 8), (2, 10), (16, 10), (8, 10)]
_DIRECTIONS_HARD = [*_DIRECTIONS, (2, 16), (16, 2)]


def in_base(n: int, base: int) -> str:
    """`n` ≥ 0 written in `base` (2, 8, 10 or 16), upper-case letters, no prefix."""
    return {2: f"{n:b}", 8: f"{n:o}", 10: str(n), 16: f"{n:X}"}[base]


class BaseConversion(AnswerDomain):
    """Rewrite a number from one base to another."""

    id = "num/base-convert-v1"
    axes = _EXACT
    instructions = (
        "Reply with the digits only: no prefix such as 0x or 0b, no leading zeros, no spaces; "
        "hexadecimal letters A-F may be upper or lower case."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        bits = 3 + 3 * difficulty
        source, target = rng.choice(_DIRECTIONS if difficulty < 6 else _DIRECTIONS_HARD)
        n = rng.randint(1 << (bits - 1), (1 << bits) - 1)
        return Problem(
            f"Convert the {_BASE_NAMES[source]} number {in_base(n, source)} to "
            f"{_BASE_NAMES[target]}.",
            in_base(n, target),
            {"n": n, "source": source, "target": target},
            measure=bits,
        )

    def judge(self, task: Task, text: str) -> Verdict:
        target, n = task.meta["target"], task.meta["n"]
        stripped = text.strip() if len(text) < 200 else ""
        shape = re.fullmatch(f"0|[1-9A-Fa-f]{_BASE_DIGITS[target]}*", stripped)
        well_formed = shape is not None and re.fullmatch(f"{_BASE_DIGITS[target]}+", stripped)
        right = bool(well_formed) and int(stripped, target) == n
        components = {"format": float(bool(well_formed)), "correct": float(right)}
        why = f"the text is not {_BASE_NAMES[target]} digits" if not well_formed else "the value differs"  # fmt: skip
        return verdict(right, f"the number in {_BASE_NAMES[target]}", components=components, why=why)  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        n, source, target = task.meta["n"], task.meta["source"], task.meta["target"]
        prefix = {2: "0b", 8: "0o", 10: "", 16: "0x"}[target]
        candidates = [
            in_base(n, target)[::-1],  # digits read from the wrong end
            in_base(n + 1, target),
            in_base(n - 1, target),
            in_base(n, source),  # the number left unconverted
            prefix + in_base(n, target),
        ]
        return wrong_answers(task.answer, candidates, lambda t: self.judge(task, t).passed)


_ROMAN = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
          (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]  # fmt: skip
_ROMAN_VALUES = {"I": 1, "V": 5, "X": 10, "L": 50, "C": 100, "D": 500, "M": 1000}
_ROMAN_RANGES = [(1, 9), (10, 39), (40, 99), (100, 399), (400, 999),
                 (1000, 1999), (1000, 2999), (2000, 3999)]  # fmt: skip


def to_roman(n: int, *, subtractive: bool = True) -> str:
    """`n` in 1..3999 as a Roman numeral; `subtractive=False` writes 4 as IIII, 9 as VIIII."""
    out = []
    for value, symbol in _ROMAN:
        if not subtractive and len(symbol) == 2:
            continue
        count, n = divmod(n, value)
        out.append(symbol * count)
    return "".join(out)


def _roman_number(rng: random.Random, difficulty: int) -> int:
    if difficulty <= len(_ROMAN_RANGES):
        return rng.randint(*_ROMAN_RANGES[difficulty - 1])
    # Every lower digit a 4, 9 or 8: the spellings that need subtraction or the most symbols.
    return rng.randint(1, 3) * 1000 + sum(rng.choice([4, 9, 8]) * 10**k for k in range(3))


def _roman_measure(difficulty: int) -> int:
    return len(str(_ROMAN_RANGES[min(difficulty, len(_ROMAN_RANGES)) - 1][0])) + (difficulty > 8)


class ToRoman(AnswerDomain):
    """Write an integer as a Roman numeral."""

    id = "num/to-roman-v1"
    axes = _EXACT
    instructions = (
        "Use standard subtractive notation (4 is IV, 900 is CM). Reply with the numeral only, "
        "in upper-case letters, with no spaces or other text."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = _roman_number(rng, difficulty)
        return Problem(
            f"Write {n} as a Roman numeral.", to_roman(n), {"n": n}, _roman_measure(difficulty)
        )

    def judge(self, task: Task, text: str) -> Verdict:
        stripped = text.strip() if len(text) < 200 else ""
        well_formed = re.fullmatch("[IVXLCDM]+", stripped) is not None
        right = stripped == task.answer
        components = {"format": float(well_formed), "correct": float(right)}
        why = "the text is not upper-case Roman numerals" if not well_formed else "wrong numeral"
        return verdict(right, "the standard Roman numeral", components=components, why=why)

    def wrong(self, task: Task) -> list[str]:
        n = task.meta["n"]
        candidates = [
            to_roman(n, subtractive=False),  # IIII instead of IV
            to_roman(n + 1),
            to_roman(n - 1) if n > 1 else "",
            task.answer[:-1],  # the last symbol left off
            to_roman(n).lower(),
        ]
        return wrong_answers(task.answer, candidates, lambda t: self.judge(task, t).passed)


class FromRoman(AnswerDomain):
    """Read a standard Roman numeral as an integer."""

    id = "num/from-roman-v1"
    axes = _EXACT
    instructions = "Reply with the integer only, in decimal digits, and nothing else."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = _roman_number(rng, difficulty)
        numeral = to_roman(n)
        return Problem(
            f"What number is the Roman numeral {numeral}?",
            str(n),
            {"numeral": numeral},
            _roman_measure(difficulty),
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(int(task.answer), text, "the numeral's value")

    def wrong(self, task: Task) -> list[str]:
        n = int(task.answer)
        # Every symbol added, ignoring that a smaller one before a larger one subtracts.
        additive = sum(_ROMAN_VALUES[c] for c in task.meta["numeral"])
        candidates = [str(v) for v in (additive, n + 1, n - 1, n + 10, n - 10)]
        return wrong_answers(task.answer, candidates, lambda t: strict_integer(t) == n)


_SCIENTIFIC = re.compile(r"(-?)([1-9](?:\.[0-9]{1,60})?)e([+-]?[0-9]{1,4})")


def read_scientific(text: str) -> Fraction | None:
    """The exact value of a stripped `MeE` text with 1 ≤ |M| < 10, else None.

    >>> read_scientific("4.56e4"), read_scientific("45.6e3"), read_scientific("4.56E4")
    (Fraction(45600, 1), None, None)
    """
    stripped = text.strip() if isinstance(text, str) and len(text) < 200 else ""
    match = _SCIENTIFIC.fullmatch(stripped)
    if match is None:
        return None
    sign, mantissa, exponent = match.groups()
    value = Fraction(mantissa) * Fraction(10) ** int(exponent)
    return -value if sign else value


class ScientificNotation(AnswerDomain):
    """Write a plain decimal (large or small) as `MeE` keeping every significant digit."""

    id = "num/scientific-v1"
    axes = _EXACT
    instructions = (
        "Write it as MeE: the mantissa M with exactly one non-zero digit before the decimal "
        "point and every significant digit kept (no rounding), the letter e, then the integer "
        "exponent E. For 45600 write 4.56e4; for -0.0031 write -3.1e-3. No spaces, no x10^, "
        "nothing else."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        significant = 1 + (difficulty - 1) // 2  # 1..5
        reach = 2 + difficulty  # exponents -reach..reach, never 0
        digits = [rng.randint(1, 9)] + [rng.randint(0, 9) for _ in range(significant - 1)]
        if significant > 1:
            digits[-1] = digits[-1] or rng.randint(1, 9)
        exponent = rng.choice([e for e in range(-reach, reach + 1) if e != 0])
        mantissa = str(digits[0]) + ("." + "".join(map(str, digits[1:])) if significant > 1 else "")  # fmt: skip
        sign = "-" if difficulty >= 6 and rng.random() < 0.3 else ""
        value = Fraction(sign + mantissa) * Fraction(10) ** exponent
        return Problem(
            f"Write {decimal_text(value)} in scientific notation.",
            f"{sign}{mantissa}e{exponent}",
            {"value": str(value)},
            measure=significant + reach,
        )

    def judge(self, task: Task, text: str) -> Verdict:
        got = read_scientific(text)
        right = got is not None and got == Fraction(task.meta["value"])
        components = {"format": float(got is not None), "correct": float(right)}
        why = "the text is not MeE with 1 <= |M| < 10" if got is None else "the value differs"
        return verdict(right, "the number in scientific notation", components=components, why=why)  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        body, _, exponent_text = task.answer.partition("e")
        exponent = int(exponent_text)
        sign = "-" if body.startswith("-") else ""
        unsigned = Fraction(body.lstrip("-"))
        candidates = [
            f"{body}e{exponent + 1}",
            f"{body}e{exponent - 1}",
            f"{body}e{-exponent}",  # the exponent's direction reversed
            f"{sign}{decimal_text(unsigned * 10)}e{exponent - 1}",  # mantissa not normalized
        ]
        return wrong_answers(task.answer, candidates, lambda t: self.judge(task, t).passed)


DOMAINS: tuple[AnswerDomain, ...] = (BaseConversion(), ToRoman(), FromRoman(), ScientificNotation())
