"""Single-turn function calling, BFCL-style: write the right call(s); nothing is executed.

The prompt lists function schemas (one JSON object a line) and a user request; the
answer is only tool-call blocks, `<tool_call>{"name": ..., "arguments": {...}}</tool_call>`
(whitespace between blocks allowed), or exactly `NO_CALL` where the domain allows it.
Each call is checked by `posttrain.verify.structure.call_matches` against a spec that
pins every gold argument (name, required arguments, no unknown ones, types, values).

- `agent/fc-select-v1` — pick the one right function among 2..9 and fill flat
  arguments (strings, numbers, enums).
- `agent/fc-nested-v1` — one call whose arguments are objects and lists of objects
  (1..5 list items, order as the user gave it).
- `agent/fc-parallel-v1` — 2..5 independent calls in one reply, in any order; partial
  credit is the share of gold calls matched, over the larger of the two counts.
- `agent/fc-relevance-v1` — half the requests need a function that is not listed:
  the answer is then `NO_CALL`; otherwise the one right call.

Not guaranteed: values are compared exactly (strings up to case), so an equivalent
value in another form ("7/3/2024" for "2024-07-03") fails; see `fc_catalog.py`.
"""

from __future__ import annotations

import json
import random
from typing import Any

from posttrain.domains.agents.fc_catalog import FLAT, NESTED, Function, spec
from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.tools.parse import format_tool_call, parse_tool_calls, strip_tool_calls
from posttrain.types import Task, ToolCall, Verdict
from posttrain.verify.structure import call_matches

NO_CALL = "NO_CALL"
CALL_FORMAT = ('Reply with only the function call(s) that serve the request, each written as '
               '<tool_call>{"name": NAME, "arguments": {...}}</tool_call>, and no other text.')  # fmt: skip


def calls_in(text: str) -> list[ToolCall] | None:
    """The calls of a text made only of well-formed tool-call blocks, else None."""
    parsed = parse_tool_calls(text)
    if parsed.errors or not parsed.calls or strip_tool_calls(text):
        return None
    return parsed.calls


def _prompt(shown: list[Function], request: str) -> str:
    lines = "\n".join(json.dumps(f.schema(), sort_keys=True) for f in shown)
    return f"Functions you can call:\n{lines}\n\nUser request: {request}"


def _text(calls: list[ToolCall]) -> str:
    return "\n".join(format_tool_call(c) for c in calls)


def _shown(
    rng: random.Random, target: Function, count: int, pool: tuple[Function, ...]
) -> list[Function]:
    others = [f for f in pool if f.name != target.name]
    shown = [target, *rng.sample(others, min(len(others), count - 1))]
    rng.shuffle(shown)
    return shown


def _tweak(value: Any) -> Any:
    """A near-miss of one argument value: another number, another string, a dropped item."""
    if isinstance(value, bool):
        return not value
    if isinstance(value, int | float):
        return value + 1
    if isinstance(value, str):
        return value + "x"
    if isinstance(value, list):
        return value[:-1] if len(value) > 1 else [*value, *value]
    if isinstance(value, dict):
        key = sorted(value)[0]
        return {**value, key: _tweak(value[key])}
    return None


def _near_misses(name: str, args: dict[str, Any], other: str) -> list[ToolCall]:
    """Wrong function, a required argument missing, a value changed, an unknown argument."""
    first, last = sorted(args)[0], sorted(args)[-1]
    return [
        ToolCall(other, args),
        ToolCall(name, {k: v for k, v in args.items() if k != first}),
        ToolCall(name, {**args, last: _tweak(args[last])}),
        ToolCall(name, {**args, "note": "as requested"}),
    ]


def judge_one(task: Task, text: str) -> Verdict:
    calls = calls_in(text)
    if calls is None:
        return verdict(
            False, "only tool-call blocks", why="the reply is not just well-formed calls"
        )
    if len(calls) != 1:
        return verdict(False, "exactly one call", why=f"got {len(calls)}")
    ok, why = call_matches(calls[0], task.meta["specs"][0])
    return verdict(ok, "the right call with the right arguments", why=why)


class FunctionSelectDomain(AnswerDomain):
    id = "agent/fc-select-v1"
    axes = Axes("text", "none", "single", "structure")
    instructions = CALL_FORMAT
    pool: tuple[Function, ...] = FLAT + NESTED
    targets: tuple[Function, ...] = FLAT

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        target = rng.choice(self.targets)
        size = 1 + (difficulty - 1) // 2
        request, args = target.make(rng, size)
        shown = _shown(rng, target, 2 + (difficulty - 1) * 7 // 9, self.pool)
        other = next(f.name for f in shown if f.name != target.name)
        meta = {
            "specs": [spec(target, args)],
            "call": {"name": target.name, "arguments": args},
            "other": other,
        }
        return Problem(_prompt(shown, request), _text([ToolCall(target.name, args)]), meta, self.measure(difficulty, len(shown), size))  # fmt: skip

    def measure(self, difficulty: int, shown: int, size: int) -> float:
        return float(shown)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_one(task, text)

    def wrong(self, task: Task) -> list[str]:
        gold = task.meta["call"]
        return [
            _text([c]) for c in _near_misses(gold["name"], gold["arguments"], task.meta["other"])
        ]


class FunctionNestedDomain(FunctionSelectDomain):
    id = "agent/fc-nested-v1"
    targets = NESTED

    def measure(self, difficulty: int, shown: int, size: int) -> float:
        return float(size)

    def wrong(self, task: Task) -> list[str]:
        gold = task.meta["call"]
        args = gold["arguments"]
        nested = sorted(k for k, v in args.items() if isinstance(v, list | dict))
        key = nested[0]
        out = [_text([c]) for c in _near_misses(gold["name"], args, task.meta["other"])]
        out.append(_text([ToolCall(gold["name"], {**args, key: _tweak(args[key])})]))
        out.append(
            _text([ToolCall(gold["name"], {**args, key: json.dumps(args[key])})])
        )  # a JSON string, not a value
        return out


class FunctionParallelDomain(AnswerDomain):
    id = "agent/fc-parallel-v1"
    axes = Axes("text", "none", "single", "structure")
    instructions = (
        CALL_FORMAT + " Make every call the request needs, one block per call, in any order."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        k = 2 + (difficulty - 1) // 3
        functions = [rng.choice(FLAT) for _ in range(k)]
        requests, calls = [], []
        for f in functions:
            request, args = f.make(rng, 1)
            requests.append(request)
            calls.append(ToolCall(f.name, args))
        names = sorted({f.name for f in functions})
        shown = [f for f in FLAT if f.name in names] + rng.sample([f for f in FLAT if f.name not in names], min(2, len(FLAT) - len(names)))  # fmt: skip
        rng.shuffle(shown)
        specs = [spec(f, c.arguments) for f, c in zip(functions, calls, strict=True)]
        prompt = _prompt(shown, " ".join(f"({i + 1}) {r}" for i, r in enumerate(requests)))
        meta = {"specs": specs, "calls": [c.to_dict() for c in calls]}
        return Problem(prompt, _text(calls), meta, measure=float(k))

    def judge(self, task: Task, text: str) -> Verdict:
        calls = calls_in(text)
        if calls is None:
            return verdict(
                False, "only tool-call blocks", why="the reply is not just well-formed calls"
            )
        unused = list(calls)
        for gold in task.meta["specs"]:
            hit = next((c for c in unused if call_matches(c, gold)[0]), None)
            if hit is not None:
                unused.remove(hit)
        specs = task.meta["specs"]
        matched = len(calls) - len(unused)
        share = matched / max(len(specs), len(calls))
        ok = matched == len(specs) == len(calls)
        what = f"all {len(specs)} calls, each right"
        return verdict(ok, what, components={"matched": share}, reward=share, why=f"matched {matched} of {len(calls)} calls")  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        calls = [ToolCall.from_dict(c) for c in task.meta["calls"]]
        last = calls[-1]
        key = sorted(last.arguments)[-1]
        changed = ToolCall(last.name, {**last.arguments, key: _tweak(last.arguments[key])})
        bogus = [ToolCall("lookup", {"query": str(i)}) for i in range(len(calls))]
        return [
            _text(calls[:-1]),
            _text([*calls, calls[0]]),
            _text([*calls[:-1], changed]),
            _text(bogus),
        ]


class FunctionRelevanceDomain(FunctionSelectDomain):
    id = "agent/fc-relevance-v1"
    instructions = (
        CALL_FORMAT + f" If no listed function can serve the request, reply with exactly {NO_CALL}."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        problem = super().make(rng, difficulty)
        if rng.random() < 0.5:
            return problem
        meta = problem.meta
        withheld = meta["call"]["name"]
        lines = [line for line in problem.prompt.split("\n") if f'"name": "{withheld}"' not in line]
        return Problem("\n".join(lines), NO_CALL, {**meta, "specs": []}, problem.measure)

    def judge(self, task: Task, text: str) -> Verdict:
        if not task.meta["specs"]:
            ok = text.strip() == NO_CALL
            return verdict(
                ok, f"{NO_CALL}: no listed function serves the request", why="got something else"
            )
        return judge_one(task, text)

    def wrong(self, task: Task) -> list[str]:
        if task.meta["specs"]:
            return [NO_CALL, *super().wrong(task)]
        gold = task.meta["call"]
        return [_text([ToolCall(gold["name"], gold["arguments"])]),  # a function that is not listed
                _text([ToolCall(task.meta["other"], gold["arguments"])]),
                f"{NO_CALL}\n" + _text([ToolCall(gold["name"], gold["arguments"])])]  # fmt: skip


DOMAINS: tuple[AnswerDomain, ...] = (
    FunctionSelectDomain(),
    FunctionNestedDomain(),
    FunctionParallelDomain(),
    FunctionRelevanceDomain(),
)
