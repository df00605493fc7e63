"""`dialog/twenty-questions-v1`: find the hidden object of a catalog with yes/no questions.

The prompt shows a catalog of N objects (6 at d=1 to 48 at d=10), each with A attributes
(3 to 6) such as `colour=red`, all attribute tuples distinct; the user has picked one.
Each turn is either a question `Q: <attribute>=<value>?` (answered `yes` or `no`) or
the one final `GUESS: <name>`, which ends the game. Questions about an unknown attribute
or value, and any other text, are malformed and answered with the format. The game is
won when the guess names the hidden object within the budget of turns
(`max(ceil(log2 N) + 3, reference turns)`). Difficulty measure: log2 N.

The reference asks, each turn, the question whose answer splits the remaining candidates
most evenly (first in catalog order on ties), then guesses the last one left.

Not guaranteed: the catalog is synthetic (names from `NAMES`, attributes drawn at
random), so the objects are not real things with those properties.
"""

from __future__ import annotations

import math
import random
import re
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.dialog.framework import DialogDomain, Setup, new_counters, protocol_value
from posttrain.types import Task, Verdict

ATTRIBUTES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("colour", ("red", "blue", "green", "yellow", "black")),
    ("size", ("tiny", "small", "medium", "large")),
    ("material", ("wood", "metal", "plastic", "glass")),
    ("shape", ("round", "square", "long", "flat")),
    ("room", ("kitchen", "garage", "bedroom", "office")),
    ("weight", ("light", "heavy")),
)
_NAME_TEXT = """
    anvil basket bucket button candle carpet chisel clock comb cushion desk drum easel
    fan fork funnel globe hammer helmet jar kettle key ladder lamp lantern mirror mug
    needle oar pan pencil pillow plate pot radio rake ruler saw scarf shovel sieve spoon
    stool tape teapot tongs towel tray trowel vase wallet whisk wrench
    """
NAMES: tuple[str, ...] = tuple(_NAME_TEXT.split())
_QUESTION = re.compile(r"([a-z]+)=([a-z]+)\?")


def _shape(difficulty: int) -> tuple[int, int]:
    """(objects, attributes) at `difficulty`."""
    return round(6 * 2 ** ((difficulty - 1) / 3)), 3 + (difficulty - 1) // 3


def best_question(
    catalog: dict[str, dict[str, str]], alive: list[str], attributes: list[str]
) -> tuple[str, str]:
    """The (attribute, value) whose yes-set is closest to half of `alive`."""
    best: tuple[int, str, str] | None = None
    for attribute in attributes:
        values = dict(ATTRIBUTES)[attribute]
        for value in values:
            yes = sum(catalog[name][attribute] == value for name in alive)
            if 0 < yes < len(alive):
                score = max(yes, len(alive) - yes)
                if best is None or score < best[0]:
                    best = (score, attribute, value)
    assert best is not None, "distinct objects can always be told apart"
    return best[1], best[2]


def reference_game(catalog: dict[str, dict[str, str]], attributes: list[str], secret: str) -> list[str]:  # fmt: skip
    alive = sorted(catalog)
    turns = []
    while len(alive) > 1:
        attribute, value = best_question(catalog, alive, attributes)
        turns.append(f"Q: {attribute}={value}?")
        answer = catalog[secret][attribute] == value
        alive = [n for n in alive if (catalog[n][attribute] == value) == answer]
    return turns + [f"GUESS: {alive[0]}"]


class TwentyQuestionsDomain(DialogDomain):
    """Identify the hidden catalog object with attribute questions."""

    id = "dialog/twenty-questions-v1"
    axes = Axes("conversation", "none", "multi", "exact")
    max_turns = 16

    def make(self, rng: random.Random, difficulty: int) -> Setup:
        count, width = _shape(difficulty)
        attributes = [name for name, _ in ATTRIBUTES[:width]]
        names = sorted(rng.sample(NAMES, count))
        catalog: dict[str, dict[str, str]] = {}
        taken: list[tuple[str, ...]] = []
        for name in names:
            while True:
                row = tuple(rng.choice(dict(ATTRIBUTES)[a]) for a in attributes)
                if row not in taken:
                    break
            taken.append(row)
            catalog[name] = dict(zip(attributes, row, strict=True))
        secret = rng.choice(names)
        game = reference_game(catalog, attributes, secret)
        budget = max(math.ceil(math.log2(count)) + 3, len(game))
        lines = [f"{n}: " + ", ".join(f"{a}={catalog[n][a]}" for a in attributes) for n in names]
        prompt = (
            "I have picked one object from this catalog:\n"
            + "\n".join(lines)
            + "\nFind it by asking yes/no questions. Each of your turns must be exactly one "
            "line: either a question `Q: <attribute>=<value>?` (for example "
            f"`Q: {attributes[0]}={catalog[names[0]][attributes[0]]}?`), which I answer "
            "`yes` or `no`, or your one final answer `GUESS: <name>`, which ends the game. "
            f"You have {budget} turns in all; a malformed turn uses one of them."
        )
        world = {"catalog": catalog, "attributes": attributes, "secret": secret, "game": game}
        return Setup(prompt, secret, world, budget, math.log2(count))

    def new_state(self, task: Task) -> dict[str, Any]:
        return {**new_counters(), "guessed": "", "questions": 0}

    def respond(self, task: Task, state: dict[str, Any], text: str) -> str | None:
        world = task.meta["world"]
        guess = protocol_value(text, "GUESS")
        if guess is not None and guess in world["catalog"]:
            state["guessed"] = guess
            state["solved"] = guess == world["secret"]
            return None
        question = protocol_value(text, "Q")
        match = _QUESTION.fullmatch(question) if question is not None else None
        if match is None or match.group(1) not in world["attributes"]:
            state["malformed"] += 1
            return (
                "Please reply with exactly one line: `Q: <attribute>=<value>?` using the "
                "catalog's attributes and values, or `GUESS: <name>` with a catalog name."
            )
        attribute, value = match.group(1), match.group(2)
        if value not in dict(ATTRIBUTES)[attribute]:
            state["malformed"] += 1
            return f"`{value}` is not a value of {attribute}; ask about a value from the catalog."
        state["questions"] += 1
        return "yes" if world["catalog"][world["secret"]][attribute] == value else "no"

    def judge(self, task: Task, state: dict[str, Any]) -> Verdict:
        budget = task.meta["budget"]
        components = {
            "solved": float(state["solved"]),
            "turns_used": float(state["turns"]),
            "questions": float(state["questions"]),
            "malformed": float(state["malformed"]),
        }
        if state["solved"]:
            return Verdict(1.0, True, f"Named the object in {state['turns']} turns.", components)
        if state["guessed"]:
            why = f"The guess {state['guessed']!r} is not the hidden object."
        else:
            why = f"No catalog object was guessed within the budget of {budget} turns."
        return Verdict(0.0, False, why, components)

    def solve(self, task: Task) -> list[str]:
        return list(task.meta["world"]["game"])

    def wrong(self, task: Task) -> list[list[str]]:
        """A guess before any question; the same question until the budget is spent; the
        name without the protocol; the reference's questions, then a wrong name."""
        reference = self.solve(task)
        world = task.meta["world"]
        others = [n for n in sorted(world["catalog"]) if n != world["secret"]]
        return [
            [f"GUESS: {others[0]}"],
            reference[:1] * self.max_turns,
            reference[:-1] + [world["secret"]],
            reference[:-1] + [f"GUESS: {others[-1]}"],
        ]


DOMAINS: tuple[DialogDomain, ...] = (TwentyQuestionsDomain(),)
