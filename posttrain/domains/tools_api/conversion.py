"""Conversion tasks: fictional units and fictional currencies, converted through a tool.

- `tools/unit-convert-v1` — convert a quantity between two units of a fictional
  system whose `convert` tool only knows directly linked pairs, so the model must
  find the chain of links (`links`) and convert hop by hop. Difficulty: more hops
  and more distractor units (`measure` = hops + distractor units).
- `tools/currency-total-v1` — total a list of expenses paid in several fictional
  currencies in one target currency at today's rates (`get_rate`), ignoring the
  outdated rates printed in the prompt. Difficulty: more items and more currencies
  (`measure` = items + currencies).

Both answers are numbers rounded to 2 decimals; a value within a cent per
conversion step (or 1e-4 relative) counts, and every needed conversion must have
been fetched from the tool.

Not guaranteed: `used_tool` checks that the needed calls were made and succeeded,
not that the model used their results; the tolerance admits different rounding
of intermediate results, not an exact cent-level bookkeeping convention.
"""

from __future__ import annotations

import random
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.tools_api import services
from posttrain.domains.tools_api.framework import (
    ApiDomain,
    FinalAnswerApiDomain,
    Plan,
    Scenario,
    ToolSpec,
    Trace,
    call,
    close_enough,
    graded,
    money,
    strict_decimal,
)
from posttrain.types import Task, Verdict

NUMBER_FORMAT = "Reply with the number only, rounded to 2 decimal places (for example 1234.56)."


class UnitConvertDomain(FinalAnswerApiDomain):
    """Convert between fictional units along a chain of direct links."""

    id = "tools/unit-convert-v1"
    axes = Axes("text", "simulated_api", "multi", "numeric")
    tools = (
        ToolSpec(
            "convert",
            "Convert a value between two directly linked units.",
            (
                ("value", "number", "the amount"),
                ("from_unit", "string", "unit of the amount"),
                ("to_unit", "string", "unit wanted"),
            ),
        ),
        ToolSpec(
            "links", "List the units directly linked to a unit.", (("unit", "string", "a unit"),)
        ),
    )

    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        hops, distractors = 1 + (difficulty - 1) // 2, difficulty - 1
        world = services.unit_world(rng, hops, distractors)
        path = world["path"]
        amount = round(rng.uniform(2, 500), 1)
        values: list[float] = [amount]
        plan: Plan = []
        for a, b in zip(path, path[1:], strict=False):
            plan.append([call("convert", value=values[-1], from_unit=a, to_unit=b)])
            values.append(services.convert(world, values[-1], a, b))
        answer = money(values[-1])
        plan.append(answer)
        prompt = (
            f"Convert {amount} {path[0]} into {path[-1]}. These units are fictional, so "
            "use the tools: `convert` only converts between directly linked units (you "
            "may need several steps), and `links` lists the units linked to a unit.\n"
            + NUMBER_FORMAT
        )
        meta = {"amount": amount, "values": values}
        return Scenario(prompt, answer, world, plan, hops + distractors, meta=meta)

    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        if name == "links":
            return {"unit": arguments["unit"], "links": services.links(world, arguments["unit"])}
        source, target = arguments["from_unit"], arguments["to_unit"]
        value = services.convert(world, float(arguments["value"]), source, target)
        return {"value": value, "unit": target}

    def judge(self, task: Task, final: str, trace: Trace) -> Verdict:
        value = strict_decimal(final)
        hops = len(task.meta["world"]["path"]) - 1
        correct = close_enough(value, float(task.answer), abs_tol=0.01 * hops)
        done = {
            frozenset((c.arguments["from_unit"], c.arguments["to_unit"]))
            for c in trace.ok("convert")
        }
        path = task.meta["world"]["path"]
        used = all(frozenset(pair) in done for pair in zip(path, path[1:], strict=False))
        return graded(
            value is not None,
            correct,
            used,
            "the converted amount",
            "every link of the chain converted",
        )

    def wrong(self, task: Task) -> list[Plan]:
        plan = task.meta["plan"]
        calls, answer = plan[:-1], float(task.answer)
        return [
            [*calls, money(answer * 1.1)],
            [task.answer],
            [*calls, money(task.meta["amount"])],
            [plan[0], money(task.meta["values"][1] * (1.0 if len(calls) > 1 else 0.5))],
        ]


_EXPENSES = (
    "hotel",
    "train ticket",
    "dinner",
    "museum pass",
    "taxi",
    "conference fee",
    "books",
    "bike rental",
)


class CurrencyTotalDomain(FinalAnswerApiDomain):
    """Total expenses paid in several fictional currencies, at today's rates."""

    id = "tools/currency-total-v1"
    axes = Axes("text", "simulated_api", "multi", "numeric")
    tools = (
        ToolSpec(
            "get_rate",
            "Today's exchange rate: how many to_currency one from_currency buys.",
            (
                ("from_currency", "string", "3-letter code"),
                ("to_currency", "string", "3-letter code"),
            ),
        ),
    )

    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        items = 2 + (difficulty - 1) // 2
        world = services.rate_world(rng, items + 1 + difficulty // 3)
        codes = list(world["values"])
        target, paid = codes[0], codes[1 : items + 1]
        rows = [(rng.choice(_EXPENSES), round(rng.uniform(5, 900), 2), code) for code in paid]
        rates = [services.rate(world, code, target) for code in paid]
        stale = [round(r * (1 + rng.uniform(0.03, 0.15)), 6) for r in rates]
        total = sum(amount * r for (_, amount, _), r in zip(rows, rates, strict=True))
        lines = "\n".join(f"- {what}: {amount:.2f} {code}" for what, amount, code in rows)
        printout = "\n".join(f"- 1 {c} = {s} {target}" for c, s in zip(paid, stale, strict=True))
        prompt = (
            f"On a trip I paid these expenses (the currencies are fictional):\n{lines}\n\n"
            f"What do they cost in total in {target} at today's exchange rates? Fetch "
            f"today's rates with the tool; this old printout is outdated:\n{printout}\n"
            + NUMBER_FORMAT
        )
        answer = money(total)
        plan: Plan = [[call("get_rate", from_currency=c, to_currency=target) for c in paid], answer]
        meta = {
            "target": target,
            "amounts": [amount for _, amount, _ in rows],
            "currencies": paid,
            "rates": rates,
            "stale": stale,
        }
        return Scenario(prompt, answer, world, plan, items + len(codes), meta=meta)

    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        source = arguments["from_currency"].strip().upper()
        target = arguments["to_currency"].strip().upper()
        return {"from": source, "to": target, "rate": services.rate(world, source, target)}

    def judge(self, task: Task, final: str, trace: Trace) -> Verdict:
        value = strict_decimal(final)
        items = len(task.meta["amounts"])
        correct = close_enough(value, float(task.answer), abs_tol=0.01 * items)
        target = task.meta["target"]
        fetched = {frozenset((c.result["from"], c.result["to"])) for c in trace.ok("get_rate")}
        used = all(frozenset((c, target)) in fetched for c in task.meta["currencies"])
        return graded(
            value is not None,
            correct,
            used,
            "the total at today's rates",
            "today's rate fetched for every currency",
        )

    def wrong(self, task: Task) -> list[Plan]:
        calls, answer = task.meta["plan"][0], float(task.answer)
        amounts, stale = task.meta["amounts"], task.meta["stale"]
        stale_total = sum(a * s for a, s in zip(amounts, stale, strict=True))
        plans: list[Plan] = [
            [calls, money(answer * 1.05 + 1)],
            [task.answer],
            [calls, money(stale_total)],
            [calls[:1], money(amounts[0] * task.meta["rates"][0])],
        ]
        unconverted = sum(amounts)
        if not close_enough(unconverted, answer, abs_tol=0.01 * len(amounts)):
            plans.append([calls, money(unconverted)])
        return plans


DOMAINS: tuple[ApiDomain, ...] = (UnitConvertDomain(), CurrencyTotalDomain())
