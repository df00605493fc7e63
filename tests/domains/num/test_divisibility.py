"""`num/divisibility.py`: gcd, lcm and prime factorizations in any equivalent form."""

from __future__ import annotations

import math

from posttrain.domains.num.divisibility import (
    GreatestCommonDivisor,
    LeastCommonMultiple,
    PrimeFactorization,
)
from posttrain.types import Task


def test_gcd_answer_is_the_gcd_and_rarely_trivial() -> None:
    domain = GreatestCommonDivisor()
    tasks = [domain.generate(s, d) for s in range(10) for d in (1, 5, 10)]
    assert all(int(t.answer) == math.gcd(*t.meta["numbers"]) > 1 for t in tasks)


def test_lcm_is_never_the_plain_product() -> None:
    domain = LeastCommonMultiple()
    for seed in range(10):
        task = domain.generate(seed, 7)
        assert int(task.answer) < math.prod(task.meta["numbers"])
        assert not domain.judge(task, str(math.prod(task.meta["numbers"]))).passed


def _task_with_repeats(domain: PrimeFactorization) -> tuple[Task, list[int]]:
    for seed in range(200):
        task = domain.generate(seed, 6)
        factors = task.meta["factors"]
        if len(set(factors)) < len(factors):
            return task, factors
    raise AssertionError("no task with a repeated prime")


def test_factorization_accepts_any_order_and_repeated_or_powered_primes() -> None:
    domain = PrimeFactorization()
    task, factors = _task_with_repeats(domain)
    assert domain.judge(task, task.answer).passed
    assert domain.judge(task, " * ".join(str(p) for p in reversed(factors))).passed
    assert domain.judge(task, "*".join(str(p) for p in factors)).passed


def test_factorization_refuses_a_composite_factor_with_the_right_product() -> None:
    domain = PrimeFactorization()
    task = domain.generate(2, 5)
    factors = task.meta["factors"]
    merged = [factors[0] * factors[1], *factors[2:]]
    verdict = domain.judge(task, " * ".join(map(str, merged)))
    assert not verdict.passed and "prime" in verdict.reason


def test_factorization_refuses_a_missing_factor_and_other_notations() -> None:
    domain = PrimeFactorization()
    task, factors = _task_with_repeats(domain)
    assert not domain.judge(task, " * ".join(map(str, factors[:-1]))).passed
    assert not domain.judge(task, " x ".join(map(str, factors))).passed
    assert not domain.judge(task, task.answer.replace("^", "**")).passed
