"""`vowels/count-v1`: how many vowels (a, e, i, o, u) are in a made-up word?

An example of a third-party posttrain domain: one `AnswerDomain` subclass, registered
through the `posttrain.domains` entry point in this package's pyproject.toml. After
`pip install .`, `posttrain domains list --family vowels` shows it and
`posttrain domains check vowels/count-v1` checks it.
"""

from __future__ import annotations

import random

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes
from posttrain.types import Task, Verdict
from posttrain.verify.answers import strict_integer

LETTERS = "abcdefghijklmnopqrstuvwxyz"


class VowelCount(AnswerDomain):
    """Count the vowels of a random lowercase word; longer words at higher difficulty."""

    id = "vowels/count-v1"
    axes = Axes("text", "none", "single", "exact")
    instructions = "Reply with the number only."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        length = 3 + 3 * difficulty
        word = "".join(rng.choice(LETTERS) for _ in range(length))
        count = sum(ch in "aeiou" for ch in word)
        return Problem(f"How many vowels are in {word!r}?", str(count), {"word": word}, length)

    def judge(self, task: Task, text: str) -> Verdict:
        got = strict_integer(text)
        return verdict(got == int(task.answer), f"{task.answer} vowels", why=f"got {text[:30]!r}")

    def wrong(self, task: Task) -> list[str]:
        n = int(task.answer)
        return [str(n + 1), str(n + 2), str(len(task.meta["word"]))]


VOWELS = VowelCount()
