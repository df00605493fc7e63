"""`arith/addition-v1`: add two non-negative integers; the answer is the sum's digits.

The prompt is one short user message, `"{a}+{b}"`, so a tiny character-level model
can learn the task on a CPU. Difficulty sets the operand lengths, from (1, 1)
digits at d=1 to (3, 3) at d=10 (table `_DIGITS`), a range a ~1M-parameter
model learns in minutes on a CPU. Multi-digit operands never
start with 0.

The verdict has three components: `format` (the final text is exactly one integer),
`correct` (the last integer in the final text is the sum) and `digits` (the share of
the sum's digit places a well-formed answer gets right, for dense shaping with
`grpo.reward_component=digits`); the reward is 1 only when `format` and `correct` hold.

Not guaranteed: `difficulty_measure` (total digits) is equal for some neighbouring
difficulties: it never decreases with difficulty but is not strictly increasing.
"""

from __future__ import annotations

import random
from typing import Any

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.types import Message, Reference, Rollout, Task, Verdict
from posttrain.verify.answers import last_integer, strict_integer


def operand_digits(difficulty: int) -> tuple[int, int]:
    """The digit counts of the two operands at `difficulty` (1..10): (1, 1) up to (3, 3)."""
    return _DIGITS[difficulty - 1]


_DIGITS = [(1, 1), (2, 1), (2, 1), (2, 2), (2, 2), (3, 1), (3, 2), (3, 2), (3, 3), (3, 3)]


def _number(rng: random.Random, digits: int) -> int:
    if digits == 1:
        return rng.randint(0, 9)
    return rng.randint(10 ** (digits - 1), 10**digits - 1)


def digits_right(value: int, expected: int) -> float:
    """The share of digit places, counted from the ones place over the longer of the two
    numbers, where `value` has `expected`'s digit (partial credit: 0.75 for 1244 against
    1234, and for 234); exactly 1.0 only for the right sum."""
    got, want = str(value), str(expected)
    width = max(len(got), len(want))
    got, want = got.rjust(width), want.rjust(width)
    return sum(a == b for a, b in zip(got, want, strict=True)) / width


class AdditionDomain:
    """Add two integers written in the prompt as `a+b`."""

    id = "arith/addition-v1"
    axes = Axes("text", "none", "single", "exact")
    max_turns = 1

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        rng = task_rng(self.id, seed, difficulty)
        first, second = operand_digits(difficulty)
        a, b = _number(rng, first), _number(rng, second)
        return Task(
            id=task_id(self.id, seed, difficulty),
            domain=self.id,
            prompt=[Message("user", f"{a}+{b}")],
            answer=str(a + b),
            difficulty=difficulty,
            seed=seed,
            meta={"operands": [a, b]},
        )

    def reference(self, task: Task) -> Reference:
        return Reference.single(task.answer)

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        text = rollout.final_text if isinstance(rollout.final_text, str) else ""
        expected = int(task.answer)
        value = strict_integer(text)
        well_formed = value is not None
        correct = last_integer(text) == expected
        components = {
            "format": float(well_formed),
            "correct": float(correct),
            "digits": digits_right(value, expected) if value is not None else 0.0,
        }
        if well_formed and correct:
            reason = "The answer is the correct sum."
        elif not text.strip():
            reason = "The final text is empty."
        elif well_formed:
            reason = f"The answer is not the sum; expected {expected}."
        elif correct:
            reason = "The sum appears, but the final text is not just the integer."
        else:
            reason = "The final text is not an integer and does not end with the sum."
        passed = well_formed and correct
        return Verdict(float(passed), passed, reason, components)

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        """Off by one either way, the last two digits swapped, and a bare zero."""
        total = int(task.answer)
        digits = str(total)
        if len(digits) >= 2 and digits[-1] != digits[-2]:
            swapped = digits[:-2] + digits[-1] + digits[-2]
        else:
            swapped = str(total + 10)
        zero = "0" if total != 0 else ""
        wrong = [str(total + 1), str(total - 1), swapped, zero]
        return [Reference.single(text) for text in wrong]

    def difficulty_measure(self, task: Task) -> float:
        """The operands' total digit count."""
        operands: list[Any] = task.meta["operands"]
        return float(sum(len(str(x)) for x in operands))
