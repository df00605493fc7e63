"""`list/*` tasks that rearrange a list: drop repeats, rotate, flatten a nested list.

    from posttrain.domains.list_ops.order import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=3)

Each answer is one integer list in a fixed order, written `4,-1,7` (verification:
exact). Difficulty grows the list's length (`measure`), and for `list/flatten-v1`
also the nesting depth.

Not guaranteed: the inputs are built so that the answer differs from the input (a list
to deduplicate has a repeat, a rotation moves something, a nested list nests), but a
model that echoes a correct prefix still scores 0: there is no partial credit here.
"""

from __future__ import annotations

import json
import random
from typing import Any

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.domains.list_ops.formats import (
    INT_LIST_ONLY,
    distinct_wrongs,
    joined,
    judge_int_list,
)
from posttrain.types import Task, Verdict

_EXACT = Axes("text", "none", "single", "exact")


def list_length(difficulty: int) -> int:
    """The input length at `difficulty`: 5 at d=1, growing by 3 per level to 32."""
    return 5 + 3 * (difficulty - 1)


def _changed(values: list[int], index: int) -> list[int]:
    out = list(values)
    out[index] += 1
    return out


def _list_wrongs(answer: list[int], extra: list[list[int]]) -> list[str]:
    """The domain's own mistakes, then generic ones: last element dropped, one value off,
    the first element repeated, two neighbours swapped."""
    swapped = list(answer)
    if len(swapped) >= 2:
        swapped[0], swapped[1] = swapped[1], swapped[0]
    generic = [answer[:-1], _changed(answer, len(answer) // 2), answer + answer[:1], swapped]
    right = joined(answer)
    return distinct_wrongs(right, [joined(v) for v in [*extra, *generic]], lambda t: t == right)


class Deduplicate(AnswerDomain):
    """Drop repeated values, keeping each value's first occurrence in order."""

    id = "list/dedupe-v1"
    axes = _EXACT
    instructions = INT_LIST_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = list_length(difficulty)
        values = [rng.randint(0, max(4, n * 2 // 3)) for _ in range(n)]
        if len(set(values)) == n:  # guarantee a repeat, so the answer is not the input
            values[rng.randrange(1, n)] = values[0]
        answer = list(dict.fromkeys(values))
        prompt = (
            f"Remove the repeated values from this list, keeping only the first occurrence "
            f"of each value and the original order:\n{joined(values)}"
        )
        return Problem(prompt, joined(answer), {"values": values}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_int_list(list(dict.fromkeys(task.meta["values"])), text, "the list without repeats")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        values: list[int] = task.meta["values"]
        answer = list(dict.fromkeys(values))
        keep_last = list(reversed(dict.fromkeys(reversed(values))))
        return _list_wrongs(answer, [values, keep_last, sorted(answer)])


class Rotate(AnswerDomain):
    """Rotate a list of distinct values left or right by k places (k may exceed the length)."""

    id = "list/rotate-v1"
    axes = _EXACT
    instructions = INT_LIST_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = list_length(difficulty)
        values = rng.sample(range(-9 if difficulty >= 4 else 0, 10 + 4 * n), n)
        shift = rng.randint(1, n - 1)
        k = shift + n * rng.randint(1, 2) if difficulty >= 6 and rng.random() < 0.5 else shift
        direction = rng.choice(["left", "right"])
        answer = _rotated(values, k, direction)
        prompt = (
            f"Rotate this list {direction} by {k} positions. Rotating left by 1 moves the "
            f"first element to the end; rotating right by 1 moves the last element to the "
            f"front.\n{joined(values)}"
        )
        meta = {"values": values, "k": k, "direction": direction}
        return Problem(prompt, joined(answer), meta, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        m = task.meta
        return judge_int_list(_rotated(m["values"], m["k"], m["direction"]), text, "the rotated list")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        m = task.meta
        values, k, direction = m["values"], m["k"], m["direction"]
        other = "right" if direction == "left" else "left"
        answer = _rotated(values, k, direction)
        mistakes = [_rotated(values, k, other), _rotated(values, k + 1, direction), values]
        return _list_wrongs(answer, mistakes)


def _rotated(values: list[int], k: int, direction: str) -> list[int]:
    shift = k % len(values) if direction == "left" else -(k % len(values))
    return values[shift:] + values[:shift]


Nested = int | list["Nested"]


def _nested(rng: random.Random, leaves: list[int], depth: int) -> list[Nested]:
    """`leaves` in order, grouped into sublists nested at most `depth` levels below the top."""
    out: list[Nested] = []
    i = 0
    while i < len(leaves):
        if depth > 0 and rng.random() < 0.45 and len(leaves) - i >= 2:
            size = rng.randint(1, min(4, len(leaves) - i))
            out.append(_nested(rng, leaves[i : i + size], depth - 1))
            i += size
        else:
            out.append(leaves[i])
            i += 1
    return out


def _flattened(value: Any) -> list[int]:
    if isinstance(value, int):
        return [value]
    return [x for item in value for x in _flattened(item)]


class Flatten(AnswerDomain):
    """Flatten a nested list of integers (JSON) into one list, keeping left-to-right order."""

    id = "list/flatten-v1"
    axes = _EXACT
    instructions = INT_LIST_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 4 + 2 * difficulty
        depth = 1 + difficulty // 3  # 1..4 levels below the top
        leaves = [rng.randint(-20 if difficulty >= 5 else 0, 99) for _ in range(n)]
        nested = _nested(rng, leaves, depth)
        if all(isinstance(x, int) for x in nested):  # nothing nested: wrap a pair
            nested = [nested[0], [nested[1], [nested[2]]], *nested[3:]]
        shown = json.dumps(nested, separators=(", ", ": "))
        prompt = (
            "Flatten this nested list into a single list of its integers, in the order "
            f"they appear from left to right:\n{shown}"
        )
        return Problem(prompt, joined(leaves), {"nested": nested}, measure=n + depth)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_int_list(_flattened(task.meta["nested"]), text, "the flattened list")

    def wrong(self, task: Task) -> list[str]:
        nested = task.meta["nested"]
        answer = _flattened(nested)
        top_level = [x for x in nested if isinstance(x, int)]
        return _list_wrongs(answer, [top_level, answer[::-1]])


DOMAINS: tuple[AnswerDomain, ...] = (Deduplicate(), Rotate(), Flatten())
