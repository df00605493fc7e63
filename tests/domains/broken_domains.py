"""Deliberately broken domains: each breaks exactly one self-check property.

Module-level classes, so the check's fresh processes can unpickle them.
"""

from __future__ import annotations

import random

from posttrain.domains.arithmetic import AdditionDomain
from posttrain.domains.base import Session
from posttrain.types import Reference, Rollout, Task, Verdict


class WrongReference(AdditionDomain):
    """The reference is off by one: `reference` must fail."""

    id = "broken/wrong-reference-v1"

    def reference(self, task: Task) -> Reference:
        return Reference.single(str(int(task.answer) + 1))


class RaisesOnJunk(AdditionDomain):
    """The verifier crashes on text that is not a number: `junk` must fail."""

    id = "broken/raises-on-junk-v1"

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        if not rollout.final_text.strip().isdigit():
            raise ValueError("cannot parse")
        return super().verify(task, rollout, session)


class CorruptionPasses(AdditionDomain):
    """One 'corruption' is the right answer: `corruptions` must fail."""

    id = "broken/corruption-passes-v1"

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        return [*super().corrupt(task, reference), Reference.single(task.answer)]


class Nondeterministic(AdditionDomain):
    """Operands from the global RNG, seeded per process: `determinism` must fail."""

    id = "broken/nondeterministic-v1"

    def generate(self, seed: int, difficulty: int) -> Task:
        task = super().generate(seed, difficulty)
        task.meta["noise"] = random.random()
        return task


class BadAxes(AdditionDomain):
    """A matrix cell outside the axes: `api` must fail."""

    id = "broken/bad-axes-v1"
    axes = AdditionDomain.axes.__class__("text", "none", "single", "vibes")  # type: ignore[arg-type]


class ShrinkingDifficulty(AdditionDomain):
    """Harder tasks measure smaller: `difficulty` must fail."""

    id = "broken/shrinking-difficulty-v1"

    def difficulty_measure(self, task: Task) -> float:
        return -float(task.difficulty)


BROKEN = {
    WrongReference: "reference",
    RaisesOnJunk: "junk",
    CorruptionPasses: "corruptions",
    Nondeterministic: "determinism",
    BadAxes: "api",
    ShrinkingDifficulty: "difficulty",
}
