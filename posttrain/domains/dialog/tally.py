"""`dialog/running-tally-v1`: keep a running total while the user dictates a basket.

The user dictates items over B messages (2 at d=1 to 6 at d=10), each message holding
1 to 3 lines like `add 3 notebook at $2.50 each` or `remove 1 notebook at $2.50 each`
(a removal only takes back something added before, so the total never goes negative).
After every message the assistant replies exactly `TOTAL: <amount>` with the running
total in dollars and cents (`TOTAL: 12.50`); after the last one the user asks for the
grand total, answered the same way. Every turn is checked (numeric, to the cent): the
reward is 1 when all B + 1 totals are right, else half the fraction of right totals.
Difficulty measure: messages × the most lines a message may hold.

Not guaranteed: a malformed turn is counted as a wrong total and the dictation goes on
(the user repeats the format), so a model can recover but not redo a turn.
"""

from __future__ import annotations

import random
import re
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.dialog.framework import DialogDomain, Setup, new_counters, protocol_value
from posttrain.types import Task, Verdict

GOODS = (
    "notebook", "pen", "stapler", "mug", "candle", "towel", "battery", "bulb", "sponge",
    "scissors", "envelope", "marker", "folder", "glue stick", "tape roll", "napkin pack",
)  # fmt: skip
FORMAT = "Please reply with exactly one line `TOTAL: <amount>`, e.g. `TOTAL: 12.50`."


def _shape(difficulty: int) -> tuple[int, int]:
    """(messages, most lines per message) at `difficulty`."""
    return 2 + (difficulty - 1) * 4 // 9, 1 + (difficulty - 1) * 2 // 9


def parse_cents(text: str) -> int | None:
    """Cents of a turn `TOTAL: 12.50` (one or two decimals, or none), else None."""
    value = protocol_value(text, "TOTAL")
    match = re.fullmatch(r"(\d{1,7})(?:\.(\d{1,2}))?", value) if value else None
    if match is None:
        return None
    return int(match.group(1)) * 100 + int((match.group(2) or "0").ljust(2, "0"))


def money(cents: int) -> str:
    return f"{cents // 100}.{cents % 100:02d}"


class RunningTallyDomain(DialogDomain):
    """Keep a running total of a dictated basket, turn by turn."""

    id = "dialog/running-tally-v1"
    axes = Axes("conversation", "none", "multi", "numeric")
    max_turns = 7

    def make(self, rng: random.Random, difficulty: int) -> Setup:
        count, widest = _shape(difficulty)
        basket: dict[str, list[int]] = {}  # name -> [quantity, unit cents]
        messages: list[list[str]] = []
        totals: list[int] = []
        total = 0
        for index in range(count):
            lines = []
            for _ in range(rng.randint(1, widest) if index else widest):
                held = [n for n in GOODS if basket.get(n, [0])[0] > 0]
                if held and index and rng.random() < 0.3:
                    name = rng.choice(held)
                    quantity, price = rng.randint(1, basket[name][0]), basket[name][1]
                    basket[name][0] -= quantity
                    total -= quantity * price
                    lines.append(f"remove {quantity} {name} at ${money(price)} each")
                    continue
                name = rng.choice(GOODS)
                price = basket[name][1] if name in basket else rng.randint(20, 2000)
                quantity = rng.randint(1, 9)
                basket[name] = [basket.get(name, [0, price])[0] + quantity, price]
                total += quantity * price
                lines.append(f"add {quantity} {name} at ${money(price)} each")
            messages.append(lines)
            totals.append(total)
        totals.append(total)
        prompt = (
            f"I'll dictate my shopping basket over {count} messages. After each message, "
            "reply with the running total of the whole basket so far, as exactly one line "
            "`TOTAL: <amount>` in dollars with cents (for example `TOTAL: 12.50`) and "
            "nothing else. `remove` takes items back out of the basket. At the end I'll "
            "ask for the grand total in the same format.\n\n" + "\n".join(messages[0])
        )
        world = {"messages": messages, "totals": totals}
        return Setup(prompt, money(total), world, count + 1, float(count * widest))

    def new_state(self, task: Task) -> dict[str, Any]:
        return {**new_counters(), "right": 0}

    def respond(self, task: Task, state: dict[str, Any], text: str) -> str | None:
        world = task.meta["world"]
        index = state["turns"] - 1
        cents = parse_cents(text)
        if cents is None:
            state["malformed"] += 1
        elif cents == world["totals"][index]:
            state["right"] += 1
        if index + 1 >= len(world["totals"]):
            state["solved"] = state["right"] == len(world["totals"])
            return None
        if index + 1 == len(world["messages"]):
            after = "That's everything. What is the grand total?"
        else:
            after = "\n".join(world["messages"][index + 1])
        return (FORMAT + "\n" if cents is None else "") + after

    def judge(self, task: Task, state: dict[str, Any]) -> Verdict:
        expected = len(task.meta["world"]["totals"])
        components = {
            "solved": float(state["solved"]),
            "turns_used": float(state["turns"]),
            "right_totals": state["right"] / expected,
            "malformed": float(state["malformed"]),
        }
        if state["solved"]:
            return Verdict(1.0, True, f"All {expected} totals are right.", components)
        reward = 0.5 * state["right"] / expected
        why = f"{state['right']} of {expected} totals are right ({state['malformed']} malformed)."
        return Verdict(reward, False, why, components)

    def solve(self, task: Task) -> list[str]:
        return [f"TOTAL: {money(c)}" for c in task.meta["world"]["totals"]]

    def wrong(self, task: Task) -> list[list[str]]:
        """Stop after the first total; the grand total a dollar off; every total without
        the protocol; the first total repeated (later items ignored)."""
        reference = self.solve(task)
        totals = task.meta["world"]["totals"]
        return [
            reference[:1] + ["I give up."],
            reference[:-1] + [f"TOTAL: {money(totals[-1] + 100)}"],
            [money(c) for c in totals],
            [reference[0]] * len(reference),
        ]


DOMAINS: tuple[DialogDomain, ...] = (RunningTallyDomain(),)
