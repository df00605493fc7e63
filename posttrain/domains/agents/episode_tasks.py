"""The shared body of the multi-turn `agent/*` domains: session, scripted user, verdict.

A service module (`bank.py`, `orders.py` ...) supplies a `Service` (tools, written
policy, a policy checker and a database builder) and task templates; each template
is a function `(rng, difficulty, db) -> Scenario` naming the gold reads, the gold
writes, the confirmation message and the required reply (a template may arrange the
data first and return it as `Scenario.tables`; otherwise the `db` it is given is
scratch space for working the gold path out). `AgentTaskDomain` turns a
(service, template) pair into a domain:

    AgentTaskDomain("agent/bank-transfer-v1", BANK, transfer_task, "final_state")

An episode: the system message holds the policy, the tool schemas and the rules; the
user message holds the request. Tool calls go to `AgentSession.call`, which runs them
on a `Backend` that injects failures at a rate growing with difficulty
(`max_failure_rate` at d=10, none at d=1); the reference is built by playing the
gold path against that same seeded backend, so it retries exactly where it must. After an assistant message without tool
calls the scripted user answers "Yes, please go ahead." once; a message starting
with `ANSWER:`, or a second message without tool calls, ends the episode. Writes made before that yes, or that the
service's policy forbids, are recorded as violations (and applied, as a real
backend would).

The verdict has three components: `state` (the state hash of the final database
equals that of the initial database with the gold writes replayed), `reply` (the
final text is exactly one line `ANSWER: <value>` with the right value) and
`policy` (no violation). The reward is 1 when all three hold and 0 otherwise, as in
tau-bench; the components say what went wrong.

Not guaranteed: the scripted user says yes to anything, so the confirmation rule
checks only that writes wait for a yes, not that the model described them; the
reply check compares one value (numbers numerically, to a cent), not the prose of a
conversation.
"""

from __future__ import annotations

import functools
import json
import random
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date, timedelta
from typing import Any

from posttrain.domains.agents.db import (
    Backend,
    Database,
    Outcome,
    Tables,
    ToolError,
    ToolSpec,
    dumps,
)
from posttrain.domains.base import Axes, VerificationMethod, check_difficulty, task_id, task_rng
from posttrain.tools.parse import format_tool_call
from posttrain.types import Message, Observation, Reference, Rollout, Task, ToolCall, Verdict

TODAY = "2024-06-15"
YES = "Yes, please go ahead."
_ANSWER = re.compile(r"ANSWER:[ \t]*(\S[^\n]*)")
_MONEY = re.compile(r"-?\$?\d[\d,]*(\.\d+)?")

RULES = """Rules of this conversation:
- Call a tool by writing <tool_call>{{"name": TOOL, "arguments": {{...}}}}</tool_call>; the result comes back in a tool message.
- Before any change to the data, describe it and ask the user to confirm; change nothing until the user says yes.
- The backend is unreliable. An error that says timeout, 503 or 429 means the call was not applied: repeat it (after a 429 "retry after N s", first call wait with seconds=N). A result with "stale": true is out of date and one with "partial": true is incomplete: repeat the call.
- When you are done, or when the policy forbids the request, reply with exactly one line: ANSWER: <value>, where <value> is {answer_format}. That line ends the conversation."""


@dataclass(frozen=True)
class Service:
    """A simulated service: tools, written policy, policy checker, database builder."""

    name: str
    title: str
    policy: str
    tools: tuple[ToolSpec, ...]
    violation: Callable[[Database, str, dict[str, Any]], str | None]
    build: Callable[[random.Random, int], Tables]

    def tool(self, name: str) -> ToolSpec | None:
        return next((t for t in self.tools if t.name == name), None)


WAIT_TOOL = ToolSpec(
    "wait",
    "Wait the given number of seconds (use it to back off after a 429 error).",
    {"seconds": {"type": "integer", "minimum": 1, "maximum": 60}},
    ("seconds",),
    "read",
    lambda db, args: {},
)


@dataclass
class Scenario:
    """One generated task, before it becomes a `Task`: what the user asks and the gold path."""

    request: str
    answer_format: str
    reads: list[ToolCall]
    writes: list[ToolCall]
    reply: str
    wrong_reply: str
    naive: list[ToolCall] = field(default_factory=list)  # what an agent that never reads does
    confirm: str = "I will make the changes described above. Shall I go ahead?"
    measure: float = 0.0
    tables: Tables | None = None  # the initial data, when the template arranged it


def call(tool: str, /, **arguments: Any) -> ToolCall:
    return ToolCall(tool, arguments)


FIRST_NAMES = ("Ada", "Ben", "Chloe", "Dev", "Elena", "Farid", "Grace", "Hugo", "Iris", "Jonas",
               "Kira", "Liam", "Maya", "Nils", "Omar", "Priya", "Quinn", "Rosa", "Sven", "Tara")  # fmt: skip
LAST_NAMES = ("Archer", "Brandt", "Costa", "Dubois", "Eriksen", "Fischer", "Garcia", "Haddad",
              "Ito", "Jensen", "Kowalski", "Lopez", "Moreau", "Novak", "Okafor", "Petrov")  # fmt: skip


def people(rng: random.Random, n: int) -> list[str]:
    """`n` distinct full names."""
    names = [f"{first} {last}" for first in FIRST_NAMES for last in LAST_NAMES]
    return rng.sample(names, n)


@functools.cache
def days_before(days: int) -> str:
    """The ISO date `days` days before TODAY."""
    return (date.fromisoformat(TODAY) - timedelta(days=days)).isoformat()


def dollars(cents: int) -> str:
    return f"{cents / 100:.2f}"


class AgentSession:
    """One episode: the backend, the scripted user and the record of violations."""

    def __init__(self, service: Service, task: Task) -> None:
        self.service = service
        self.db = Database(task.meta["db"])
        self.backend = Backend(
            self.db, float(task.meta["failure_rate"]), int(task.meta["failure_seed"])
        )
        self.tools: list[dict[str, Any]] = [t.schema() for t in (*service.tools, WAIT_TOOL)]
        self.confirmed = False
        self.answered = False
        self.violations: list[str] = []
        self.reads: set[str] = set()  # `read_key`s of the reads that were served
        self.last: Outcome = Outcome("")
        self.closed = False

    def call(self, tool_call: ToolCall) -> Observation:
        if self.closed:
            raise RuntimeError("call() on a closed AgentSession")
        arguments = tool_call.arguments if isinstance(tool_call.arguments, dict) else {}
        self.last = self._run(tool_call.name, arguments)
        return Observation(self.last.text, self.last.error)

    def _run(self, name: str, arguments: dict[str, Any]) -> Outcome:
        if name == "wait":
            return self.backend.wait(arguments.get("seconds"))
        spec = self.service.tool(name)
        if spec is None:
            return Outcome(f"error: unknown tool {name[:40]!r}", True)
        missing = [r for r in spec.required if r not in arguments]
        if missing:
            return Outcome(f"error: missing argument(s) {', '.join(missing)}", True)
        violation = None
        if spec.kind == "write":
            try:
                violation = self.service.violation(self.db, name, arguments)
            except (ToolError, TypeError, ValueError, KeyError, AttributeError):
                violation = None  # arguments the tool itself will refuse
            if not self.confirmed:
                violation = "a change before the user confirmed"
        outcome = self.backend.run(spec, arguments)
        if violation and outcome.applied:
            self.violations.append(f"{name}: {violation}")
        if spec.kind != "write" and not outcome.error:  # a read or a list
            self.reads.add(read_key(name, arguments))
        return outcome

    def user_turn(self, assistant_message: Message) -> Message | None:
        text = (
            assistant_message.content.strip() if isinstance(assistant_message.content, str) else ""
        )
        if text.startswith("ANSWER:") or self.confirmed:
            self.answered = True
            return None
        self.confirmed = True
        return Message("user", YES)

    def snapshot(self) -> Any:
        b = self.backend
        return (self.db.snapshot(), b.rng.getstate(), b.clock, b.blocked_until, b.in_a_row,
                self.confirmed, list(self.violations), set(self.reads))  # fmt: skip

    def restore(self, snapshot: Any) -> None:
        tables, rng, clock, blocked, in_a_row, confirmed, violations, reads = snapshot
        self.reads = set(reads)
        self.db.restore(tables)
        self.backend.rng.setstate(rng)
        self.backend.clock, self.backend.blocked_until, self.backend.in_a_row = (
            clock,
            blocked,
            in_a_row,
        )
        self.confirmed, self.violations = confirmed, list(violations)

    def close(self) -> None:
        self.closed = True


def reply_value(text: str) -> str | None:
    """The value of a final text that is exactly one line `ANSWER: <value>`, else None."""
    if not isinstance(text, str):
        return None
    match = _ANSWER.fullmatch(text.strip())
    return match.group(1).strip() if match else None


def same_value(got: str, expected: str) -> bool:
    """Equal after case and spacing are normalised; money-like numbers compared to a cent."""
    if _MONEY.fullmatch(expected) and _MONEY.fullmatch(got.strip()):
        try:
            return abs(float(got.replace("$", "").replace(",", "")) - float(expected)) < 0.005
        except ValueError:
            return False

    def norm(s: str) -> str:
        return re.sub(r"\s*,\s*", ",", " ".join(s.casefold().split())).rstrip(".")

    return norm(got) == norm(expected)


class AgentTaskDomain:
    """A multi-turn task kind over one simulated service; see the module docstring."""

    max_turns = 80

    def __init__(
        self,
        domain_id: str,
        service: Service,
        template: Callable[[random.Random, int, Database], Scenario],
        verification: VerificationMethod = "final_state",
        max_failure_rate: float = 0.3,
    ) -> None:
        self.id = domain_id
        self.service = service
        self.template = template
        self.axes = Axes("conversation", "simulated_api", "multi", verification)
        self.max_failure_rate = max_failure_rate

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        rng = task_rng(self.id, seed, difficulty)
        tables = self.service.build(rng, difficulty)
        scenario = self.template(rng, difficulty, Database(tables))
        tables = scenario.tables or tables
        gold = Database(tables)
        for write in scenario.writes:
            spec = self.service.tool(write.name)
            assert (
                spec is not None
                and self.service.violation(gold, write.name, write.arguments) is None
            )
            spec.run(gold, write.arguments)
        system = (
            f"You are the assistant of {self.service.title}. Today is {TODAY}.\n\n"
            f"Policy:\n{self.service.policy}\n\nTools:\n"
            + "\n".join(dumps(t.schema()["function"]) for t in (*self.service.tools, WAIT_TOOL))
            + "\n\n"
            + RULES.format(answer_format=scenario.answer_format)
        )
        plan = {"reads": [c.to_dict() for c in scenario.reads], "writes": [c.to_dict() for c in scenario.writes],
                "naive": [c.to_dict() for c in scenario.naive], "confirm": scenario.confirm,
                "wrong_reply": scenario.wrong_reply}  # fmt: skip
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=[Message("system", system), Message("user", scenario.request)],
            answer={"state_hash": gold.state_hash(), "reply": scenario.reply},
            difficulty=difficulty,
            seed=seed,
            meta={"db": tables, "failure_rate": round(self.max_failure_rate * (difficulty - 1) / 9, 4),
                  "failure_seed": rng.randrange(2**31), "plan": plan, "measure": scenario.measure},
        )  # fmt: skip

    def open(self, task: Task, sandbox: object | None = None) -> AgentSession:
        """A fresh session for one episode of `task`; `sandbox` is not used."""
        return AgentSession(self.service, task)

    def reference(self, task: Task) -> Reference:
        plan = task.meta["plan"]
        return self._play(task, _calls(plan["reads"]), plan["confirm"], _calls(plan["writes"]),
                          "ANSWER: " + task.answer["reply"])  # fmt: skip

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        """A wrong value, no ANSWER line, chatter after it, writes before the yes, the naive unread writes,
        and giving up at the first failure (those that differ from the gold path)."""
        plan = task.meta["plan"]
        reads, writes, naive = _calls(plan["reads"]), _calls(plan["writes"]), _calls(plan["naive"])
        confirm, right = plan["confirm"], "ANSWER: " + task.answer["reply"]
        out = [
            self._play(task, reads, confirm, writes, "ANSWER: " + plan["wrong_reply"]),
            self._play(task, reads, confirm, writes, "I have taken care of everything."),
            self._play(task, reads, confirm, writes, right + "\nAnything else I can do?"),
        ]
        if writes:
            out.append(self._play(task, reads + writes, confirm, [], right))
            out.append(self._play(task, reads, confirm, writes, right, give_up=True))
        if naive and [c.to_dict() for c in naive] != plan["writes"]:
            out.append(self._play(task, [], confirm, naive, right))
            out.append(self._play(task, [], confirm, naive, "ANSWER: " + plan["wrong_reply"]))
        return out

    def _play(self, task: Task, before: list[ToolCall], confirm: str, after: list[ToolCall],
              final: str, give_up: bool = False) -> Reference:  # fmt: skip
        """The assistant turns of one path, recovering from the failures the session
        injects (or, with `give_up`, stopping at the first failure or write)."""
        session = self.open(task)
        turns: list[Message] = []

        def run(tool_call: ToolCall) -> bool:
            while True:
                turns.append(_tool_turn(tool_call))
                session.call(tool_call)
                failure = session.last.failure
                if failure is None:
                    return True
                if give_up:
                    return False
                if failure == "rate_limit":
                    wait = call(
                        "wait", seconds=session.backend.blocked_until - session.backend.clock
                    )
                    turns.append(_tool_turn(wait))
                    session.call(wait)

        stopped = not all(run(c) for c in before)
        if after and not stopped:
            turns.append(Message("assistant", confirm))
            session.user_turn(turns[-1])
            for c in after:
                if give_up and c is after[-1]:
                    break  # nothing has failed yet: stopping before the last write is giving up too
                if not run(c):
                    break
        turns.append(Message("assistant", final))
        return Reference(turns)

    def verify(self, task: Task, rollout: Rollout, session: Any) -> Verdict:
        if not isinstance(session, AgentSession):
            session = self._replayed(task, rollout)
        value = reply_value(rollout.final_text)
        state = session.db.state_hash() == task.answer["state_hash"]
        reply = value is not None and same_value(value, task.answer["reply"])
        policy = not session.violations
        # The reply must rest on the records it depends on: a blind guess ("NONE",
        # "0.00") is right whenever the gold outcome is to change nothing.
        unread = [c for c in task.meta["plan"]["reads"]
                  if read_key(c["name"], c["arguments"]) not in session.reads]  # fmt: skip
        components = {"state": float(state), "reply": float(reply), "policy": float(policy),
                      "grounded": float(not unread)}  # fmt: skip
        if value is None:
            reason = "The final text is not exactly one line 'ANSWER: <value>'."
        elif not policy:
            reason = f"Policy violated: {session.violations[0]}."
        elif unread:
            reason = f"The answer does not rest on the records: {unread[0]['name']} was never read."
        elif not state:
            reason = "The final database differs from the gold one."
        elif not reply:
            reason = f"The reply value {value[:40]!r} is wrong."
        else:
            reason = "The final state, the reply and the policy are all right."
        passed = state and reply and policy and not unread
        return Verdict(float(passed), passed, reason, components)

    def _replayed(self, task: Task, rollout: Rollout) -> AgentSession:
        """A session that has served the rollout's calls (when no live session is given)."""
        session = self.open(task)
        for turn in rollout.turns:
            for tool_call in turn.tool_calls:
                session.call(tool_call)
            if not turn.tool_calls:
                session.user_turn(Message("assistant", turn.text))
        return session

    def difficulty_measure(self, task: Task) -> float:
        """The gold path's tool calls (reads and writes, failures not counted)."""
        return float(task.meta["measure"])


def read_key(name: str, arguments: Any) -> str:
    """One read call as a comparable key: its name and its arguments with values as
    trimmed lower-case text, so `{"id": 7}` and `{"id": "7"}`, or "Priya Ito" and
    "priya ito", are the same read."""
    values = (
        {str(k): str(v).strip().lower() for k, v in arguments.items()}
        if isinstance(arguments, dict) else {}
    )  # fmt: skip
    return json.dumps([name, values], sort_keys=True)


def _calls(dicts: list[dict[str, Any]]) -> list[ToolCall]:
    return [ToolCall.from_dict(d) for d in dicts]


def _tool_turn(tool_call: ToolCall) -> Message:
    return Message("assistant", format_tool_call(tool_call), tool_calls=[tool_call])
