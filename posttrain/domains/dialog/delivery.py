"""`dialog/delivery-slot-v1`: book a delivery slot while the user reveals constraints.

Slots are a weekday (Mon..Fri) and a start hour (08:00..17:00). The user has K hidden
constraints (2 at d=1 to 8 at d=10), all met by at least one slot. Each turn is
`PROPOSE: <Day> <HH>:00` (for example `PROPOSE: Tue 09:00`). A slot meeting every
constraint is booked and ends the game; otherwise the user reveals the first hidden
constraint (in its fixed order) the slot breaks. A proposal that breaks a constraint
already revealed is a violation. The user wants the earliest slot of the week that meets
every constraint, so the verdict (validity) needs the booked slot to meet all
constraints and no earlier slot to meet them, within the budget of K + 2 turns and
with no violation. Difficulty measure: K.

The reference proposes, each turn, the earliest slot meeting every revealed constraint;
each rejection reveals a new constraint, so it needs at most K + 1 turns.

Not guaranteed: constraints are drawn around one hidden slot, so a lucky early
proposal can hit the earliest feasible slot before every constraint is revealed.
"""

from __future__ import annotations

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

DAYS = ("Mon", "Tue", "Wed", "Thu", "Fri")
HOURS = tuple(range(8, 18))
SLOTS = tuple((d, h) for d in range(len(DAYS)) for h in HOURS)
Constraint = list[Any]  # [kind, *ints]; JSON so it lives in task.meta


def allows(rule: Constraint, day: int, hour: int) -> bool:
    kind = rule[0]
    if kind == "not_day":
        return day != rule[1]
    if kind == "days":
        return day in rule[1:]
    if kind == "from":
        return hour >= rule[1]
    if kind == "before":
        return hour < rule[1]
    if kind == "busy":
        return not rule[1] <= hour < rule[2]
    if kind == "late_on":
        return day != rule[1] or hour >= rule[2]
    raise ValueError(f"unknown constraint kind {kind!r}")


def describe(rule: Constraint) -> str:
    kind = rule[0]
    if kind == "not_day":
        return f"I can't take a delivery on {DAYS[rule[1]]}."
    if kind == "days":
        return "It has to be on " + " or ".join(DAYS[d] for d in rule[1:]) + "."
    if kind == "from":
        return f"It must start at {rule[1]:02d}:00 or later."
    if kind == "before":
        return f"It must start before {rule[1]:02d}:00."
    if kind == "busy":
        return f"I'm out every day from {rule[1]:02d}:00 until {rule[2]:02d}:00."
    return f"On {DAYS[rule[1]]} I'm only home from {rule[2]:02d}:00."


def _draw(rng: random.Random, day: int, hour: int) -> Constraint:
    """One random constraint that the slot (day, hour) meets."""
    kind = rng.choice(("not_day", "days", "from", "before", "busy", "late_on"))
    others = [d for d in range(len(DAYS)) if d != day]
    if kind == "not_day":
        return ["not_day", rng.choice(others)]
    if kind == "days":
        return ["days", *sorted([day, *rng.sample(others, rng.randint(1, 2))])]
    if kind == "from":
        return ["from", rng.randint(HOURS[0] + 1, hour)] if hour > HOURS[0] else ["before", 18]
    if kind == "before":
        return ["before", rng.randint(hour + 1, 18)]
    if kind == "busy":
        start = rng.randint(HOURS[0], 16)
        end = start + rng.randint(1, 3)
        return ["busy", start, end] if not start <= hour < end else ["not_day", rng.choice(others)]
    return ["late_on", rng.choice(others), rng.randint(10, 16)]


def parse_slot(text: str) -> tuple[int, int] | None:
    value = protocol_value(text, "PROPOSE")
    match = re.fullmatch(r"(Mon|Tue|Wed|Thu|Fri) (\d\d):00", value) if value else None
    if match is None or int(match.group(2)) not in HOURS:
        return None
    return DAYS.index(match.group(1)), int(match.group(2))


def slot_text(day: int, hour: int) -> str:
    return f"PROPOSE: {DAYS[day]} {hour:02d}:00"


class DeliverySlotDomain(DialogDomain):
    """Find a slot that meets constraints the user reveals one per turn."""

    id = "dialog/delivery-slot-v1"
    axes = Axes("conversation", "none", "multi", "validity")
    max_turns = 10

    def make(self, rng: random.Random, difficulty: int) -> Setup:
        count = 2 + (difficulty - 1) * 2 // 3
        while True:
            day, hour = rng.choice(SLOTS)
            rules = [_draw(rng, day, hour) for _ in range(count)]
            game = self._game(rules)
            if len(game) >= 2 + count // 3:  # the earliest slots must not settle it
                break
        budget = count + 2
        prompt = (
            "Please book a delivery for me. Deliveries start on the hour, 08:00 to 17:00, "
            "Monday to Friday. I want the earliest slot of the week (Mon 08:00 is the earliest, Fri 17:00 the latest) that meets all my constraints, but I'll only mention one when a "
            "proposal breaks it.\nEach of your turns must be exactly one line "
            "`PROPOSE: <Day> <HH>:00` with Day one of Mon Tue Wed Thu Fri (for example "
            "`PROPOSE: Tue 09:00`) and nothing else. If the slot meets all my constraints I book it, so a later slot than needed is a loss; if "
            "not, I tell you one constraint it breaks. Never propose a slot that breaks a "
            f"constraint I already told you. You have {budget} turns; a malformed turn uses "
            "one of them."
        )
        feasible = [[d, h] for d, h in SLOTS if all(allows(r, d, h) for r in rules)]
        earliest = list(parse_slot(game[-1]) or ())
        world = {"rules": rules, "game": game, "earliest": earliest}
        return Setup(prompt, feasible, world, budget, float(count))

    def _game(self, rules: list[Constraint]) -> list[str]:
        known: list[Constraint] = []
        turns = []
        while True:
            day, hour = next(s for s in SLOTS if all(allows(r, *s) for r in known))
            turns.append(slot_text(day, hour))
            broken = [r for r in rules if not allows(r, day, hour)]
            if not broken:
                return turns
            known.append(broken[0])

    def new_state(self, task: Task) -> dict[str, Any]:
        return {**new_counters(), "revealed": [], "booked": ""}

    def respond(self, task: Task, state: dict[str, Any], text: str) -> str | None:
        slot = parse_slot(text)
        if slot is None:
            state["malformed"] += 1
            return "Please reply with exactly one line `PROPOSE: <Day> <HH>:00`, 08:00 to 17:00."
        rules = task.meta["world"]["rules"]
        again = [i for i in state["revealed"] if not allows(rules[i], *slot)]
        if again:
            state["violations"] += 1
            return "That breaks what I already told you: " + describe(rules[again[0]])
        fresh = [i for i, r in enumerate(rules) if not allows(r, *slot)]
        if not fresh:
            state["booked"] = f"{DAYS[slot[0]]} {slot[1]:02d}:00"
            state["solved"] = list(slot) == task.meta["world"]["earliest"]
            return None
        state["revealed"].append(fresh[0])
        return "That doesn't work. " + describe(rules[fresh[0]])

    def judge(self, task: Task, state: dict[str, Any]) -> Verdict:
        verdict = standard_verdict(state, task.meta["budget"], "Booked the earliest suitable slot")
        if state["booked"] and not state["solved"]:
            verdict.reason = (
                f"Booked {state['booked']}, but an earlier slot meets every constraint."
            )
        return verdict

    def solve(self, task: Task) -> list[str]:
        return list(task.meta["world"]["game"])

    def wrong(self, task: Task) -> list[list[str]]:
        """Give up after one proposal; the first rejected slot proposed again before the
        rest; that slot repeated over the budget; the right slot without the protocol."""
        reference = self.solve(task)
        bare = reference[-1].removeprefix("PROPOSE: ")
        return [
            reference[:1] + ["I give up."],
            reference[:1] + reference[:1] + reference[1:],
            reference[:1] * self.max_turns,
            reference[:-1] + [bare],
        ]


DOMAINS: tuple[DialogDomain, ...] = (DeliverySlotDomain(),)
