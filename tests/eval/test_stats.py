"""Rates, Wilson intervals and the exact McNemar test, against hand-computed values."""

from __future__ import annotations

import doctest
import math

import numpy as np
import pytest

from posttrain.eval import stats
from posttrain.eval.stats import (
    PairedComparison,
    Rate,
    mcnemar_exact,
    paired_compare,
    pass_at_k,
    rate,
    wilson_interval,
)


def test_wilson_interval_matches_hand_computed_8_of_10() -> None:
    low, high = wilson_interval(8, 10)
    assert low == pytest.approx(0.4902, abs=1e-4)
    assert high == pytest.approx(0.9433, abs=1e-4)


def test_wilson_interval_at_zero_successes_starts_at_zero() -> None:
    low, high = wilson_interval(0, 10)
    assert low == 0.0
    assert high == pytest.approx(0.2775, abs=1e-4)


def test_wilson_interval_at_all_successes_ends_at_one() -> None:
    low, high = wilson_interval(10, 10)
    assert low == pytest.approx(0.7225, abs=1e-4)
    assert high == 1.0


def test_wilson_interval_with_no_trials_is_whole_unit_interval() -> None:
    assert wilson_interval(0, 0) == (0.0, 1.0)


def test_wilson_interval_narrows_with_more_trials() -> None:
    small = wilson_interval(5, 10)
    large = wilson_interval(500, 1000)
    assert large[1] - large[0] < small[1] - small[0]


@pytest.mark.parametrize(("k", "n", "bad"), [(-1, 10, "-1"), (11, 10, "11"), (0, -3, "-3")])
def test_wilson_interval_rejects_bad_counts_naming_the_value(k: int, n: int, bad: str) -> None:
    with pytest.raises(ValueError, match=bad):
        wilson_interval(k, n)


def test_wilson_interval_accepts_numpy_integers() -> None:
    outcomes = np.array([True] * 8 + [False] * 2)
    assert wilson_interval(outcomes.sum(), outcomes.size) == wilson_interval(8, 10)


def test_mcnemar_exact_matches_hand_computed_10_vs_2() -> None:
    # 2 * (C(12,0) + C(12,1) + C(12,2)) / 2**12 = 2 * 79 / 4096
    assert mcnemar_exact(10, 2) == pytest.approx(79 / 2048, rel=1e-12)
    assert mcnemar_exact(10, 2) == pytest.approx(0.03857, abs=1e-5)


def test_mcnemar_exact_all_discordant_one_way() -> None:
    assert mcnemar_exact(0, 5) == 0.0625
    assert mcnemar_exact(3, 0) == 0.25


def test_mcnemar_exact_is_symmetric() -> None:
    assert mcnemar_exact(2, 10) == mcnemar_exact(10, 2)


def test_mcnemar_exact_without_discordant_pairs_is_one() -> None:
    assert mcnemar_exact(0, 0) == 1.0


def test_mcnemar_exact_is_capped_at_one() -> None:
    assert mcnemar_exact(1, 0) == 1.0
    assert mcnemar_exact(5000, 5000) == 1.0


def test_mcnemar_exact_stays_exact_for_ten_thousand_pairs() -> None:
    b, c = 4000, 6000
    n = b + c
    # Independent check in log space: log C(n, i) via lgamma, log-sum-exp over the tail.
    logs = [
        math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) - n * math.log(2)
        for i in range(min(b, c) + 1)
    ]
    top = max(logs)
    expected = 2 * math.exp(top) * sum(math.exp(v - top) for v in logs)
    got = mcnemar_exact(b, c)
    assert 0.0 < got < 1e-80
    assert got == pytest.approx(expected, rel=1e-9)


def test_mcnemar_exact_rejects_negative_counts() -> None:
    with pytest.raises(ValueError, match="-2"):
        mcnemar_exact(-2, 3)


def test_rate_holds_counts_and_interval() -> None:
    r = rate(8, 10)
    assert isinstance(r, Rate)
    assert (r.successes, r.n, r.rate) == (8, 10, 0.8)
    assert (r.low, r.high) == wilson_interval(8, 10)


def test_rate_str_shows_rate_interval_and_n() -> None:
    assert str(rate(250, 400)) == "0.625 [0.577, 0.671] n=400"


def test_rate_of_nothing_is_zero_with_whole_interval() -> None:
    assert str(rate(0, 0)) == "0.000 [0.000, 1.000] n=0"


def test_paired_compare_counts_discordant_tasks() -> None:
    a = [True, True, False, False, True]
    b = [True, False, True, True, False]
    cmp = paired_compare(a, b)
    assert cmp == PairedComparison(
        n=5, a_rate=0.6, b_rate=0.6, only_a=2, only_b=2, p_value=mcnemar_exact(2, 2)
    )


def test_paired_compare_diff_is_b_minus_a() -> None:
    cmp = paired_compare([False] * 10 + [True] * 2, [True] * 12)
    assert cmp.diff == pytest.approx(10 / 12)
    assert (cmp.only_a, cmp.only_b) == (0, 10)
    assert cmp.p_value == pytest.approx(2 / 1024)


def test_paired_compare_rejects_different_lengths() -> None:
    with pytest.raises(ValueError, match=r"len\(a\)=2, len\(b\)=3"):
        paired_compare([True, False], [True, False, True])


def test_paired_compare_rejects_empty_outcomes() -> None:
    with pytest.raises(ValueError, match="at least one task"):
        paired_compare([], [])


def test_paired_compare_accepts_numpy_arrays() -> None:
    cmp = paired_compare(np.array([True, False, True]), np.array([True, True, True]))
    assert (cmp.n, cmp.only_a, cmp.only_b) == (3, 0, 1)


def test_paired_compare_rejects_empty_numpy_arrays() -> None:
    with pytest.raises(ValueError, match="at least one task"):
        paired_compare(np.array([], dtype=bool), np.array([], dtype=bool))


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((5, 6, 2), r"passed must be in \[0, samples=5\], got 6"),
        ((5, -1, 2), r"passed must be in \[0, samples=5\], got -1"),
        ((5, 2, 0), r"k must be in \[1, samples=5\], got 0"),
        ((5, 2, 6), r"k must be in \[1, samples=5\], got 6"),
        ((5, 2, 2.5), r"k must be in \[1, samples=5\], got 2.5"),
        ((-1, 0, 1), r"samples must be a non-negative integer, got -1"),
    ],
)
def test_pass_at_k_names_the_bad_argument(args: tuple, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        pass_at_k(*args)


def test_stats_doctests_pass() -> None:
    result = doctest.testmod(stats)
    assert result.attempted > 0
    assert result.failed == 0
