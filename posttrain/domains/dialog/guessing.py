"""`dialog/guess-number-v2` and `dialog/mastermind-v1`: find a hidden code from feedback.

- guess-number: a whole number in a stated range; every turn is `GUESS: <n>` and the
  user answers "higher" or "lower". Every guess must lie inside the range the feedback
  so far allows (a guess outside it is a violation); the game must be won within
  `log2(range) + 2` guesses. Difficulty doubles the range (16 at d=1, 8192 at d=10).
- mastermind: a code of L digits from 1..K (repeats allowed); every turn is
  `GUESS: <L digits>` and the user answers `black=B white=W`. The game must be won
  within the stated budget. Difficulty grows K**L (64 at d=1, 16807 at d=10).

Both measure difficulty as log2 of the search space. The reference plays binary search
and "the first code consistent with all feedback" (lexicographic order).

Not guaranteed: mastermind budgets come from a table measured with the reference
strategy (exhaustively up to 2401 codes, on samples above), so some secret of the
largest spaces might need one more turn than the reference was seen to use.
"""

from __future__ import annotations

import itertools
import math
import random
import re
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.dialog.framework import (
    DialogDomain,
    Setup,
    new_counters,
    protocol_value,
    standard_verdict,
)
from posttrain.types import Task, Verdict


class GuessNumberDomain(DialogDomain):
    """Find a hidden number with higher/lower feedback."""

    id = "dialog/guess-number-v2"  # v2: "GUESS: ²" is malformed (v1 raised)
    axes = Axes("conversation", "none", "multi", "exact")
    max_turns = 15

    def make(self, rng: random.Random, difficulty: int) -> Setup:
        size = 2 ** (3 + difficulty)
        low = rng.randint(1, 9) * 10 ** rng.randint(0, 3)
        high = low + size - 1
        secret = rng.randint(low, high)
        budget = 3 + difficulty + 2
        prompt = (
            f"I am thinking of a whole number from {low} to {high} (inclusive). Find it.\n"
            "Each of your turns must be exactly one line `GUESS: <number>` "
            "(for example `GUESS: 17`) and nothing else. I will answer `higher` "
            "(my number is greater than your guess) or `lower` (it is smaller); the game "
            "ends when you guess it. Every guess must be inside the range my answers still "
            f"allow. You have {budget} turns; a malformed turn uses one of them."
        )
        world = {"low": low, "high": high, "secret": secret}
        return Setup(prompt, str(secret), world, budget, math.log2(size))

    def new_state(self, task: Task) -> dict[str, Any]:
        world = task.meta["world"]
        return {**new_counters(), "low": world["low"], "high": world["high"]}

    def respond(self, task: Task, state: dict[str, Any], text: str) -> str | None:
        value = protocol_value(text, "GUESS")
        # ASCII digits only: str.isdigit() also takes '²' and '①', which int() refuses.
        if value is None or not re.fullmatch("[0-9]{1,12}", value):
            state["malformed"] += 1
            return "Please reply with exactly one line `GUESS: <number>`, e.g. `GUESS: 17`."
        guess, secret = int(value), int(task.meta["world"]["secret"])
        if not state["low"] <= guess <= state["high"]:
            state["violations"] += 1
        if guess == secret:
            state["solved"] = True
            return None
        if guess < secret:
            state["low"] = max(state["low"], guess + 1)
            return "higher"
        state["high"] = min(state["high"], guess - 1)
        return "lower"

    def judge(self, task: Task, state: dict[str, Any]) -> Verdict:
        return standard_verdict(state, task.meta["budget"], "Found the number")

    def solve(self, task: Task) -> list[str]:
        world = task.meta["world"]
        low, high, secret = world["low"], world["high"], world["secret"]
        turns = []
        while True:
            guess = (low + high) // 2
            turns.append(f"GUESS: {guess}")
            if guess == secret:
                return turns
            low, high = (guess + 1, high) if guess < secret else (low, guess - 1)

    def wrong(self, task: Task) -> list[list[str]]:
        """Give up after one guess; one out-of-range guess inserted; a consistent scan from
        the far end (over budget); the reference with a bare number as its last turn."""
        world = task.meta["world"]
        low, high, secret = world["low"], world["high"], world["secret"]
        reference = self.solve(task)
        far = range(high, high - 40, -1) if secret <= (low + high) // 2 else range(low, low + 40)
        return [
            reference[:1] + ["I give up."],
            reference[:-1] + [f"GUESS: {high + 1}", reference[-1]],
            [f"GUESS: {g}" for g in far],
            reference[:-1] + [str(secret)],
        ]


# Worst reference game measured per (length, colours), plus 2 turns of slack (see "Not guaranteed").
_MASTERMIND = {
    1: (3, 4, 8),
    2: (3, 5, 9),
    3: (3, 6, 10),
    4: (4, 4, 9),
    5: (4, 5, 10),
    6: (4, 6, 11),
    7: (4, 7, 12),
    8: (5, 5, 12),
    9: (5, 6, 12),
    10: (5, 7, 14),
}


def pegs(secret: str, guess: str) -> tuple[int, int]:
    """(black, white): right digit right place, right digit wrong place.

    >>> pegs("1123", "1312")
    (1, 2)
    """
    black = sum(a == b for a, b in zip(secret, guess, strict=True))
    common = sum(min(secret.count(c), guess.count(c)) for c in "123456789")
    return black, common - black


class MastermindDomain(DialogDomain):
    """Crack a digit code with black/white peg feedback."""

    id = "dialog/mastermind-v1"
    axes = Axes("conversation", "none", "multi", "exact")
    max_turns = 14

    def make(self, rng: random.Random, difficulty: int) -> Setup:
        length, colours, budget = _MASTERMIND[difficulty]
        secret = "".join(str(rng.randint(1, colours)) for _ in range(length))
        prompt = (
            f"I have a secret code of {length} digits, each from 1 to {colours} "
            "(digits may repeat). Crack it.\n"
            f"Each of your turns must be exactly one line `GUESS: <{length} digits>` "
            f"(for example `GUESS: {'1' * length}`) and nothing else. I answer "
            "`black=B white=W`: B digits are right and in the right place, W more digits "
            "are in the code but in another place. The game ends when you get all "
            f"{length} black. You have {budget} turns; a malformed turn uses one of them."
        )
        world = {"length": length, "colours": colours, "secret": secret}
        return Setup(prompt, secret, world, budget, length * math.log2(colours))

    def _parse(self, task: Task, text: str) -> str | None:
        world = task.meta["world"]
        value = protocol_value(text, "GUESS")
        allowed = "123456789"[: world["colours"]]
        if value is None or len(value) != world["length"]:
            return None
        return value if all(c in allowed for c in value) else None

    def respond(self, task: Task, state: dict[str, Any], text: str) -> str | None:
        guess = self._parse(task, text)
        world = task.meta["world"]
        if guess is None:
            state["malformed"] += 1
            return (
                f"Please reply with exactly one line `GUESS: <{world['length']} digits>`, "
                f"each digit from 1 to {world['colours']}."
            )
        black, white = pegs(world["secret"], guess)
        if black == world["length"]:
            state["solved"] = True
            return None
        return f"black={black} white={white}"

    def judge(self, task: Task, state: dict[str, Any]) -> Verdict:
        return standard_verdict(state, task.meta["budget"], "Cracked the code")

    def solve(self, task: Task) -> list[str]:
        world = task.meta["world"]
        digits = "123456789"[: world["colours"]]
        candidates = ["".join(p) for p in itertools.product(digits, repeat=world["length"])]
        turns = []
        while True:
            guess = candidates[0]
            turns.append(f"GUESS: {guess}")
            if guess == world["secret"]:
                return turns
            seen = pegs(world["secret"], guess)
            candidates = [c for c in candidates if pegs(c, guess) == seen]

    def wrong(self, task: Task) -> list[list[str]]:
        """Give up after one guess; the code without the protocol; one guess repeated over
        the budget; the reference with its last guess off by one digit."""
        reference = self.solve(task)
        secret = task.meta["world"]["secret"]
        colours = task.meta["world"]["colours"]
        last = str(int(secret[-1]) % colours + 1)
        near = reference[:-1] + [f"GUESS: {secret[:-1]}{last}"]
        return [
            reference[:1] + ["I give up."],
            reference[:-1] + [secret],
            [reference[0]] * self.max_turns,
            near,
        ]


DOMAINS: tuple[DialogDomain, ...] = (GuessNumberDomain(), MastermindDomain())
