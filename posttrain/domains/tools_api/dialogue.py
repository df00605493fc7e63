"""Conversation tasks: a scripted user who talks to the agent over several turns.

- `tools/slot-filling-v1` — a customer wants a shipping quote but leaves out one to
  three details (destination, weight, service). The scripted user gives a missing
  detail only when asked (an assistant message with a "?"; the detail named in the
  question, else the next one); the agent must ask, call `quote` with all four
  details (after they were told: a quote on guessed details does not count) and
  reply with the price. `measure` = missing details + cities.
- `tools/follow-up-v1` — a user asks a chain of questions about a fictional
  encyclopedia, each about the answer to the last ("Which company does X work
  for?" → "Where is that company headquartered?" → ...). Every answer turn is
  scored: the reward is the share of answers right, when the needed records were
  looked up. `measure` = questions.

Not guaranteed: the scripted user matches keywords, not meaning ("where" counts as
asking for the destination); `follow-up` takes every turn without a tool call as an
answer, so chatter between questions costs credit.
"""

from __future__ import annotations

import random
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.tools_api import services
from posttrain.domains.tools_api.framework import (
    ApiDomain,
    Plan,
    Scenario,
    ToolError,
    ToolSpec,
    Trace,
    call,
    close_enough,
    graded,
    money,
    same_text,
    strict_decimal,
)
from posttrain.domains.tools_api.retrieval import (
    LOOKUP,
    SEARCH_NAMES,
    looked_up,
    serve_encyclopedia,
)
from posttrain.tools import parse_tool_calls
from posttrain.types import Rollout, Task, Verdict

SLOTS = ("destination", "weight_kg", "service")
_KEYWORDS = {
    "destination": ("destination", "where", "deliver", "send it to", "city"),
    "weight_kg": ("weight", "weigh", "heavy", "kg", "kilo"),
    "service": ("service", "express", "standard", "speed", "fast"),
}
_QUESTIONS = {
    "destination": "What is the destination city?",
    "weight_kg": "How much does the parcel weigh, in kg?",
    "service": "Which service would you like: standard or express?",
}


def quote_price(
    world: dict[str, Any], origin: str, destination: str, weight: float, service: str
) -> float:
    zones, tariff = world["zones"], world["tariff"]
    for city in (origin, destination):
        if city not in zones:
            raise ToolError(f"no service to {city[:40]!r}; cities served: {', '.join(zones)}")
    if service not in tariff:
        raise ToolError("service must be 'standard' or 'express'")
    if not 0 < weight <= 1000:
        raise ToolError("weight_kg must be above 0 and at most 1000")
    distance = abs(zones[origin] - zones[destination]) + 1
    base, per_kg = tariff[service]
    return round(base + per_kg * distance * weight, 2)


class SlotFillingDomain(ApiDomain):
    """Get a shipping quote from a customer who leaves details out until asked."""

    id = "tools/slot-filling-v1"
    axes = Axes("conversation", "simulated_api", "multi", "numeric")
    tools = (
        ToolSpec(
            "quote",
            "The price of shipping a parcel, in credits.",
            (
                ("origin", "string", "city it leaves from"),
                ("destination", "string", "city it goes to"),
                ("weight_kg", "number", "weight in kg"),
                ("service", "string", "standard or express"),
            ),
        ),
    )

    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        namer = services.Namer(rng)
        cities = [namer.word(2) for _ in range(4 + difficulty // 2)]
        world = {
            "zones": {c: rng.randint(1, 5) for c in cities},
            "tariff": {
                "standard": [rng.randint(3, 12), rng.randint(5, 40) / 10],
                "express": [rng.randint(15, 30), rng.randint(45, 90) / 10],
            },
        }
        origin, destination = rng.sample(cities, 2)
        slots: dict[str, Any] = {
            "origin": origin,
            "destination": destination,
            "weight_kg": round(rng.uniform(0.5, 40), 1),
            "service": rng.choice(("standard", "express")),
        }
        missing = rng.sample(SLOTS, 1 + (difficulty - 1) // 4)
        missing.sort(key=SLOTS.index)
        said = [f"Hi! I'd like a quote to ship a parcel from {origin}"]
        if "destination" not in missing:
            said.append(f"to {destination}")
        if "weight_kg" not in missing:
            said.append(f"- it weighs {slots['weight_kg']} kg")
        if "service" not in missing:
            said.append(f"by {slots['service']} service")
        price = quote_price(world, origin, destination, slots["weight_kg"], slots["service"])
        answer = money(price)
        plan: Plan = [_QUESTIONS[s] for s in missing]
        plan += [[call("quote", **slots)], answer]
        system = (
            "You are a shipping assistant for a fictional courier. Prices come only from "
            "the quote tool, which needs origin, destination, weight_kg and service "
            "(standard or express). If the customer has not told you a detail, ask for it "
            "in a message ending with '?'. Once you have the quote, reply with the price "
            "only, a number rounded to 2 decimal places (for example 123.45)."
        )
        meta = {"slots": slots, "missing": missing}
        measure = len(missing) + len(cities)
        return Scenario(
            " ".join(said) + ".", answer, world, plan, measure, system=system, meta=meta
        )

    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        a = {k: v.strip() if isinstance(v, str) else v for k, v in arguments.items()}
        price = quote_price(
            world, a["origin"], a["destination"], float(a["weight_kg"]), a["service"].lower()
        )
        return {**a, "service": a["service"].lower(), "price": price}

    def user_reply(self, task: Task, memory: dict[str, Any], message: str) -> str | None:
        if "?" not in message:
            return None  # a statement is the agent's answer: the customer leaves
        told: list[str] = memory.setdefault("told", [])
        pending = [s for s in task.meta["missing"] if s not in told]
        if not pending:
            return "I've told you everything I know - please get me the quote."
        text = message.casefold()
        asked = [s for s in pending if any(k in text for k in _KEYWORDS[s])] or pending[:1]
        told += asked
        slots = task.meta["slots"]
        replies = {
            "destination": f"It goes to {slots['destination']}.",
            "weight_kg": f"It weighs {slots['weight_kg']} kg.",
            "service": f"{slots['service'].capitalize()} service, please.",
        }
        return " ".join(replies[s] for s in asked)

    def judge_rollout(self, task: Task, rollout: Rollout, trace: Trace) -> Verdict:
        """Right price, and a quote with the customer's details made after they were told."""
        value = strict_decimal(rollout.final_text)
        correct = close_enough(value, float(task.answer), abs_tol=0.01)
        slots = task.meta["slots"]
        memory: dict[str, Any] = {}
        records = iter(trace.calls)  # the replay served the calls in turn order
        informed = False
        for turn in rollout.turns:
            if not turn.tool_calls:
                if not parse_tool_calls(
                    turn.text
                ).errors:  # else the loop sent errors, not the user
                    self.user_reply(task, memory, turn.text)
                continue
            told = set(task.meta["missing"]) <= set(memory.get("told", []))
            for record in (next(records) for _ in turn.tool_calls):
                informed = informed or (told and record.ok and _same_slots(record.result, slots))
        what = "a quote with the details the customer gave when asked"
        return graded(value is not None, correct, informed, "the quoted price", what)

    def wrong(self, task: Task) -> list[Plan]:
        plan, slots, world = task.meta["plan"], task.meta["slots"], task.meta["world"]
        questions, answer = plan[:-2], float(task.answer)
        cities = [c for c in world["zones"] if c not in (slots["origin"], slots["destination"])]
        guessed = (
            {**slots, "destination": cities[0]}
            if "destination" in task.meta["missing"]
            else {**slots, "service": "standard" if slots["service"] == "express" else "express"}
        )
        heavier = {**slots, "weight_kg": slots["weight_kg"] + 1}
        return [
            [[call("quote", **guessed)], money(quote_price(world, **_positional(guessed)))],
            [task.answer],
            [*plan[:-1], money(answer * 1.1 + 1)],
            [
                *questions,
                [call("quote", **heavier)],
                money(quote_price(world, **_positional(heavier))),
            ],
        ]


def _same_slots(result: dict[str, Any], slots: dict[str, Any]) -> bool:
    return (
        same_text(result["origin"], slots["origin"])
        and same_text(result["destination"], slots["destination"])
        and abs(float(result["weight_kg"]) - slots["weight_kg"]) < 1e-6
        and result["service"] == slots["service"]
    )


def _positional(slots: dict[str, Any]) -> dict[str, Any]:
    return {
        "origin": slots["origin"],
        "destination": slots["destination"],
        "weight": slots["weight_kg"],
        "service": slots["service"],
    }


_LINK_QUESTIONS = {
    "employer": "Which company does {} work for?",
    "hometown": "What is the hometown of {}?",
    "headquarters": "In which city is {} headquartered?",
    "ceo": "Who is the CEO of {}?",
    "mayor": "Who is the mayor of {}?",
    "born": "In what year was {} born?",
    "role": "What is the profession of {}?",
    "founded": "In what year was {} founded?",
    "population": "What is the population of {}?",
    "region": "In which region is {}?",
}
_THAT = {"person": "that person", "company": "that company", "city": "that city"}


class FollowUpDomain(ApiDomain):
    """Answer a user's chain of follow-up questions about a fictional encyclopedia."""

    id = "tools/follow-up-v1"
    axes = Axes("conversation", "retrieval", "multi", "exact")
    tools = (LOOKUP, SEARCH_NAMES)
    max_turns = 16

    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        count = 2 + (difficulty - 1) // 3
        world = services.fact_world(rng, 6 + 2 * difficulty, difficulty // 3)
        records = world["records"]
        chain = [rng.choice([n for n, r in records.items() if r["type"] == "person"])]
        questions, answers = [], []
        for i in range(count):
            kind = records[chain[-1]]["type"]
            subject = chain[-1] if i == 0 else _THAT[kind]
            if i < count - 1:
                field, _ = rng.choice(services.LINKS[kind])
            else:
                field = rng.choice(services.SCALARS[kind])
            questions.append(_LINK_QUESTIONS[field].format(subject))
            answers.append(str(records[chain[-1]][field]))
            if i < count - 1:
                chain.append(records[chain[-1]][field])
        plan: Plan = []
        for name, value in zip(chain, answers, strict=True):
            plan += [[call("lookup", name=name)], value]
        system = (
            "You answer questions about a fictional encyclopedia; look every fact up "
            "with the tools. The user asks follow-up questions about your previous "
            "answer. Reply to each question with the value only (a name, word or number)."
        )
        meta = {"questions": questions, "answers": answers, "chain": chain}
        return Scenario(questions[0], answers[-1], world, plan, count, system=system, meta=meta)

    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        return serve_encyclopedia(world, name, arguments)

    def user_reply(self, task: Task, memory: dict[str, Any], message: str) -> str | None:
        """The next question after each answer (the first one is the prompt), then None."""
        questions = task.meta["questions"]
        asked = memory.get("asked", 1)
        if asked >= len(questions):
            return None
        memory["asked"] = asked + 1
        return str(questions[asked])

    def judge_rollout(self, task: Task, rollout: Rollout, trace: Trace) -> Verdict:
        expected = task.meta["answers"]
        given = [t.text for t in rollout.turns if not t.tool_calls]
        right = [i < len(given) and same_text(given[i], e) for i, e in enumerate(expected)]
        used = set(task.meta["chain"]) <= set(looked_up(trace))
        share = sum(right) / len(expected)
        passed = used and all(right) and len(given) == len(expected)
        components = {f"answer_{i + 1}": float(r) for i, r in enumerate(right)}
        components["used_tool"] = float(used)
        if passed:
            reason = "Correct: every follow-up answered from the looked-up records."
        elif not used:
            reason = "The records the questions need were not all looked up."
        else:
            reason = f"Wrong: {sum(right)} of {len(expected)} answers are right."
        reward = min(share, 0.99) if used and not passed else float(passed)
        return Verdict(reward, passed, reason, components)

    def wrong(self, task: Task) -> list[Plan]:
        plan, answers = task.meta["plan"], task.meta["answers"]
        records = task.meta["world"]["records"]
        last_kind = records[task.meta["chain"][-1]]["type"]
        field = next(
            f
            for f in services.SCALARS[last_kind]
            if str(records[task.meta["chain"][-1]][f]) == answers[-1]
        )
        others = [str(r[field]) for r in records.values() if r["type"] == last_kind]
        other = next((v for v in others if v != answers[-1]), answers[-1] + "0")
        first_other = next(n for n in records if n != answers[0])
        prose = [f"The answer is {s}." if isinstance(s, str) else s for s in plan]
        return [
            [*plan[:-1], other],
            list(answers),
            [plan[0], first_other, *plan[2:]],
            prose,
        ]


DOMAINS: tuple[ApiDomain, ...] = (SlotFillingDomain(), FollowUpDomain())
