"""Completion rates with confidence intervals, and paired tests between two policies.

The one place posttrain turns pass/fail counts into numbers people compare:

    >>> r = rate(250, 400)
    >>> print(r)
    0.625 [0.577, 0.671] n=400
    >>> cmp = paired_compare([True, True, False, False], [True, True, True, True])
    >>> cmp.only_b, round(cmp.p_value, 3)
    (2, 0.5)

`wilson_interval` is the Wilson score interval (sound at small n and at rates
near 0 or 1, unlike the normal approximation). `mcnemar_exact` is the exact
two-sided McNemar test: a binomial test with p = 1/2 on the discordant pairs,
computed in exact integer arithmetic so it stays correct for tens of thousands
of pairs.

Not guaranteed: these statistics assume independent tasks. Several samples of
the same task, or tasks generated from correlated seeds, make the intervals too
narrow and the p-values too small. No correction for multiple comparisons is
applied; comparing many checkpoints or domains needs one on top.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Sequence
from dataclasses import dataclass

Z_95 = 1.959963984540054  # two-sided 95% normal quantile


def wilson_interval(successes: int, n: int, z: float = Z_95) -> tuple[float, float]:
    """Wilson score interval for a binomial rate `successes / n`.

    Returns `(low, high)`, both in [0, 1]; with no trials the rate is unknown and
    the interval is the whole of [0, 1].

    >>> low, high = wilson_interval(8, 10)
    >>> round(low, 4), round(high, 4)
    (0.4902, 0.9433)
    >>> wilson_interval(0, 0)
    (0.0, 1.0)
    >>> wilson_interval(11, 10)
    Traceback (most recent call last):
    ...
    ValueError: successes must be in [0, n=10], got 11
    """
    successes, n = _check_counts(successes, n)
    if z <= 0 or not math.isfinite(z):
        raise ValueError(f"z must be a positive finite number, got {z}")
    if n == 0:
        return (0.0, 1.0)
    p = successes / n
    z2 = z * z
    denom = 1.0 + z2 / n
    center = (p + z2 / (2 * n)) / denom
    half = (z / denom) * math.sqrt(p * (1.0 - p) / n + z2 / (4 * n * n))
    # At k = 0 or k = n the exact bound is 0 or 1; rounding must not move it.
    low = 0.0 if successes == 0 else max(0.0, center - half)
    high = 1.0 if successes == n else min(1.0, center + half)
    return (low, high)


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value for `b` and `c` discordant pairs.

    Under the null each discordant pair goes either way with probability 1/2, so
    the p-value is `min(1, 2 * P[X <= min(b, c)])` with `X ~ Binomial(b + c, 1/2)`.
    The tail is summed in exact integers and divided once, so large counts lose
    nothing to cancellation (a p-value below ~1e-308 reads as 0.0).

    >>> round(mcnemar_exact(10, 2), 5)
    0.03857
    >>> mcnemar_exact(0, 5)
    0.0625
    >>> mcnemar_exact(0, 0)
    1.0
    """
    b = _as_count("b", b)
    c = _as_count("c", c)
    n = b + c
    if n == 0:
        return 1.0
    k = min(b, c)
    tail = 0  # sum of C(n, i) for i = 0..k
    term = 1
    for i in range(k + 1):
        tail += term
        term = term * (n - i) // (i + 1)
    # 2 * tail / 2**n, as one correctly rounded int division.
    return min(1.0, tail / (1 << (n - 1)))


@dataclass
class Rate:
    """A completion rate with its Wilson 95% interval.

    With `n == 0` the rate reads 0.0 and the interval is [0, 1]: nothing is known.
    """

    successes: int
    n: int
    rate: float
    low: float
    high: float

    def __str__(self) -> str:
        return f"{self.rate:.3f} [{self.low:.3f}, {self.high:.3f}] n={self.n}"


def rate(successes: int, n: int) -> Rate:
    """The rate `successes / n` with its Wilson 95% interval.

    >>> r = rate(8, 10)
    >>> r.rate, round(r.low, 4), round(r.high, 4)
    (0.8, 0.4902, 0.9433)
    >>> print(r)
    0.800 [0.490, 0.943] n=10
    >>> str(rate(0, 0))
    '0.000 [0.000, 1.000] n=0'
    """
    successes, n = _check_counts(successes, n)
    low, high = wilson_interval(successes, n)
    return Rate(successes=successes, n=n, rate=successes / n if n else 0.0, low=low, high=high)


@dataclass
class PairedComparison:
    """Policy A against policy B on the same `n` tasks.

    `only_a` counts tasks A passed and B failed, `only_b` the reverse; `p_value`
    is the exact McNemar test on those two counts.
    """

    n: int
    a_rate: float
    b_rate: float
    only_a: int
    only_b: int
    p_value: float

    @property
    def diff(self) -> float:
        """`b_rate - a_rate`: positive when B passes more tasks."""
        return self.b_rate - self.a_rate


def paired_compare(a: Sequence[bool], b: Sequence[bool]) -> PairedComparison:
    """Compare pass/fail outcomes of two policies on the same tasks, in the same order.

    >>> cmp = paired_compare([True, False, True, False], [True, True, True, False])
    >>> cmp.a_rate, cmp.b_rate, cmp.only_a, cmp.only_b, cmp.diff
    (0.5, 0.75, 0, 1, 0.25)
    >>> cmp.p_value
    1.0
    >>> paired_compare([True], [True, False])
    Traceback (most recent call last):
    ...
    ValueError: paired_compare needs outcomes for the same tasks: len(a)=1, len(b)=2
    """
    if len(a) != len(b):
        raise ValueError(
            f"paired_compare needs outcomes for the same tasks: len(a)={len(a)}, len(b)={len(b)}"
        )
    if len(a) == 0:  # not `if not a`: a numpy array has no truth value
        raise ValueError("paired_compare needs at least one task, got empty outcome lists")
    n = len(a)
    only_a = sum(1 for x, y in zip(a, b, strict=True) if x and not y)
    only_b = sum(1 for x, y in zip(a, b, strict=True) if y and not x)
    return PairedComparison(
        n=n,
        a_rate=sum(1 for x in a if x) / n,
        b_rate=sum(1 for y in b if y) / n,
        only_a=only_a,
        only_b=only_b,
        p_value=mcnemar_exact(only_a, only_b),
    )


def paired_difference_interval(
    both: int, only_a: int, only_b: int, neither: int, z: float = Z_95
) -> tuple[float, float]:
    """95% interval of `rate_b - rate_a` for paired outcomes: Newcombe's hybrid score
    method for paired proportions (method 10 of Newcombe 1998), built from the Wilson
    intervals of both rates and their phi correlation; sound at small n and near 0 or 1.

    phi gets Newcombe's continuity correction (`ad - bc` reduced by n/2 when positive).

    >>> low, high = paired_difference_interval(36, 2, 12, 0)
    >>> round(low, 4), round(high, 4)
    (0.0569, 0.3404)
    >>> paired_difference_interval(0, 0, 0, 0)
    (-1.0, 1.0)
    """
    counts = [_as_count(k, v) for k, v in
              (("both", both), ("only_a", only_a), ("only_b", only_b), ("neither", neither))]  # fmt: skip
    both, only_a, only_b, neither = counts
    n = both + only_a + only_b + neither
    if n == 0:
        return (-1.0, 1.0)
    pa, pb = (both + only_a) / n, (both + only_b) / n
    la, ua = wilson_interval(both + only_a, n, z)
    lb, ub = wilson_interval(both + only_b, n, z)
    margins = (both + only_a) * (only_b + neither) * (both + only_b) * (only_a + neither)
    raw = both * neither - only_a * only_b
    cross = raw - n / 2 if raw > n / 2 else float(min(raw, 0))
    phi = cross / math.sqrt(margins) if margins else 0.0
    delta = pb - pa
    low = delta - math.sqrt(
        max(0.0, (pb - lb) ** 2 - 2 * phi * (pb - lb) * (ua - pa) + (ua - pa) ** 2)
    )
    high = delta + math.sqrt(
        max(0.0, (ub - pb) ** 2 - 2 * phi * (ub - pb) * (pa - la) + (pa - la) ** 2)
    )
    return (max(-1.0, low), min(1.0, high))


def pass_at_k(samples: int, passed: int, k: int) -> float:
    """Unbiased pass@k from `passed` of `samples` draws of one task (Chen et al. 2021):
    the chance that at least one of `k` draws without replacement passes.

    >>> pass_at_k(10, 0, 5), pass_at_k(10, 10, 1), round(pass_at_k(10, 3, 5), 4)
    (0.0, 1.0, 0.9167)
    >>> pass_at_k(4, 1, 5)
    Traceback (most recent call last):
    ...
    ValueError: k must be in [1, samples=4], got 5
    """
    samples = _as_count("samples", samples)
    passed = _check_range("passed", passed, 0, samples, "samples")
    k = _check_range("k", k, 1, samples, "samples")
    if samples - passed < k:
        return 1.0
    miss = 1.0
    for i in range(samples - passed + 1, samples + 1):
        miss *= 1.0 - k / i
    return 1.0 - miss


def _as_count(name: str, value: int) -> int:
    """`value` as a plain int (numpy integers accepted), or ValueError naming it."""
    try:
        count = operator.index(value)
    except TypeError:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}") from None
    if count < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")
    return count


def _check_counts(successes: int, n: int) -> tuple[int, int]:
    n = _as_count("n", n)
    return _check_range("successes", successes, 0, n, "n"), n


def _check_range(name: str, value: int, low: int, high: int, high_name: str) -> int:
    """`value` as a plain int in [low, high], or ValueError naming it and the bound,
    e.g. "k must be in [1, samples=5], got 0"."""
    try:
        count = operator.index(value)
    except TypeError:  # not an integer (2.5, "3"): refused with the same message
        count = low - 1
    if not low <= count <= high:
        raise ValueError(f"{name} must be in [{low}, {high_name}={high}], got {value!r}")
    return count
