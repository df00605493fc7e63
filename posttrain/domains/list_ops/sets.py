"""`list/*` tasks with set answers: set algebra, pairs summing to a target, missing numbers.

    from posttrain.domains.list_ops.sets import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=3)

Verification is set match: the items may come in any order, but each exactly once (a
repeated item scores 0). A well-formed, repeat-free answer with the wrong set earns
half its F1 against the gold set (still failed). Difficulty grows the sets' sizes and,
for `list/set-algebra-v1`, the expression: one operation on two sets up to d=3, then
two operations on three sets (`measure` counts the input elements).

Not guaranteed: every gold set is non-empty, so no task's answer is "none"; a pair in
`list/pair-sums-v1` may be written either way round (`3+7` or `7+3`).
"""

from __future__ import annotations

import random
import re
from typing import Any

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.domains.list_ops.formats import (
    INT_SET_ONLY,
    MAX_CHARS,
    distinct_wrongs,
    joined,
    judge_int_set,
    judge_items,
)
from posttrain.types import Task, Verdict

_SET_MATCH = Axes("text", "none", "single", "set_match")

_OPS = {
    "∩": ("intersection", lambda a, b: a & b),
    "∪": ("union", lambda a, b: a | b),
    "−": ("difference", lambda a, b: a - b),
    "△": ("symmetric difference", lambda a, b: a ^ b),
}
_SYMBOLS = list(_OPS)


def _apply(symbol: str, a: set[int], b: set[int]) -> set[int]:
    result: set[int] = _OPS[symbol][1](a, b)
    return result


def _evaluate(meta: dict[str, Any]) -> set[int]:
    sets = {name: set(values) for name, values in meta["sets"].items()}
    inner = _apply(str(meta["op1"]), sets["A"], sets["B"])
    return _apply(str(meta["op2"]), inner, sets["C"]) if meta.get("op2") else inner


def _shown(values: list[int]) -> str:
    return "{" + ", ".join(str(v) for v in values) + "}"


def _set_wrongs(answer: list[int], mistakes: list[list[int]], spare: int) -> list[str]:
    """The domain's own mistakes, then one item missing, one extra, and one repeated."""
    generic = [answer[:-1], [*answer, spare], [*answer, answer[0]]]
    right = set(answer)
    texts = [joined(v) for v in [*mistakes, *generic] if v]
    return distinct_wrongs(joined(answer), texts, lambda t: _is_same_set(t, right))


def _is_same_set(text: str, right: set[int]) -> bool:
    items = [int(x) for x in text.split(",")]
    return len(items) == len(set(items)) and set(items) == right


class SetAlgebra(AnswerDomain):
    """Evaluate a set expression: A op B up to d=3, then (A op B) op C."""

    id = "list/set-algebra-v1"
    axes = _SET_MATCH
    instructions = INT_SET_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        size = 3 + difficulty
        three = difficulty >= 4
        while True:  # redraw until the result is non-empty (rarely more than twice)
            pool = rng.sample(range(1, 4 * size), 2 * size)
            sets = {name: sorted(rng.sample(pool, size)) for name in ("ABC" if three else "AB")}
            meta: dict[str, Any] = {"sets": sets, "op1": rng.choice(_SYMBOLS)}
            meta["op2"] = rng.choice(_SYMBOLS) if three else ""
            result = _evaluate(meta)
            if result:
                break
        expression = f"(A {meta['op1']} B) {meta['op2']} C" if three else f"A {meta['op1']} B"
        legend = "; ".join(f"{s} is {name}" for s, (name, _) in _OPS.items())
        defined = "\n".join(f"{name} = {_shown(values)}" for name, values in sets.items())
        prompt = f"{defined}\n\nCompute the set {expression}. ({legend}; A − B holds the elements of A not in B.)"  # fmt: skip
        return Problem(prompt, joined(sorted(result)), meta, measure=size * len(sets))

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_int_set(sorted(_evaluate(task.meta)), text, "the set's elements")

    def wrong(self, task: Task) -> list[str]:
        meta = task.meta
        answer = sorted(_evaluate(meta))
        swapped = {**meta, "op1": "∪" if meta["op1"] != "∪" else "∩"}
        every = sorted({v for values in meta["sets"].values() for v in values})
        spare = next(v for v in range(1, 10**6) if v not in answer)
        return _set_wrongs(answer, [sorted(_evaluate(swapped)), every], spare)


_PAIR = re.compile(r"\s*(-?[0-9]+)\s*\+\s*(-?[0-9]+)\s*")


def _read_pairs(text: str) -> list[tuple[int, int]] | None:
    if not isinstance(text, str) or len(text) > MAX_CHARS or not text.strip():
        return None
    pairs = []
    for piece in text.split(";"):
        match = _PAIR.fullmatch(piece)
        if match is None:
            return None
        a, b = int(match.group(1)), int(match.group(2))
        pairs.append((min(a, b), max(a, b)))
    return pairs


def _pairs_text(pairs: list[tuple[int, int]]) -> str:
    return "; ".join(f"{a}+{b}" for a, b in pairs)


def _sum_pairs(values: list[int], target: int) -> list[tuple[int, int]]:
    present = set(values)
    return sorted((a, target - a) for a in present if a < target - a and target - a in present)


class PairSums(AnswerDomain):
    """Every pair of distinct list values that sums to a target."""

    id = "list/pair-sums-v1"
    axes = _SET_MATCH
    instructions = (
        "Reply with the pairs separated by semicolons, each written as smaller+larger "
        "(for example: -2+9; 1+6), each pair once, in any order, nothing else."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 5 + 2 * difficulty
        low = -5 * n if difficulty >= 4 else 0
        while True:
            values = rng.sample(range(low, 5 * n), n)
            a, b = rng.sample(values, 2)
            target = a + b
            for _ in range(difficulty // 3):  # plant more pairs as the list grows
                free = [v for v in values if target - v not in values and 2 * v != target]
                if len(free) < 2:
                    break
                v, w = rng.sample(free, 2)
                values[values.index(w)] = target - v
            pairs = _sum_pairs(values, target)
            if len(pairs) >= 1 and 2 * len(pairs) < n:
                break
        prompt = (
            f"The list below holds distinct integers. Find every pair of two different "
            f"values in it whose sum is {target}.\n{joined(values)}"
        )
        meta = {"values": values, "target": target}
        return Problem(prompt, _pairs_text(pairs), meta, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        gold = _sum_pairs(task.meta["values"], task.meta["target"])
        got = _read_pairs(text)
        shown = _pairs_text(got) if got else ""
        return judge_items(got, gold, f"the pairs summing to {task.meta['target']}", shown)

    def wrong(self, task: Task) -> list[str]:
        values, target = task.meta["values"], task.meta["target"]
        gold = _sum_pairs(values, target)
        near = _sum_pairs(values, target + 1) or [(min(values), max(values))]
        outside = (min(values) - 1, target - min(values) + 1)  # not a pair of the list
        off_by_one = [(gold[0][0], gold[0][1] + 1), *gold[1:]]
        mistakes = [near, gold[:-1], [*gold, outside], [*gold, gold[0]], off_by_one]
        right = _pairs_text(gold)
        texts = [_pairs_text(m) for m in mistakes if m]
        return distinct_wrongs(right, texts, lambda t: sorted(_read_pairs(t) or []) == gold)


class MissingNumbers(AnswerDomain):
    """The integers of a stated range that a shuffled list leaves out."""

    id = "list/missing-numbers-v1"
    axes = _SET_MATCH
    instructions = INT_SET_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        span = 6 + 4 * difficulty
        low = rng.randint(-20, 20) if difficulty >= 4 else 1
        missing_count = rng.randint(1, 1 + difficulty // 2)
        everything = list(range(low, low + span))
        missing = sorted(rng.sample(everything[1:-1], missing_count))
        shown = [v for v in everything if v not in missing]
        rng.shuffle(shown)
        prompt = (
            f"This list should hold every integer from {low} to {low + span - 1} exactly "
            f"once, but some are missing. Which ones?\n{joined(shown)}"
        )
        meta = {"shown": shown, "low": low, "high": low + span - 1}
        return Problem(prompt, joined(missing), meta, measure=span)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_int_set(_missing(task.meta), text, "the missing integers")

    def wrong(self, task: Task) -> list[str]:
        answer = _missing(task.meta)
        shifted = [v + 1 for v in answer]
        return _set_wrongs(answer, [shifted], task.meta["shown"][0])


def _missing(meta: dict[str, Any]) -> list[int]:
    shown = set(meta["shown"])
    return [v for v in range(meta["low"], meta["high"] + 1) if v not in shown]


DOMAINS: tuple[AnswerDomain, ...] = (SetAlgebra(), PairSums(), MissingNumbers())
