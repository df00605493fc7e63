"""Function calls read off generated Python: a recursive function's value, the call order.

    from posttrain.domains.codeqa.calls import DOMAINS
    task = DOMAINS[1].generate(seed=0, difficulty=4)

- `codeqa/recursion-value-v1` (exact) — the return value of a generated recursive function
  (linear, tree, digit or Euclid-style recursion with drawn constants) on one input;
- `codeqa/call-order-v1` (structure) — the order in which a handful of functions calling
  each other (under loops and `if`s on their argument) start, as a JSON array of names.

Each template's source and its evaluator are written side by side, so the answer comes
from our own code, never from running text. `difficulty_measure` is the number of calls
the program makes, held inside a band that rises with difficulty (`_band`).

Not guaranteed: generation redraws until the call count lands in the band, so a few
templates (Euclid) appear only at low difficulty.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.domains.codeqa.judging import judge_integer, judge_json_strings
from posttrain.types import Task, Verdict


def _band(difficulty: int) -> range:
    return range(3 * difficulty + 1, 3 * difficulty + 4)


@dataclass
class _Recursion:
    source: str
    run: Callable[[list[int]], tuple[int, int]]  # args -> (value, calls)
    inputs: Callable[[random.Random], list[list[int]]]  # candidate argument lists


def _recursion(rng: random.Random) -> _Recursion:
    kind = rng.choice(["linear", "tree", "digits", "euclid"])
    k, c = rng.randint(2, 3), rng.randint(1, 5)
    if kind == "linear":
        a, base = rng.randint(1, 2), rng.randint(0, 2)
        src = f"def f(n):\n    if n <= {base}:\n        return {c}\n    return {k} * f(n - {a}) - n"

        def linear(args: list[int]) -> tuple[int, int]:
            n, calls, depth = args[0], 1, 0
            while n > base:
                n, calls, depth = n - a, calls + 1, depth + 1
            value = c
            for level in range(depth - 1, -1, -1):
                value = k * value - (args[0] - a * level)
            return value, calls

        return _Recursion(src, linear, lambda r: _shuffled(r, range(0, 40)))
    if kind == "tree":
        a, base = rng.randint(2, 3), rng.randint(1, 2)
        src = (
            f"def f(n):\n    if n <= {base}:\n        return n + {c}\n"
            f"    return f(n - 1) + f(n - {a})"
        )

        def tree(args: list[int]) -> tuple[int, int]:
            memo: dict[int, tuple[int, int]] = {}

            def go(n: int) -> tuple[int, int]:
                if n <= base:
                    return n + c, 1
                if n not in memo:
                    v1, c1 = go(n - 1)
                    v2, c2 = go(n - a)
                    memo[n] = (v1 + v2, c1 + c2 + 1)
                return memo[n]

            return go(args[0])

        return _Recursion(src, tree, lambda r: _shuffled(r, range(0, 12)))
    if kind == "digits":
        src = (
            f"def f(n):\n    if n < 10:\n        return n\n"
            f"    return f(n // 10) * {k} + n % 10 + {c}"
        )

        def digits(args: list[int]) -> tuple[int, int]:
            text = str(args[0])
            value = int(text[0])
            for ch in text[1:]:
                value = value * k + int(ch) + c
            return value, len(text)

        return _Recursion(src, digits, lambda r: [[r.randint(0, 10**e)] for e in range(1, 14)])
    src = f"def f(a, b):\n    if b == 0:\n        return a\n    return f(b, a % b) + {c}"

    def euclid(args: list[int]) -> tuple[int, int]:
        a, b, calls = args[0], args[1], 1
        while b != 0:
            a, b, calls = b, a % b, calls + 1
        return a + c * (calls - 1), calls

    return _Recursion(
        src, euclid, lambda r: [[r.randint(1, 200), r.randint(1, 200)] for _ in range(20)]
    )


def _shuffled(rng: random.Random, values: range) -> list[list[int]]:
    out = [[v] for v in values]
    rng.shuffle(out)
    return out


class RecursionValue(AnswerDomain):
    """The return value of a generated recursive function on one input."""

    id = "codeqa/recursion-value-v1"
    axes = Axes("code", "none", "single", "exact")
    instructions = "Reply with the returned integer only."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        band = _band(difficulty)
        for _ in range(200):
            rec = _recursion(rng)
            found = [(a, *rec.run(a)) for a in rec.inputs(rng)]
            fits = [f for f in found if f[2] in band]
            if fits:
                args, value, calls = fits[0]
                break
        else:  # pragma: no cover - the bands are reachable by the linear template
            raise RuntimeError("no recursion landed in the band")
        call = f"f({', '.join(map(str, args))})"
        prompt = f"Here is a Python 3 function:\n\n```python\n{rec.source}\n```\n"
        prompt += f"What does `{call}` return?"
        meta = {"source": rec.source, "call": call, "calls": calls}
        return Problem(prompt, str(value), meta, float(calls))

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(task, text)

    def wrong(self, task: Task) -> list[str]:
        value = int(task.answer)
        return [str(value + 1), str(value - 1), str(-value - 3), str(value * 2 + 1)]


_NAMES = ["main", "load", "parse", "check", "scan", "merge", "emit", "save", "log", "trim"]


def _call_program(rng: random.Random, difficulty: int) -> tuple[list[list[tuple]], int]:
    """Each function's body: (call target, wrapper, argument op) statements."""
    count = min(3 + difficulty // 2, len(_NAMES))
    bodies: list[list[tuple]] = []
    for i in range(count):
        body: list[tuple] = []
        if i < count - 1:
            for _ in range(rng.randint(1, 3)):
                target = rng.randint(i + 1, count - 1)
                wrap = rng.choice(["", "", "loop", "if"])
                bound = rng.randint(2, 3) if wrap == "loop" else rng.randint(0, 6)
                op = rng.choice(["- 1", "+ 1", "// 2", "- 2"])
                body.append((target, wrap, bound, op))
        bodies.append(body)
    return bodies, rng.randint(2, 9)


def _render_calls(bodies: list[list[tuple]], start: int) -> str:
    lines: list[str] = []
    for i in range(len(bodies) - 1, -1, -1):
        lines.append(f"def {_NAMES[i]}(x):")
        if not bodies[i]:
            lines.append("    return x")
        for target, wrap, bound, op in bodies[i]:
            call = f"{_NAMES[target]}(x {op})"
            if wrap == "loop":
                lines += [f"    for _ in range({bound}):", f"        {call}"]
            elif wrap == "if":
                lines += [f"    if x > {bound}:", f"        {call}"]
            else:
                lines.append(f"    {call}")
        lines.append("")
    lines.append(f"main({start})")
    return "\n".join(lines)


def _trace(bodies: list[list[tuple]], start: int, limit: int) -> list[str] | None:
    order: list[str] = []

    def go(i: int, x: int) -> bool:
        order.append(_NAMES[i])
        if len(order) > limit:
            return False
        for target, wrap, bound, op in bodies[i]:
            y = {"- 1": x - 1, "+ 1": x + 1, "// 2": x // 2, "- 2": x - 2}[op]
            times = bound if wrap == "loop" else int(wrap != "if" or x > bound)
            for _ in range(times):
                if not go(target, y):
                    return False
        return True

    return order if go(0, start) else None


class CallOrder(AnswerDomain):
    """The order in which generated functions are called, as a JSON array of names."""

    id = "codeqa/call-order-v1"
    axes = Axes("code", "none", "single", "structure")
    instructions = 'Reply with a JSON array of function names only, one entry per call, for example ["main", "load"].'  # noqa: E501

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        band = _band(difficulty)
        for _ in range(2000):
            bodies, start = _call_program(rng, difficulty)
            order = _trace(bodies, start, band.stop)
            if order is not None and len(order) in band:
                break
        else:  # pragma: no cover
            raise RuntimeError("no call program landed in the band")
        source = _render_calls(bodies, start)
        prompt = f"Here is a Python 3 program:\n\n```python\n{source}\n```\n"
        prompt += (
            "List every function call made while it runs, in the order the calls start "
            "(the first entry is `main`; a function called twice appears twice)."
        )
        meta = {"source": source, "calls": len(order)}
        return Problem(prompt, json.dumps(order), meta, float(len(order)))

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_json_strings(task, text)

    def wrong(self, task: Task) -> list[str]:
        order: list[str] = json.loads(task.answer)
        swap = next((i for i in range(1, len(order) - 1) if order[i] != order[i + 1]), None)
        swapped = list(order)
        if swap is not None:
            swapped[swap], swapped[swap + 1] = swapped[swap + 1], swapped[swap]
        else:
            swapped = [*order, order[-1]]
        return [json.dumps(order[:-1]), json.dumps(swapped), json.dumps([*order[:2], *order[1:]])]


DOMAINS: tuple[AnswerDomain, ...] = (RecursionValue(), CallOrder())
