"""`list_ops/sequences.py`: running sum, inversions, longest increasing subsequence,
maximum subarray."""

from __future__ import annotations

import itertools
import random

from posttrain.domains.list_ops.sequences import (
    RunningSum,
    _inversions,
    _lis_length,
    _max_subarray,
)


def test_running_sum_refuses_exclusive_prefix_sums() -> None:
    domain = RunningSum()
    task = domain.generate(0, 1)
    task.meta["values"] = [2, 3, 4]
    assert domain.judge(task, "2,5,9").passed and not domain.judge(task, "0,2,5").passed


def test_inversions_skip_equal_values() -> None:
    assert _inversions([3, 1, 3, 2]) == 3


def test_lis_matches_brute_force() -> None:
    rng = random.Random(0)
    for _ in range(200):
        values = [rng.randint(0, 6) for _ in range(rng.randint(1, 8))]
        best = max(
            len(sub)
            for r in range(1, len(values) + 1)
            for sub in itertools.combinations(values, r)
            if all(a < b for a, b in itertools.pairwise(sub))
        )
        assert _lis_length(values) == best, values


def test_max_subarray_matches_brute_force() -> None:
    rng = random.Random(1)
    for _ in range(200):
        values = [rng.randint(-9, 9) for _ in range(rng.randint(1, 9))]
        best = max(sum(values[i:j]) for i in range(len(values)) for j in range(i + 1, len(values) + 1))  # fmt: skip
        assert _max_subarray(values) == best, values
