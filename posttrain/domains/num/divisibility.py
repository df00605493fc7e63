"""`num/*` divisibility: greatest common divisor, least common multiple, prime factorization.

    from posttrain.domains.num.divisibility import DOMAINS
    task = DOMAINS[2].generate(seed=0, difficulty=4)  # "Write the prime factorization of ..."

`num/gcd-v1` and `num/lcm-v1` answer one integer (exact); the numbers are built from a
shared factor so the answer is rarely 1. `num/factorize-v1` accepts any product of
primes equal to the number ("math": equivalent forms pass): factors in any order,
a repeated prime written as `p^k` or repeated, joined by `*`; a composite factor fails.

Difficulty grows the digits of the numbers (`measure`: digits of the shared factor plus
the multipliers, times the count) or the count of prime factors (`measure`).

Not guaranteed: the factorization's primes are at most 199, so trial division is never
the hard part; difficulty there is the number of factors and the size of the product.
"""

from __future__ import annotations

import math
import random
import re
from collections import Counter

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.num.numerals import judge_integer, number_with_digits, wrong_answers
from posttrain.types import Task, Verdict
from posttrain.verify.answers import strict_integer

_INTEGER_ONLY = "Reply with the integer only: digits, no spaces, commas or other text."


def _smallest_prime_factor(n: int) -> int:
    p = 2
    while p * p <= n:
        if n % p == 0:
            return p
        p += 1
    return n


def _integer_wrongs(answer: int, extra: list[int]) -> list[str]:
    candidates = [str(v) for v in [*extra, answer + 1, answer - 1, answer * 2]]
    return wrong_answers(str(answer), candidates, lambda t: strict_integer(t) == answer)


def _coprime_multipliers(rng: random.Random, digits: int, count: int) -> list[int]:
    """`count` distinct multipliers ≥ 2 with no common factor among them all."""
    while True:
        low = 2 if digits == 1 else 10 ** (digits - 1)
        values = [rng.randint(low, 10**digits - 1) for _ in range(count)]
        if len(set(values)) == count and math.gcd(*values) == 1:
            return values


class GreatestCommonDivisor(AnswerDomain):
    """gcd(a, b) with a = g·x and b = g·y for coprime x, y."""

    id = "num/gcd-v1"
    axes = Axes("text", "none", "single", "exact")
    instructions = _INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        factor_digits, multiplier_digits = 1 + (difficulty - 1) // 3, 1 + difficulty // 3
        g = number_with_digits(rng, factor_digits) if factor_digits > 1 else rng.randint(2, 9)
        x, y = _coprime_multipliers(rng, multiplier_digits, 2)
        a, b = g * x, g * y
        return Problem(
            f"What is the greatest common divisor of {a} and {b}?",
            str(math.gcd(a, b)),
            {"numbers": [a, b]},
            measure=2 * (factor_digits + multiplier_digits),
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(int(task.answer), text, "the greatest common divisor")

    def wrong(self, task: Task) -> list[str]:
        g = int(task.answer)
        # A common divisor that is not the greatest, the smaller number, and "coprime".
        return _integer_wrongs(g, [g // _smallest_prime_factor(g), min(task.meta["numbers"]), 1])


class LeastCommonMultiple(AnswerDomain):
    """lcm of two numbers (three from d=6) that share factors, so the product is wrong."""

    id = "num/lcm-v1"
    axes = Axes("text", "none", "single", "exact")
    instructions = _INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        count = 2 if difficulty <= 5 else 3
        factor_digits, multiplier_digits = 1 + (difficulty - 1) // 4, 1 + (difficulty - 1) // 3
        g = number_with_digits(rng, factor_digits) if factor_digits > 1 else rng.randint(2, 9)
        numbers = [g * m for m in _coprime_multipliers(rng, multiplier_digits, count)]
        listed = ", ".join(str(n) for n in numbers[:-1]) + f" and {numbers[-1]}"
        return Problem(
            f"What is the least common multiple of {listed}?",
            str(math.lcm(*numbers)),
            {"numbers": numbers},
            measure=count * (factor_digits + multiplier_digits),
        )

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(int(task.answer), text, "the least common multiple")

    def wrong(self, task: Task) -> list[str]:
        numbers = task.meta["numbers"]
        # The product is the classic mistake; the gcd is the other function.
        return _integer_wrongs(int(task.answer), [math.prod(numbers), math.gcd(*numbers)])


_PRIMES = [p for p in range(2, 200) if _smallest_prime_factor(p) == p]
_PRIME_BOUND = [10, 10, 20, 30, 50, 50, 100, 100, 200, 200]
_FACTOR_TERM = r"[0-9]{1,20}(?:\^[0-9]{1,3})?"
_FACTORIZATION = re.compile(rf"{_FACTOR_TERM}(?:\s*\*\s*{_FACTOR_TERM})*")


def _factor_counts(text: str) -> Counter[int] | None:
    """The multiset base → total exponent of a `p^k * q * ...` text, or None if malformed."""
    stripped = text.strip() if len(text) < 400 else ""
    if not _FACTORIZATION.fullmatch(stripped):
        return None
    counts: Counter[int] = Counter()
    for term in stripped.split("*"):
        base, _, exponent = term.strip().partition("^")
        power = int(exponent) if exponent else 1
        if power < 1:
            return None
        counts[int(base)] += power
    return counts


def _factorization_text(counts: Counter[int]) -> str:
    return " * ".join(f"{p}^{k}" if k > 1 else str(p) for p, k in sorted(counts.items()))


class PrimeFactorization(AnswerDomain):
    """Factor a product of 2 (d=1) to 6 (d=10) primes below 10 (d=1) to 200 (d=10)."""

    id = "num/factorize-v1"
    axes = Axes("text", "none", "single", "math")
    instructions = (
        "Reply with the prime factors joined by ' * ', in any order; a repeated prime may be "
        "written as p^k (like 2^3) or repeated (2 * 2 * 2). Example: 2^3 * 3 * 5. Nothing else."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        k = 2 + (difficulty - 1) // 2
        pool = [p for p in _PRIMES if p < _PRIME_BOUND[difficulty - 1]]
        factors = [rng.choice(pool) for _ in range(k)]
        n = math.prod(factors)
        return Problem(
            f"Write the prime factorization of {n}.",
            _factorization_text(Counter(factors)),
            {"n": n, "factors": sorted(factors)},
            measure=k,
        )

    def judge(self, task: Task, text: str) -> Verdict:
        want = "a product of primes equal to the number"
        counts = _factor_counts(text)
        if counts is None:
            components = {"format": 0.0, "correct": 0.0}
            return verdict(
                False, want, components=components, why="the text is not 'p^k * q * ...'"
            )
        right = counts == Counter(task.meta["factors"])
        product = math.prod(p**k for p, k in counts.items()) if sum(counts.values()) < 200 else 0
        why = "not all factors are prime" if product == task.meta["n"] else "the product differs"
        return verdict(right, want, components={"format": 1.0, "correct": float(right)}, why=why)

    def wrong(self, task: Task) -> list[str]:
        factors: list[int] = task.meta["factors"]
        counts = Counter(factors)
        first = factors[0]
        merged = Counter(factors[2:]) + Counter({factors[0] * factors[1]: 1})
        candidates = [
            _factorization_text(Counter(factors[:-1])),  # a factor left out
            _factorization_text(counts + Counter({first: 1})),  # an exponent one too high
            " * ".join(f"{p}^{k}" if k > 1 else str(p) for p, k in sorted(merged.items())),
            str(task.meta["n"]),
        ]
        return wrong_answers(task.answer, candidates, lambda t: self.judge(task, t).passed)


DOMAINS: tuple[AnswerDomain, ...] = (
    GreatestCommonDivisor(),
    LeastCommonMultiple(),
    PrimeFactorization(),
)
