"""`list/*` scans over a sequence: running sums, inversions, longest increasing
subsequence, maximum subarray sum.

    from posttrain.domains.list_ops.sequences import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=3)

`list/running-sum-v1` answers an integer list, the others one integer; all are exact.
Difficulty grows the list's length (`measure`); from d=4 values may be negative
(always, for the maximum subarray, where negatives are the point).

Not guaranteed: the inversion and subsequence counts are brute-force-checkable only for
the short lists used here (at most 32 values); no partial credit.
"""

from __future__ import annotations

import bisect
import random
from itertools import accumulate

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.domains.list_ops.formats import (
    INT_LIST_ONLY,
    INTEGER_ONLY,
    distinct_wrongs,
    joined,
    judge_int_list,
    judge_integer,
)
from posttrain.types import Task, Verdict
from posttrain.verify.answers import strict_integer

_EXACT = Axes("text", "none", "single", "exact")


def _integer_wrongs(answer: int, extra: list[int]) -> list[str]:
    texts = [str(v) for v in [*extra, answer + 1, answer - 1, answer + 2]]
    return distinct_wrongs(str(answer), texts, lambda t: strict_integer(t) == answer)


class RunningSum(AnswerDomain):
    """Prefix sums: element i of the answer is the sum of the first i+1 inputs."""

    id = "list/running-sum-v1"
    axes = _EXACT
    instructions = INT_LIST_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 4 + 2 * (difficulty - 1)
        low = -9 * difficulty if difficulty >= 4 else 1
        values = [rng.randint(low, 9 * difficulty) for _ in range(n)]
        if values[1:] == [0] * (n - 1):
            values[1] = 1
        prompt = (
            "Give the running sum of this list: element i of the result is the sum of "
            f"elements 1 through i of the list.\n{joined(values)}"
        )
        answer = list(accumulate(values))
        return Problem(prompt, joined(answer), {"values": values}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_int_list(list(accumulate(task.meta["values"])), text, "the running sums")

    def wrong(self, task: Task) -> list[str]:
        values: list[int] = task.meta["values"]
        answer = list(accumulate(values))
        exclusive = [0, *answer[:-1]]  # sums of the elements before i, not through i
        changed = answer[:-1] + [answer[-1] + 1]
        mistakes = [answer[:-1], exclusive, changed, values, [answer[-1]]]
        right = joined(answer)
        return distinct_wrongs(right, [joined(v) for v in mistakes], lambda t: t == right)


def _inversions(values: list[int]) -> int:
    n = len(values)
    return sum(1 for i in range(n) for j in range(i + 1, n) if values[i] > values[j])


class Inversions(AnswerDomain):
    """Count the pairs of positions i < j whose values are out of order (a[i] > a[j])."""

    id = "list/inversions-v1"
    axes = _EXACT
    instructions = INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 4 + 2 * (difficulty - 1)  # 4..22
        values = [rng.randint(-9 if difficulty >= 4 else 0, 5 + 2 * n) for _ in range(n)]
        prompt = (
            "Count the inversions in this list: pairs of positions i < j where the value at "
            f"i is strictly greater than the value at j.\n{joined(values)}"
        )
        return Problem(prompt, str(_inversions(values)), {"values": values}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(_inversions(task.meta["values"]), text, "the number of inversions")

    def wrong(self, task: Task) -> list[str]:
        values: list[int] = task.meta["values"]
        n = len(values)
        answer = _inversions(values)
        ties = sum(1 for i in range(n) for j in range(i + 1, n) if values[i] == values[j])
        # Ties counted as inversions, and the ordered pairs counted instead.
        return _integer_wrongs(answer, [answer + ties, n * (n - 1) // 2 - answer - ties])


def _lis_length(values: list[int]) -> int:
    tails: list[int] = []
    for v in values:
        i = bisect.bisect_left(tails, v)
        tails[i : i + 1] = [v]
    return len(tails)


def _longest_run(values: list[int]) -> int:
    best = run = 1
    for a, b in zip(values, values[1:], strict=False):
        run = run + 1 if b > a else 1
        best = max(best, run)
    return best


class LongestIncreasing(AnswerDomain):
    """The length of the longest strictly increasing subsequence (not necessarily contiguous)."""

    id = "list/lis-length-v1"
    axes = _EXACT
    instructions = INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 5 + 3 * (difficulty - 1)
        values = [rng.randint(-9 if difficulty >= 4 else 0, 3 * n) for _ in range(n)]
        prompt = (
            "What is the length of the longest strictly increasing subsequence of this list? "
            "A subsequence keeps the list's order but may skip elements.\n" + joined(values)
        )
        return Problem(prompt, str(_lis_length(values)), {"values": values}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        answer = _lis_length(task.meta["values"])
        return judge_integer(answer, text, "the longest increasing subsequence's length")

    def wrong(self, task: Task) -> list[str]:
        values: list[int] = task.meta["values"]
        answer = _lis_length(values)
        return _integer_wrongs(answer, [_longest_run(values), len(set(values))])


def _max_subarray(values: list[int]) -> int:
    best = current = values[0]
    for v in values[1:]:
        current = max(v, current + v)
        best = max(best, current)
    return best


class MaxSubarray(AnswerDomain):
    """The largest sum of a non-empty run of consecutive elements (Kadane's problem)."""

    id = "list/max-subarray-v1"
    axes = _EXACT
    instructions = INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 5 + 3 * (difficulty - 1)
        values = [rng.randint(-20, 15) for _ in range(n)]
        if max(values) <= 0:
            values[rng.randrange(n)] = rng.randint(1, 15)
        prompt = (
            "What is the largest sum of a non-empty contiguous run of elements of this "
            f"list?\n{joined(values)}"
        )
        return Problem(prompt, str(_max_subarray(values)), {"values": values}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        answer = _max_subarray(task.meta["values"])
        return judge_integer(answer, text, "the maximum contiguous sum")

    def wrong(self, task: Task) -> list[str]:
        values: list[int] = task.meta["values"]
        positives = sum(v for v in values if v > 0)  # skips elements: not contiguous
        return _integer_wrongs(_max_subarray(values), [positives, sum(values), max(values)])


DOMAINS: tuple[AnswerDomain, ...] = (RunningSum(), Inversions(), LongestIncreasing(), MaxSubarray())
