"""The `python` tool of the `pytool` family: a sandboxed session and the shared domain base.

A `pytool` task hands the model data too large (or a computation too long) to do
by hand, and a `python` tool. `PytoolSession.call` runs the call's `code` as a fresh
Python 3 program in `/workspace` of a pooled sandbox, with the task's files laid out
there, and returns what it printed as the observation; a crash, timeout or
out-of-memory comes back as an `error:` observation, never an exception.

A domain subclasses `PytoolDomain` and writes `make(rng, difficulty) -> Problem`
(the prompt, the exact answer, the reference code, the files, near-miss answers);
`kind` picks the answer format and its check: `"decimal"` (within 0.01),
`"integer"` (equal) or `"ids"` (a comma-separated set, order free). The verdict
has three components, all needed for reward 1: `format`, `correct`, `used_tool`
(some python call ran cleanly and printed the answer: a number within tolerance,
the integer, or every id of the set).

    session = domain.open(task)        # leases a sandbox only while a call runs
    session.call(ToolCall("python", {"code": "print(sum(range(10)))"}))

Not guaranteed: each call is a fresh process (nothing persists between calls but
the task's files); the sandbox is leased per call from a process-wide pool of 2
rather than held for the session, so a batch may open any number of sessions
without exhausting it. `used_tool` trusts the observations recorded in the rollout
(the episode loop writes them) and does not check that the printed value was
computed rather than typed into the code.
"""

from __future__ import annotations

import random
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.domains.tools_api.framework import close_enough, graded, strict_decimal
from posttrain.sandbox import SandboxError, SandboxSpec
from posttrain.sandbox.shared import shared_pool
from posttrain.tools.parse import format_tool_call, function_schema
from posttrain.types import Message, Observation, Reference, Rollout, Task, ToolCall, Verdict
from posttrain.verify.answers import strict_integer

TOOL_NAME = "python"
CALL_TIMEOUT_S = 10.0
OBSERVATION_CHARS = 4000
MAX_CALLS = 12
SPEC = SandboxSpec(
    memory_mb=512, timeout_s=CALL_TIMEOUT_S, max_processes=16, tmpfs_mb=64, max_file_mb=16
)
TOOL_HELP = (
    "Tool: python(code) runs `code` as a fresh Python 3 program in /workspace (where the "
    "task's files are) and returns what it prints, or its error; nothing is kept between "
    f"calls; each call gets {CALL_TIMEOUT_S:g} s and 512 MB. Call it by writing "
    '<tool_call>{"name": "python", "arguments": {"code": "..."}}</tool_call> '
    "(the code as a JSON string). When you know the answer, reply with only the answer "
    "and no tool call."
)
PYTHON_SCHEMA = function_schema(
    TOOL_NAME,
    "Run Python 3 code in /workspace (the task's files are there); returns what it prints.",
    {
        "type": "object",
        "properties": {"code": {"type": "string", "description": "a whole Python program"}},
        "required": ["code"],
    },
)
AnswerKind = Literal["decimal", "integer", "ids"]
_DECIMAL = re.compile(r"-?[0-9]+(?:\.[0-9]+)?")
_INTEGER = re.compile(r"(?<![0-9.])-?[0-9]+(?![0-9.])")
_ID_LIST = re.compile(r"[A-Z][0-9]{3,8}(?:\s*,\s*[A-Z][0-9]{3,8})*")


def clip(text: str, limit: int = OBSERVATION_CHARS) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n... [{len(text) - 2 * half} characters cut] ...\n{text[-half:]}"


def run_code(code: str, files: dict[str, str]) -> Observation:
    """`code` run in a pooled sandbox with `files` in its workspace; never raises."""
    try:
        with shared_pool("pytool", SPEC, size=2, max_tasks=500).lease(timeout=120) as sandbox:
            for path, data in files.items():
                sandbox.write_file(path, data)
            result = sandbox.run_python(code, timeout=CALL_TIMEOUT_S)
    except (SandboxError, TimeoutError) as exc:
        return Observation(f"error: the sandbox failed ({exc}); try again", error=True)
    output = result.stdout + (("\n" + result.stderr) if result.stderr else "")
    if result.error is not None:
        return Observation(f"error: the sandbox failed ({result.error}); try again", error=True)
    if result.timed_out:
        return Observation(f"error: timed out after {CALL_TIMEOUT_S:g} s\n{clip(output)}", True)
    if result.oom:
        return Observation("error: out of memory (512 MB)", error=True)
    if result.exit_code != 0:
        return Observation(f"error: exit code {result.exit_code}\n{clip(output)}", error=True)
    return Observation(clip(result.stdout) if result.stdout.strip() else "(no output; print it)")


class PytoolSession:
    """One episode's python tool: runs each call in the sandbox and counts the calls."""

    def __init__(self, task: Task) -> None:
        self.task = task
        self.tools: list[dict[str, Any]] = [PYTHON_SCHEMA]
        self.calls = 0
        self.closed = False

    def call(self, tool_call: ToolCall) -> Observation:
        if self.closed:
            raise RuntimeError("call() on a closed PytoolSession")
        self.calls += 1
        if self.calls > MAX_CALLS:
            return Observation(f"error: at most {MAX_CALLS} python calls per episode", True)
        if tool_call.name != TOOL_NAME:
            shown = tool_call.name[:40]
            return Observation(f"error: unknown tool {shown!r}; the only tool is 'python'", True)
        arguments = tool_call.arguments if isinstance(tool_call.arguments, dict) else {}
        code = arguments.get("code")
        if not isinstance(code, str) or not code.strip():
            return Observation("error: missing string argument 'code'", error=True)
        return run_code(code, self.task.files)

    def user_turn(self, assistant_message: Message) -> Message | None:
        """No scripted user: the episode ends at the first reply without a tool call."""
        return None

    def snapshot(self) -> int:
        return self.calls

    def restore(self, snapshot: Any) -> None:
        self.calls = int(snapshot)

    def close(self) -> None:
        self.closed = True


@dataclass(frozen=True)
class Problem:
    """What `make` returns: one generated task before it becomes a `Task`."""

    prompt: str  # the question and its answer format; the tool help is appended
    answer: str
    code: str  # the reference program: prints the answer
    measure: float
    near_misses: list[str]  # wrong final answers the corruptions give after the right call
    files: dict[str, str] = field(default_factory=dict)
    meta: dict[str, Any] = field(default_factory=dict)


def python_turn(code: str) -> Message:
    call = ToolCall(TOOL_NAME, {"code": code}, id="call_0")
    return Message("assistant", format_tool_call(call), tool_calls=[call])


def ids_of(text: str) -> list[str] | None:
    """The ids of a strict comma-separated id list ("R10234, R55555"), or None."""
    stripped = text.strip() if isinstance(text, str) else ""
    if len(stripped) > 20_000 or not _ID_LIST.fullmatch(stripped):
        return None
    return [part.strip() for part in stripped.split(",")]


class PytoolDomain(ABC):
    """Base of the `pytool` domains; see the module docstring."""

    id: str
    axes: Axes
    kind: ClassVar[AnswerKind]
    what: ClassVar[str]  # the answer, in words, for the verdict's reason
    max_turns = 8

    @abstractmethod
    def make(self, rng: random.Random, difficulty: int) -> Problem:
        """Written by each subclass."""

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        p = self.make(task_rng(self.id, seed, difficulty), difficulty)
        meta = {**p.meta, "code": p.code, "near_misses": p.near_misses, "measure": p.measure}
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=[Message("user", p.prompt.rstrip() + "\n\n" + TOOL_HELP)],
            answer=p.answer,
            files=dict(p.files),
            difficulty=difficulty,
            seed=seed,
            meta=meta,
        )

    def open(self, task: Task, sandbox: object | None = None) -> PytoolSession:
        """A fresh session for one episode; `sandbox` is unused (the pool serves calls)."""
        return PytoolSession(task)

    def reference(self, task: Task) -> Reference:
        return Reference([python_turn(task.meta["code"]), Message("assistant", task.answer)])

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        """The right answer with no tool call, then the right call followed by each near miss."""
        turn = python_turn(task.meta["code"])
        wrong = [Reference([turn, Message("assistant", miss)]) for miss in task.meta["near_misses"]]
        return [Reference.single(task.answer), *wrong]

    def difficulty_measure(self, task: Task) -> float:
        return float(task.meta["measure"])

    # -- judging -------------------------------------------------------------------------

    def _read(self, text: str) -> Any:
        """The final text parsed in this domain's strict format, or None."""
        if self.kind == "decimal":
            return strict_decimal(text)
        if self.kind == "integer":
            return strict_integer(text)
        return ids_of(text)

    def _matches(self, task: Task, value: Any) -> bool:
        if self.kind == "decimal":
            return close_enough(value, float(task.answer), abs_tol=0.01, rel_tol=0.0)
        if self.kind == "integer":
            return bool(value == int(task.answer))
        expected = sorted(task.answer.split(", "))
        return sorted(value) == expected

    def _printed(self, task: Task, output: str) -> bool:
        """Does a python call's output hold the answer?"""
        if self.kind == "decimal":
            expected = float(task.answer)
            found = _DECIMAL.findall(output[: OBSERVATION_CHARS * 2])
            return any(abs(float(x) - expected) <= 0.01 + 1e-9 for x in found)
        if self.kind == "integer":
            return any(int(x) == int(task.answer) for x in _INTEGER.findall(output[:20_000]))
        return all(re.search(rf"\b{x}\b", output) for x in task.answer.split(", "))

    def _used_tool(self, task: Task, rollout: Rollout) -> bool:
        for turn in rollout.turns:
            for call, obs in zip(turn.tool_calls, turn.observations, strict=False):
                content = obs.content if isinstance(obs.content, str) else ""
                if call.name != TOOL_NAME or obs.role != "tool" or content.startswith("error:"):
                    continue
                if self._printed(task, content):
                    return True
        return False

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        try:
            text = rollout.final_text
            if not isinstance(text, str) or not text.strip():
                return Verdict(0.0, False, "The final text is empty.", {"correct": 0.0})
            value = self._read(text)
            well_formed = value is not None
            correct = well_formed and self._matches(task, value)
            return graded(
                well_formed,
                correct,
                self._used_tool(task, rollout),
                self.what,
                "a python call must print the answer",
            )
        except Exception as exc:  # the verifier failed, not the answer
            return Verdict(
                0.0,
                False,
                "The verifier failed on this answer.",
                {"correct": 0.0},
                error=f"{type(exc).__name__}: {exc}",
            )
