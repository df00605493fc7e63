"""`AnswerDomain`: the shared body of single-turn domains judged on one final answer.

A subclass sets `id`, `axes` and a one-line `instructions` (the answer format, appended
to every prompt) and writes three methods (abstract here, so a subclass that forgets
one fails when it is instantiated, not when a task reaches it):

- `make(rng, difficulty) -> Problem` — the prompt text, the canonical answer (which is
  also the reference's final text), JSON-able `meta`, and the `measure` that grows with
  difficulty; a conversational prompt also gives the earlier messages as `history`;
- `judge(task, text) -> Verdict` — the verdict for the model's final text; build it with
  `verdict(...)` so the reward, components and reason stay consistent;
- `wrong(task) -> list[str]` — at least three known-wrong final texts (off by one, right
  format wrong value, partial answer ...), used by `corrupt`.

`generate`, `reference`, `verify`, `corrupt` and `difficulty_measure` come from here:

    class Double(AnswerDomain):
        id = "arith/double-v1"
        axes = Axes("text", "none", "single", "exact")
        instructions = "Reply with the integer only."

        def make(self, rng, difficulty):
            n = rng.randint(0, 10**difficulty)
            return Problem(f"Double {n}.", str(2 * n), {"n": n}, measure=difficulty)

        def judge(self, task, text):
            return verdict(strict_integer(text) == int(task.answer), "the doubled number")

        def wrong(self, task):
            n = int(task.answer)
            return [str(n + 1), str(n - 2), str(n // 2)]

`verify` never raises: a `judge` that raises becomes a Verdict with `error` set and
reward 0 (a verifier failure, not a wrong answer), and non-string text scores 0.

Not guaranteed: `make` must draw every random choice from the `rng` it is given
(seeded by `task_rng`) and must not iterate over sets of strings, or the task depends
on PYTHONHASHSEED; `posttrain domains check` is what catches that.
"""

from __future__ import annotations

import random
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.types import Message, Reference, Rollout, Task, Verdict


@dataclass(frozen=True)
class Problem:
    """What `make` returns: one generated problem, before it becomes a `Task`.

    `history` is the conversation shown before the prompt (earlier user, assistant and
    tool messages); the prompt, with the instructions, is the last user message."""

    prompt: str
    answer: str
    meta: dict[str, Any] = field(default_factory=dict)
    measure: float = 0.0
    history: tuple[Message, ...] = ()


def verdict(
    passed: bool,
    what: str,
    *,
    components: dict[str, float] | None = None,
    reward: float | None = None,
    why: str = "",
) -> Verdict:
    """A verdict whose reason names `what` the answer had to be.

    `reward` defaults to 1.0 when passed and 0.0 otherwise; give it for partial credit
    (it is clipped to [0, 1], and a failed answer never gets 1). `components` default
    to `{"correct": passed}`. `why` adds the failure's detail to the reason.

    >>> verdict(True, "the sum").reason
    'Correct: the sum.'
    >>> v = verdict(False, "the sum", why="got 12")
    >>> (v.reward, v.reason)
    (0.0, 'Wrong: expected the sum; got 12.')
    >>> verdict(False, "the set", reward=0.5).reward
    0.5
    """
    if reward is None:
        reward = 1.0 if passed else 0.0
    reward = min(max(float(reward), 0.0), 1.0)
    if not passed:
        reward = min(reward, 0.99)
    if components is None:
        components = {"correct": float(passed)}
    if passed:
        reason = f"Correct: {what}."
    else:
        reason = f"Wrong: expected {what}" + (f"; {why}" if why else "") + "."
    return Verdict(reward, passed, reason, components)


class AnswerDomain(ABC):
    """Base of single-turn, one-final-answer domains; see the module docstring."""

    id: str
    axes: Axes
    instructions: ClassVar[str]
    max_turns = 1
    accepts_prose = False

    # -- what a subclass writes ------------------------------------------------------

    @abstractmethod
    def make(self, rng: random.Random, difficulty: int) -> Problem:
        """Written by each subclass."""

    @abstractmethod
    def judge(self, task: Task, text: str) -> Verdict:
        """Written by each subclass."""

    @abstractmethod
    def wrong(self, task: Task) -> list[str]:
        """Written by each subclass."""

    # -- the Domain protocol -----------------------------------------------------------

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        problem = self.make(task_rng(self.id, seed, difficulty), difficulty)
        prompt = problem.prompt.rstrip() + "\n\n" + self.instructions
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=[*problem.history, Message("user", prompt)],
            answer=problem.answer,
            difficulty=difficulty,
            seed=seed,
            meta={**problem.meta, "measure": float(problem.measure)},
        )

    def reference(self, task: Task) -> Reference:
        return Reference.single(task.answer)

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        text = rollout.final_text
        if not isinstance(text, str) or not text.strip():
            return Verdict(0.0, False, "The final text is empty.", {"correct": 0.0})
        try:
            return self.judge(task, text)
        except Exception as exc:  # the verifier failed, not the answer
            return Verdict(
                0.0,
                False,
                "The verifier failed on this answer.",
                {"correct": 0.0},
                error=f"{type(exc).__name__}: {exc}",
            )

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        """The subclass's known-wrong answers, minus any that equal the reference."""
        right = reference.final
        return [Reference.single(text) for text in self.wrong(task) if text != right]

    def difficulty_measure(self, task: Task) -> float:
        return float(task.meta["measure"])
