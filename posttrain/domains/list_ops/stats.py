"""`list/*` order statistics: second-largest distinct value, k-th smallest, mode, median.

    from posttrain.domains.list_ops.stats import DOMAINS
    task = DOMAINS[3].generate(seed=0, difficulty=3)

The answer is one number: an integer (verification: exact) or, for `list/median-v1`,
a decimal compared by value (verification: numeric; `3.5`, `3.50` and, for a whole
median, `4` or `4.0` are the same answer). Difficulty grows the list's length
(`measure`); from d=4 the values may be negative.

Not guaranteed: inputs are drawn so each task's trap is present (the maximum repeated
for the second-largest, ties for the mode at some seeds), but not at every seed.
"""

from __future__ import annotations

import random
from collections import Counter
from fractions import Fraction

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.domains.list_ops.formats import (
    INTEGER_ONLY,
    decimal_text,
    distinct_wrongs,
    joined,
    judge_integer,
    read_decimal,
)
from posttrain.types import Task, Verdict
from posttrain.verify.answers import strict_integer

_EXACT = Axes("text", "none", "single", "exact")
_NUMERIC = Axes("text", "none", "single", "numeric")


def list_length(difficulty: int) -> int:
    """5 values at d=1, growing by 3 per level to 32."""
    return 5 + 3 * (difficulty - 1)


def _values(rng: random.Random, difficulty: int, n: int, high: int) -> list[int]:
    low = -high if difficulty >= 4 else 0
    return [rng.randint(low, high) for _ in range(n)]


def _integer_wrongs(answer: int, extra: list[int]) -> list[str]:
    texts = [str(v) for v in [*extra, answer + 1, answer - 1, answer + 10]]
    return distinct_wrongs(str(answer), texts, lambda t: strict_integer(t) == answer)


def _second_largest(values: list[int]) -> int:
    return sorted(set(values))[-2]


class SecondLargest(AnswerDomain):
    """The second-largest distinct value; the maximum often appears more than once."""

    id = "list/second-largest-v1"
    axes = _EXACT
    instructions = INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = list_length(difficulty)
        values = _values(rng, difficulty, n, 10 + 5 * n)
        if len(set(values)) < 2:
            values[0] = values[1] + 1
        if rng.random() < 0.7:  # repeat the maximum: the trap is answering it again
            values[rng.randrange(n)] = max(values)
        prompt = (
            "What is the second-largest distinct value in this list? (If the largest value "
            f"appears more than once, it still counts once.)\n{joined(values)}"
        )
        answer = _second_largest(values)
        return Problem(prompt, str(answer), {"values": values}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        answer = _second_largest(task.meta["values"])
        return judge_integer(answer, text, "the second-largest distinct value")

    def wrong(self, task: Task) -> list[str]:
        values: list[int] = task.meta["values"]
        distinct = sorted(set(values))
        third = distinct[-3] if len(distinct) >= 3 else distinct[0] - 1
        return _integer_wrongs(distinct[-2], [distinct[-1], third, sorted(values)[1]])


class KthSmallest(AnswerDomain):
    """The value at 1-based position k of the list sorted ascending (repeats count)."""

    id = "list/kth-smallest-v1"
    axes = _EXACT
    instructions = INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = list_length(difficulty)
        values = _values(rng, difficulty, n, 10 + 3 * n)
        k = rng.randint(2, n - 1)
        prompt = (
            f"Sort this list in ascending order (repeated values keep every copy). Which "
            f"value is at position {k}, counting from 1?\n{joined(values)}"
        )
        answer = sorted(values)[k - 1]
        return Problem(prompt, str(answer), {"values": values, "k": k}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        values, k = task.meta["values"], task.meta["k"]
        return judge_integer(sorted(values)[k - 1], text, f"the {k}-th smallest value")

    def wrong(self, task: Task) -> list[str]:
        values, k = task.meta["values"], task.meta["k"]
        ordered = sorted(values)
        # Off by one position, counted from the top, or read from the unsorted list.
        mistakes = [ordered[k - 2], ordered[k], ordered[-k], values[k - 1]]
        return _integer_wrongs(ordered[k - 1], mistakes)


def _mode(values: list[int]) -> int:
    counts = Counter(values)
    best = max(counts.values())
    return min(v for v, c in counts.items() if c == best)


class Mode(AnswerDomain):
    """The most frequent value; among equally frequent values, the smallest."""

    id = "list/mode-v1"
    axes = _EXACT
    instructions = INTEGER_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = list_length(difficulty)
        values = _values(rng, difficulty, n, 3 + n // 2)
        if rng.random() < 0.5:  # force a tie at the top, so the tie rule matters
            counts = Counter(values)
            top = sorted(counts, key=lambda v: (-counts[v], v))
            if len(top) >= 2:
                values = [top[0] if v == top[1] else v for v in values]
                counts = Counter(values)
                top = sorted(counts, key=lambda v: (-counts[v], v))
                if len(top) >= 2 and counts[top[0]] > counts[top[1]]:
                    values[values.index(top[0])] = top[1]
        prompt = (
            "Which value appears most often in this list? If several values are tied for "
            f"most often, give the smallest of them.\n{joined(values)}"
        )
        return Problem(prompt, str(_mode(values)), {"values": values}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(_mode(task.meta["values"]), text, "the most frequent value")

    def wrong(self, task: Task) -> list[str]:
        values: list[int] = task.meta["values"]
        counts = Counter(values)
        by_count = sorted(counts, key=lambda v: (-counts[v], -v))  # ties broken the wrong way
        answer = _mode(values)
        return _integer_wrongs(answer, [by_count[0], counts[answer], values[0], max(values)])


def _median(values: list[int]) -> Fraction:
    ordered = sorted(values)
    n = len(ordered)
    if n % 2:
        return Fraction(ordered[n // 2])
    return Fraction(ordered[n // 2 - 1] + ordered[n // 2], 2)


class Median(AnswerDomain):
    """The median; for an even count, the mean of the two middle values (maybe `x.5`)."""

    id = "list/median-v1"
    axes = _NUMERIC
    instructions = (
        "Reply with the median as an integer or a decimal number (for example: 7 or -2.5), "
        "nothing else."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = list_length(difficulty) + rng.randint(0, 1)
        values = _values(rng, difficulty, n, 10 + 4 * n)
        prompt = (
            "What is the median of this list? (Sort it; with an even number of values, the "
            f"median is the mean of the two middle ones.)\n{joined(values)}"
        )
        answer = decimal_text(_median(values))
        return Problem(prompt, answer, {"values": values}, measure=list_length(difficulty))

    def judge(self, task: Task, text: str) -> Verdict:
        answer = _median(task.meta["values"])
        got = read_decimal(text)
        components = {"format": float(got is not None), "correct": float(got == answer)}
        what = "the median"
        if got is None:
            return verdict(False, what, components=components, why="the text is not one number")
        return verdict(got == answer, what, components=components, why=f"got {text.strip()}")

    def wrong(self, task: Task) -> list[str]:
        values: list[int] = task.meta["values"]
        answer = _median(values)
        ordered = sorted(values)
        mean = Fraction(sum(values), len(values))
        mistakes = [
            Fraction(values[len(values) // 2]),  # the middle of the unsorted list
            Fraction(ordered[len(values) // 2]),  # the upper middle alone
            mean.limit_denominator(1) if mean.denominator > 2 else mean,
            answer + 1,
            answer - 1,
            answer - Fraction(1, 2),
        ]
        texts = [decimal_text(v) for v in mistakes]
        right = decimal_text(answer)
        return distinct_wrongs(right, texts, lambda t: read_decimal(t) == answer)


DOMAINS: tuple[AnswerDomain, ...] = (SecondLargest(), KthSmallest(), Mode(), Median())
