"""The shared body of the `dialog` domains: a scripted user, its session, the domain base.

A `dialog` task is a game of several turns without tools: every assistant turn is one
line in a stated format (`GUESS: 42`), and a deterministic scripted user (no model)
answers it with feedback. A domain subclasses `DialogDomain` and writes:

- `make(rng, difficulty) -> Setup` — the prompt, the hidden world (JSON), the answer,
  the turn budget and the difficulty measure;
- `respond(task, state, text) -> str | None` — the user's reply to one assistant turn;
  it updates `state` (a JSON dict from `new_state`) and returns None to end the game;
- `judge(task, state) -> Verdict` — the verdict on the state after the whole game;
- `solve(task) -> list[str]` — the reference turns, played against the real user;
- `wrong(task) -> list[list[str]]` — at least three known-wrong trajectories.

`verify` replays the rollout's assistant turns against a fresh user, so a verdict
depends only on the task and the rollout, never on the live session. `standard_verdict`
turns the usual state counters (`solved`, `turns`, `violations`, `malformed`) into a
verdict: reward 1 when solved without violations, 0.25 when solved with violations,
0 otherwise.

Not guaranteed: a turn that holds tool-call markup is answered by `DialogSession.call`
with an error and does not reach the scripted user, while `verify` counts it as a
malformed turn; `max_turns` is the largest budget of the domain, so an episode can end
earlier (budget spent) but never later than the budget.
"""

from __future__ import annotations

import copy
import random
import re
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import Any

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.types import Message, Observation, Reference, Rollout, Task, ToolCall, Verdict

MAX_TURN_CHARS = 200  # a protocol line is short; longer text is malformed without a regex


@dataclass(frozen=True)
class Setup:
    """What `make` returns: one generated game before it becomes a `Task`."""

    prompt: str
    answer: Any
    world: dict[str, Any]
    budget: int
    measure: float


def protocol_value(text: str, keyword: str) -> str | None:
    """The value of a turn that is exactly one line `KEYWORD: value`, else None.

    >>> protocol_value("  GUESS: 42 ", "GUESS")
    '42'
    >>> protocol_value("I think GUESS: 42", "GUESS") is None
    True
    """
    if not isinstance(text, str) or len(text) > MAX_TURN_CHARS:
        return None
    match = re.fullmatch(rf"{keyword}: ?(\S(?:[^\n]*\S)?)", text.strip())
    return match.group(1) if match else None


def new_counters() -> dict[str, Any]:
    """The state every game keeps: turns used, malformed turns, violations, the outcome."""
    return {"turns": 0, "malformed": 0, "violations": 0, "solved": False, "over": False}


def standard_verdict(state: dict[str, Any], budget: int, goal: str) -> Verdict:
    """Reward 1 when solved with no violation, 0.25 when solved with some, else 0."""
    solved, violations = bool(state["solved"]), int(state["violations"])
    components = {
        "solved": float(solved),
        "turns_used": float(state["turns"]),
        "violations": float(violations),
        "malformed": float(state["malformed"]),
    }
    if solved and violations == 0:
        return Verdict(1.0, True, f"{goal} within {state['turns']} of {budget} turns.", components)
    if solved:
        why = f"{goal}, but {violations} turn(s) ignored the feedback already given."
        return Verdict(0.25, False, why, components)
    if state["turns"] >= budget:
        why = f"Not done within the budget of {budget} turns ({state['malformed']} malformed)."
    else:
        why = "The game ended before it was done."
    return Verdict(0.0, False, why, components)


class DialogSession:
    """One episode of a `DialogDomain`: the scripted user and its state."""

    def __init__(self, domain: DialogDomain, task: Task) -> None:
        self.domain = domain
        self.task = task
        self.tools: list[dict[str, Any]] = []
        self.state: dict[str, Any] = domain.new_state(task)
        self.closed = False

    def call(self, tool_call: ToolCall) -> Observation:
        if self.closed:
            raise RuntimeError("call() on a closed DialogSession")
        return Observation(
            "error: this conversation has no tools; reply in the stated format", True
        )

    def user_turn(self, assistant_message: Message) -> Message | None:
        if self.closed:
            raise RuntimeError("user_turn() on a closed DialogSession")
        reply = self.domain.step(self.task, self.state, assistant_message.content)
        return None if reply is None else Message("user", reply)

    def snapshot(self) -> dict[str, Any]:
        return copy.deepcopy(self.state)

    def restore(self, snapshot: Any) -> None:
        self.state = copy.deepcopy(snapshot)

    def close(self) -> None:
        self.closed = True


class DialogDomain(ABC):
    """Base of the `dialog` domains; see the module docstring."""

    id: str
    axes: Axes
    max_turns: int

    # -- what a subclass writes ------------------------------------------------------

    @abstractmethod
    def make(self, rng: random.Random, difficulty: int) -> Setup:
        """Written by each subclass."""

    @abstractmethod
    def respond(self, task: Task, state: dict[str, Any], text: str) -> str | None:
        """Written by each subclass."""

    @abstractmethod
    def judge(self, task: Task, state: dict[str, Any]) -> Verdict:
        """Written by each subclass."""

    @abstractmethod
    def solve(self, task: Task) -> list[str]:
        """Written by each subclass."""

    @abstractmethod
    def wrong(self, task: Task) -> list[list[str]]:
        """Written by each subclass."""

    def new_state(self, task: Task) -> dict[str, Any]:
        return new_counters()

    # -- shared machinery ------------------------------------------------------------

    def step(self, task: Task, state: dict[str, Any], text: str) -> str | None:
        """One assistant turn through the user; None once the game is over."""
        if state["over"]:
            return None
        state["turns"] += 1
        reply = self.respond(task, state, text if isinstance(text, str) else "")
        if reply is None or state["solved"] or state["turns"] >= task.meta["budget"]:
            state["over"] = True
            return None
        return reply

    def play(self, task: Task, turns: list[str]) -> dict[str, Any]:
        """The state after `turns`, played against a fresh user until the game ends."""
        state = self.new_state(task)
        for text in turns:
            if state["over"]:
                break
            self.step(task, state, text)
        return state

    # -- the Domain protocol -----------------------------------------------------------

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        s = self.make(task_rng(self.id, seed, difficulty), difficulty)
        if s.budget > self.max_turns:
            raise AssertionError(f"{self.id}: budget {s.budget} exceeds max_turns")
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=[Message("user", s.prompt)],
            answer=s.answer,
            difficulty=difficulty,
            seed=seed,
            meta={"world": s.world, "budget": s.budget, "measure": float(s.measure)},
        )

    def open(self, task: Task, sandbox: object | None = None) -> DialogSession:
        """A fresh scripted user for one episode of `task`; `sandbox` is not used."""
        return DialogSession(self, task)

    def reference(self, task: Task) -> Reference:
        return Reference([Message("assistant", t) for t in self.solve(task)])

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        return [Reference([Message("assistant", t) for t in w]) for w in self.wrong(task)]

    def difficulty_measure(self, task: Task) -> float:
        return float(task.meta["measure"])

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        try:
            return self.judge(task, self.play(task, [t.text for t in rollout.turns]))
        except Exception as exc:  # the verifier failed, not the answer
            return Verdict(
                0.0,
                False,
                "The verifier failed on this conversation.",
                {"solved": 0.0},
                error=f"{type(exc).__name__}: {exc}",
            )
