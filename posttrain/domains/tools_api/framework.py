"""The shared body of the `tools` API domains: tool specs, the session, the domain base class.

A domain of this family subclasses `FinalAnswerApiDomain` (judged on its final text)
or, when the verdict needs every turn, `ApiDomain` itself, and writes (the hooks are
abstract, so a subclass missing one fails when it is instantiated):

- `tools: ClassVar[tuple[ToolSpec, ...]]` — the tools its session serves;
- `make(rng, difficulty) -> Scenario` — the prompt, the world the tools serve
  (JSON data, kept in `task.meta["world"]`), the reference plan and the answer;
- `serve(world, name, arguments) -> Any` — one tool call against the world (it may
  mutate `world`); raise `ToolError` with a helpful message for a bad call;
- `judge(task, final, trace) -> Verdict` (`FinalAnswerApiDomain`) — the verdict for
  the final text, given the `Trace` of every tool call the rollout made, replayed on
  a fresh world; or `judge_rollout(task, rollout, trace) -> Verdict` (`ApiDomain`) —
  the verdict from the whole rollout, for a conversation judged on every turn;
- `wrong(task) -> list[Plan]` — at least three known-wrong plans;
- optionally `user_reply(task, memory, message) -> str | None` — the scripted user.

A `Plan` is a list of steps: a list of `{"name", "arguments"}` dicts is one assistant
turn of tool calls, a string is one assistant turn of plain text. The last step is
the final answer. `generate`, `open`, `reference`, `verify`, `corrupt` and
`difficulty_measure` come from here; the prompt gets the tool list and the call
syntax appended, so it is self-contained.

`verify` replays the rollout's tool calls on a fresh copy of the task's world (it
does not trust the live session), so a verdict depends only on the task and the
rollout; a `judge` that raises becomes a Verdict with `error` set.

Not guaranteed: argument checks are shallow (JSON types of top-level arguments, and
strings of at most 200 characters); `serve` must draw nothing random, or replays
differ from the episode.
"""

from __future__ import annotations

import copy
import json
import math
import random
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.tools.parse import format_tool_call, function_schema
from posttrain.types import Message, Observation, Reference, Rollout, Task, ToolCall, Verdict

Plan = list[Any]  # each step: list[{"name", "arguments"}] (tool turn) or str (text turn)
MAX_STRING_ARGUMENT = 200
_JSON_TYPES: dict[str, tuple[type, ...]] = {
    "string": (str,),
    "number": (int, float),
    "integer": (int,),
}


class ToolError(ValueError):
    """A call the simulated API refuses; the message is shown to the model."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool: its name, what it does, and its arguments as (name, JSON type, doc)."""

    name: str
    description: str
    params: tuple[tuple[str, str, str], ...]

    def schema(self) -> dict[str, Any]:
        properties = {p: {"type": t, "description": d} for p, t, d in self.params}
        parameters = {"type": "object", "properties": properties, "required": self.names()}
        return function_schema(self.name, self.description, parameters)

    def names(self) -> list[str]:
        return [p for p, _, _ in self.params]

    def signature(self) -> str:
        args = ", ".join(f"{p}: {t}" for p, t, _ in self.params)
        return f"- {self.name}({args}): {self.description}"


def check_arguments(spec: ToolSpec, arguments: Any) -> str | None:
    """Why `arguments` do not fit `spec`, or None when they do."""
    if not isinstance(arguments, dict):
        return f"arguments of {spec.name} must be a JSON object"
    allowed = spec.names()
    for key in sorted(str(k) for k in arguments):
        if key not in allowed:
            return f"unexpected argument {key[:40]!r}; {spec.name} takes {', '.join(allowed)}"
    for name, kind, _ in spec.params:
        if name not in arguments:
            return f"missing argument {name!r} ({kind}); {spec.name} takes {', '.join(allowed)}"
        value = arguments[name]
        if isinstance(value, bool) or not isinstance(value, _JSON_TYPES[kind]):
            if kind == "integer" and isinstance(value, float) and value.is_integer():
                continue
            return f"argument {name!r} must be a {kind}"
        if isinstance(value, str) and len(value) > MAX_STRING_ARGUMENT:
            return f"argument {name!r} is longer than {MAX_STRING_ARGUMENT} characters"
        if isinstance(value, float) and not math.isfinite(value):
            return f"argument {name!r} must be a finite number"
        if isinstance(value, int | float) and abs(value) > 1e15:
            return f"argument {name!r} is out of range"
    return None


@dataclass
class CallRecord:
    """One call as served: its name and arguments, whether it worked, what it returned."""

    name: str
    arguments: dict[str, Any]
    ok: bool
    result: Any


@dataclass(frozen=True)
class Scenario:
    """What `make` returns: one generated task before it becomes a `Task`."""

    prompt: str
    answer: Any
    world: dict[str, Any]
    plan: Plan
    measure: float
    system: str = ""  # when set, the prompt is a system message then `prompt` as the user's
    meta: dict[str, Any] = field(default_factory=dict)


class ApiSession:
    """One episode of an `ApiDomain`: serves tool calls on a private copy of the world,
    records every call, and plays the domain's scripted user."""

    def __init__(self, domain: ApiDomain, task: Task) -> None:
        self.domain = domain
        self.task = task
        self.tools: list[dict[str, Any]] = [spec.schema() for spec in domain.tools]
        self.world: dict[str, Any] = copy.deepcopy(task.meta["world"])
        self.calls: list[CallRecord] = []
        self.memory: dict[str, Any] = {}  # the scripted user's progress
        self.closed = False

    def call(self, tool_call: ToolCall) -> Observation:
        if self.closed:
            raise RuntimeError("call() on a closed ApiSession")
        arguments = tool_call.arguments if isinstance(tool_call.arguments, dict) else {}
        # A shallow copy: model-made arguments can nest too deeply for copy.deepcopy.
        record = CallRecord(str(tool_call.name), dict(arguments), False, None)
        self.calls.append(record)
        specs = {spec.name: spec for spec in self.domain.tools}
        spec = specs.get(record.name)
        if spec is None:
            known = ", ".join(s.name for s in self.domain.tools)
            return Observation(f"error: unknown tool {record.name[:40]!r}; tools: {known}", True)
        problem = check_arguments(spec, tool_call.arguments)
        if problem is not None:
            return Observation(f"error: {problem}", error=True)
        try:
            result = self.domain.serve(self.world, spec.name, arguments)
        except (ValueError, ArithmeticError) as exc:  # ToolError is a ValueError
            return Observation(f"error: {exc}", error=True)
        record.ok, record.result = True, result
        text = result if isinstance(result, str) else json.dumps(result, sort_keys=True)
        return Observation(text)

    def user_turn(self, assistant_message: Message) -> Message | None:
        reply = self.domain.user_reply(self.task, self.memory, assistant_message.content)
        return None if reply is None else Message("user", reply)

    def snapshot(self) -> Any:
        return copy.deepcopy((self.world, self.calls, self.memory))

    def restore(self, snapshot: Any) -> None:
        world, calls, memory = copy.deepcopy(snapshot)
        self.world, self.calls, self.memory = world, calls, memory

    def close(self) -> None:
        self.closed = True


@dataclass
class Trace:
    """The rollout's tool calls replayed on a fresh world: the calls and the final world."""

    calls: list[CallRecord]
    world: dict[str, Any]

    def ok(self, name: str) -> list[CallRecord]:
        """The successful calls of tool `name`, in order."""
        return [c for c in self.calls if c.ok and c.name == name]


def tool_turn(calls: list[dict[str, Any]]) -> Message:
    """One assistant message making `calls` (ids as the parser will number them)."""
    parsed = [
        ToolCall(c["name"], dict(c["arguments"]), id=f"call_{i}") for i, c in enumerate(calls)
    ]
    return Message("assistant", "".join(format_tool_call(c) for c in parsed), tool_calls=parsed)


def call(tool: str, /, **arguments: Any) -> dict[str, Any]:
    """A plan step's call: `call("lookup", name="Orla Venn")`."""
    return {"name": tool, "arguments": arguments}


class ApiDomain(ABC):
    """Base of the `tools` API domains, judged on the whole rollout; see the module docstring."""

    id: str
    axes: Axes
    tools: ClassVar[tuple[ToolSpec, ...]]
    max_turns = 16

    # -- what a subclass writes ------------------------------------------------------

    @abstractmethod
    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        """Written by each subclass."""

    @abstractmethod
    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        """Written by each subclass."""

    @abstractmethod
    def judge_rollout(self, task: Task, rollout: Rollout, trace: Trace) -> Verdict:
        """The verdict from the whole rollout (its final text is non-empty)."""

    @abstractmethod
    def wrong(self, task: Task) -> list[Plan]:
        """Written by each subclass."""

    def user_reply(self, task: Task, memory: dict[str, Any], message: str) -> str | None:
        """The scripted user's next message; by default there is none (the episode ends)."""
        return None

    # -- the Domain protocol -----------------------------------------------------------

    def tool_help(self) -> str:
        lines = "\n".join(spec.signature() for spec in self.tools)
        return (
            "Tools (call one by writing "
            '<tool_call>{"name": "TOOL", "arguments": {...}}</tool_call>; '
            "each result comes back as a tool message):\n" + lines
        )

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        s = self.make(task_rng(self.id, seed, difficulty), difficulty)
        if s.system:
            prompt = [
                Message("system", s.system.rstrip() + "\n\n" + self.tool_help()),
                Message("user", s.prompt),
            ]
        else:
            prompt = [Message("user", s.prompt.rstrip() + "\n\n" + self.tool_help())]
        meta = {**s.meta, "world": s.world, "plan": s.plan, "measure": float(s.measure)}
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=prompt,
            answer=s.answer,
            difficulty=difficulty,
            seed=seed,
            meta=meta,
        )

    def open(self, task: Task, sandbox: object | None = None) -> ApiSession:
        """A fresh session for one episode of `task`; `sandbox` is not used."""
        return ApiSession(self, task)

    def trajectory(self, plan: Plan) -> Reference:
        return Reference(
            [
                tool_turn(step) if isinstance(step, list) else Message("assistant", step)
                for step in plan
            ]
        )

    def reference(self, task: Task) -> Reference:
        return self.trajectory(task.meta["plan"])

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        return [self.trajectory(plan) for plan in self.wrong(task)]

    def difficulty_measure(self, task: Task) -> float:
        return float(task.meta["measure"])

    def replay(self, task: Task, rollout: Rollout) -> Trace:
        session = ApiSession(self, task)
        for turn in rollout.turns:
            for tool_call in turn.tool_calls:
                session.call(tool_call)
        return Trace(session.calls, session.world)

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        try:
            final = rollout.final_text
            if not isinstance(final, str) or not final.strip():
                return Verdict(0.0, False, "The final text is empty.", {"correct": 0.0})
            return self.judge_rollout(task, rollout, self.replay(task, rollout))
        except Exception as exc:  # the verifier failed, not the answer
            return Verdict(
                0.0,
                False,
                "The verifier failed on this answer.",
                {"correct": 0.0},
                error=f"{type(exc).__name__}: {exc}",
            )


class FinalAnswerApiDomain(ApiDomain):
    """An `ApiDomain` judged on its final text alone: a subclass writes `judge`."""

    @abstractmethod
    def judge(self, task: Task, final: str, trace: Trace) -> Verdict:
        """Written by each subclass."""

    def judge_rollout(self, task: Task, rollout: Rollout, trace: Trace) -> Verdict:
        return self.judge(task, rollout.final_text, trace)


# ---- answer formats and verdicts ---------------------------------------------------------

_NUMBER = re.compile(r"[-+]?(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?")
_DATE = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def strict_decimal(text: str) -> float | None:
    """The value when the stripped text is one plain decimal number ("1,234.50", "-3")."""
    stripped = text.strip() if isinstance(text, str) else ""
    if len(stripped) > 40 or not _NUMBER.fullmatch(stripped):
        return None
    return float(stripped.replace(",", ""))


def close_enough(
    value: float | None, expected: float, *, abs_tol: float, rel_tol: float = 1e-4
) -> bool:
    return value is not None and (
        abs(value - expected) <= abs_tol + 1e-9 or abs(value - expected) <= rel_tol * abs(expected)
    )


def strict_date(text: str) -> str | None:
    stripped = text.strip() if isinstance(text, str) else ""
    return stripped if _DATE.fullmatch(stripped) else None


def same_text(text: str, expected: str) -> bool:
    """Equal after collapsing whitespace and folding case."""
    if not isinstance(text, str):
        return False
    return " ".join(text.split()).casefold() == " ".join(expected.split()).casefold()


def graded(
    format_ok: bool, correct: bool, used_tool: bool, what: str, tools_needed: str
) -> Verdict:
    """The all-or-nothing verdict of a tool task: format, correctness and tool use all hold."""
    components = {
        "format": float(format_ok),
        "correct": float(correct),
        "used_tool": float(used_tool),
    }
    passed = format_ok and correct and used_tool
    if passed:
        reason = f"Correct: {what}, found with the tools."
    elif not format_ok:
        reason = f"The final text is not in the required format ({what})."
    elif not correct:
        reason = f"Wrong: the final text is not {what}."
    else:
        reason = f"The answer is right, but the tools were not used as needed ({tools_needed})."
    return Verdict(float(passed), passed, reason, components)


def money(value: float) -> str:
    """A value rounded to cents, as the answer format states it: `1234.50`."""
    return f"{round(value + 0.0, 2):.2f}"
