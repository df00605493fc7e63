"""`num/*` fractions and decimals: reduce a fraction, add and subtract fractions, round a
decimal, pick the largest of mixed fractions and decimals.

    from posttrain.domains.num.fractions_decimals import DOMAINS
    task = DOMAINS[1].generate(seed=0, difficulty=5)  # "Compute 3/4 - 5/6 + 1/9."

How each is judged, as its prompt states:

- `num/simplify-fraction-v2` (exact): `p/q` in lowest terms. An equal fraction reduced
  part of the way fails with reward 0.5 (component `value` 1, `reduced` 0); the question's
  own fraction copied back fails with 0 (v1 gave it 0.5: half reward for no work).
- `num/fraction-arithmetic-v1` (math): any exact form of the right value passes: an
  integer, a decimal, or `p/q` reduced or not, with a leading minus when negative.
- `num/round-decimal-v1` (exact): the value rounded half away from zero, written with
  exactly the asked number of decimal places.
- `num/largest-number-v1` (exact): the largest item copied as it is written in the list.

`measure` is the denominator's digits, the term count with the denominators' size, the
digits of the number to round, or the list's length.

Not guaranteed: fractions are written `p/q` only (no mixed numbers like `1 1/2`, no
`\\frac`); the rounding task never asks to round a negative number to zero places.
"""

from __future__ import annotations

import math
import random
from fractions import Fraction

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.num.numerals import (
    decimal_text,
    fraction_text,
    number_with_digits,
    rounded_text,
    strict_decimal,
    strict_ratio,
    strict_rational,
    wrong_answers,
)
from posttrain.types import Task, Verdict
from posttrain.verify.answers import exact_match

_EXACT = Axes("text", "none", "single", "exact")


class SimplifyFraction(AnswerDomain):
    """Reduce `(x·g)/(y·g)` to `x/y`; the denominator has 2 (d=1) to 6 (d=10) digits."""

    id = "num/simplify-fraction-v2"
    axes = _EXACT
    instructions = (
        "Reply with the fraction in lowest terms as p/q (an improper fraction such as 7/4 "
        "if it is greater than 1), with no spaces and nothing else."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        digits = 2 + (difficulty - 1) // 2  # of the shown denominator: 2..6
        y = rng.randint(2, min(9 + 10 * difficulty, 10 ** (digits - 1)))
        g = rng.randint(max(2, -(-(10 ** (digits - 1)) // y)), (10**digits - 1) // y)
        x = rng.randint(1, 2 * y)
        while math.gcd(x, y) != 1:
            x += 1
        return Problem(
            f"Simplify the fraction {x * g}/{y * g}.",
            f"{x}/{y}",
            {"numerator": x * g, "denominator": y * g},
            measure=digits,
        )

    def judge(self, task: Task, text: str) -> Verdict:
        want = "the fraction in lowest terms"
        ratio = strict_ratio(text)
        if ratio is None:
            components = {"format": 0.0, "value": 0.0, "reduced": 0.0}
            return verdict(False, want, components=components, why="the text is not 'p/q'")
        p, q = ratio
        value = Fraction(p, q) == Fraction(task.meta["numerator"], task.meta["denominator"])
        reduced = math.gcd(p, q) == 1
        components = {"format": 1.0, "value": float(value), "reduced": float(reduced)}
        why = "the value differs" if not value else "it is not in lowest terms"
        echoed = (p, q) == (task.meta["numerator"], task.meta["denominator"])
        if value and echoed:
            why = "it is the question's fraction, not reduced at all"
        passed = value and reduced
        reward = 1.0 if passed else 0.5 * (value and not echoed)
        return verdict(passed, want, components=components, reward=reward, why=why)

    def wrong(self, task: Task) -> list[str]:
        n, d = task.meta["numerator"], task.meta["denominator"]
        x, _, y = task.answer.partition("/")
        half_way = math.gcd(n, d) // _smallest_factor(math.gcd(n, d))
        candidates = [f"{n}/{d}", f"{n // half_way}/{d // half_way}", f"{y}/{x}", f"{int(x) + 1}/{y}", x]  # fmt: skip
        return wrong_answers(task.answer, candidates, lambda t: self.judge(task, t).passed)


def _smallest_factor(n: int) -> int:
    p = 2
    while p * p <= n and n % p:
        p += 1
    return p if n % p == 0 else n


class FractionArithmetic(AnswerDomain):
    """`a/b ± c/d ± ...`: 2 (d=1) to 5 (d=10) terms, denominators up to 6 .. 60."""

    id = "num/fraction-arithmetic-v1"
    axes = Axes("text", "none", "single", "math")
    instructions = (
        "Reply with the exact value only: a fraction p/q (reduced or not), an integer, or an "
        "exact decimal, with a leading minus sign if it is negative; any of these forms of the "
        "right value is accepted. No spaces, no mixed numbers, nothing else."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        terms = 2 + (difficulty - 1) * 3 // 9  # 2..5
        top = 6 * difficulty
        fractions = [(rng.randint(1, top), rng.randint(2, top)) for _ in range(terms)]
        ops = [rng.choice("+-") for _ in range(terms - 1)]
        text = f"{fractions[0][0]}/{fractions[0][1]}"
        value = Fraction(*fractions[0])
        for op, (p, q) in zip(ops, fractions[1:], strict=True):
            text += f" {op} {p}/{q}"
            value += Fraction(p, q) if op == "+" else -Fraction(p, q)
        return Problem(
            f"Compute {text}.",
            fraction_text(value),
            {"terms": [list(f) for f in fractions], "ops": ops},
            measure=terms + math.log10(top),
        )

    def judge(self, task: Task, text: str) -> Verdict:
        got = strict_rational(text)
        right = got is not None and got == Fraction(task.answer)
        components = {"format": float(got is not None), "correct": float(right)}
        why = "the text is not a number or p/q" if got is None else "the value differs"
        return verdict(right, "the exact value", components=components, why=why)

    def wrong(self, task: Task) -> list[str]:
        terms, ops = task.meta["terms"], task.meta["ops"]
        value = Fraction(task.answer)
        signs = [1] + [1 if op == "+" else -1 for op in ops]
        # Numerators and denominators combined separately: the classic fraction mistake.
        naive = Fraction(sum(s * p for s, (p, _) in zip(signs, terms, strict=True)), sum(q for _, q in terms))  # fmt: skip
        first_two = Fraction(*terms[0]) + signs[1] * Fraction(*terms[1])
        candidates = [fraction_text(v) for v in (naive, -value, value + 1, first_two)]
        candidates.append(f"{value.numerator + 1}/{value.denominator}")
        return wrong_answers(task.answer, candidates, lambda t: self.judge(task, t).passed)


class RoundDecimal(AnswerDomain):
    """Round a decimal to n places (0..4), half away from zero; more digits as d grows."""

    id = "num/round-decimal-v1"
    axes = _EXACT
    instructions = (
        "Round half away from zero (2.5 becomes 3, -2.5 becomes -3). Reply with the rounded "
        "number only, written with exactly that many decimal places (keep trailing zeros; for "
        "0 places write an integer without a decimal point), no spaces or commas."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        places = (difficulty - 1) // 2  # 0..4
        whole_digits = 1 + difficulty // 3  # 1..4
        # A tie (the dropped part exactly 5) tests the rounding rule; otherwise 1..3 more digits.
        extra = 1 if rng.random() < 0.3 else rng.randint(2, 3)
        whole = number_with_digits(rng, whole_digits)
        tail = [rng.randint(0, 9) for _ in range(places + extra)]
        tail[places] = 5 if extra == 1 else tail[places]
        tail[-1] = tail[-1] or rng.randint(1, 9)
        text = f"{whole}." + "".join(map(str, tail))
        if difficulty >= 6 and places > 0 and rng.random() < 0.5:
            text = "-" + text
        value = Fraction(text)
        unit = "whole number" if places == 0 else f"{places} decimal place" + "s" * (places > 1)
        return Problem(
            f"Round {text} to {'the nearest ' if places == 0 else ''}{unit}.",
            rounded_text(value, places),
            {"number": text, "places": places},
            measure=whole_digits + places,
        )

    def judge(self, task: Task, text: str) -> Verdict:
        got = strict_decimal(text)
        right = exact_match(text, task.answer)
        components = {"format": float(got is not None), "correct": float(right)}
        if got is not None and not right and got == Fraction(task.answer):
            why = "the value is right but the decimal places are not as asked"
        else:
            why = "the text is not a decimal number" if got is None else "the value differs"
        return verdict(right, "the rounded number", components=components, why=why)

    def wrong(self, task: Task) -> list[str]:
        value, places = Fraction(task.meta["number"]), task.meta["places"]
        step = Fraction(1, 10**places)
        truncated = Fraction(int(value * 10**places), 10**places)
        candidates = [
            rounded_text(truncated, places),  # cut off instead of rounded
            rounded_text(Fraction(task.answer) + step, places),
            rounded_text(Fraction(task.answer) - step, places),
            rounded_text(value, places + 1),  # one place too many
            task.meta["number"],  # not rounded at all
        ]
        return wrong_answers(task.answer, candidates, lambda t: self.judge(task, t).passed)


class LargestNumber(AnswerDomain):
    """The largest of 3 (d=1) to 7 (d=10) close values written as fractions or decimals."""

    id = "num/largest-number-v1"
    axes = _EXACT
    instructions = (
        "Reply with the largest number only, copied exactly as it is written in the list "
        "(a fraction stays a fraction, a decimal stays a decimal), and nothing else."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        count = 3 + (difficulty - 1) // 2
        top = 4 + 2 * difficulty  # denominators; larger ones make the values closer
        items: list[str] = []
        values: list[Fraction] = []
        while len(items) < count:
            if rng.random() < 0.5:
                p, q = rng.randint(1, 2 * top - 1), rng.randint(2, top)
                value, text = Fraction(p, q), f"{p}/{q}"
            else:
                places = rng.randint(1, 1 + difficulty // 4)
                value = Fraction(rng.randint(1, 2 * 10**places - 1), 10**places)
                text = decimal_text(value)
            if difficulty >= 7 and rng.random() < 0.3:
                value, text = -value, "-" + text
            if value not in values and text not in items:
                items.append(text)
                values.append(value)
        best = items[values.index(max(values))]
        return Problem(
            "Which number is the largest: " + ", ".join(items) + "?",
            best,
            {"items": items},
            measure=count,
        )

    def judge(self, task: Task, text: str) -> Verdict:
        right = exact_match(text, task.answer)
        listed = text.strip() in task.meta["items"]
        components = {"format": float(listed), "correct": float(right)}
        why = "that is not the largest" if listed else "the text is not one of the listed numbers"
        return verdict(right, "the largest number as written", components=components, why=why)

    def wrong(self, task: Task) -> list[str]:
        items: list[str] = task.meta["items"]
        ranked = sorted(items, key=Fraction)
        largest = ranked[-1]
        value = Fraction(largest)
        other_form = decimal_text(value) if "/" in largest and _terminates(value) else None
        negated = largest[1:] if largest.startswith("-") else "-" + largest
        candidates = [ranked[0], ranked[-2], f"{largest}, {ranked[-2]}", negated]
        if other_form is not None:
            candidates.insert(0, other_form)
        return wrong_answers(task.answer, candidates, lambda t: self.judge(task, t).passed)


def _terminates(value: Fraction) -> bool:
    q = value.denominator
    for p in (2, 5):
        while q % p == 0:
            q //= p
    return q == 1


DOMAINS: tuple[AnswerDomain, ...] = (
    SimplifyFraction(),
    FractionArithmetic(),
    RoundDecimal(),
    LargestNumber(),
)
