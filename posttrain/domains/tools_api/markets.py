"""Market tasks over a price-history API of fictional tickers (`get_price(ticker, date)`).

- `tools/price-compare-v1` — which of a few tickers had the largest percentage change
  in close between two dates; the answer is one ticker, and both closes of every
  ticker asked must have been fetched. `measure` = tickers asked + tickers listed.
- `tools/portfolio-value-v2` — the value of a portfolio given as a table (ticker,
  shares, purchase date and price) at the closes of one date; the purchase prices
  are a stale distractor. Right within a cent per holding, with no relative slack
  (v1 allowed 1e-4 of the value, which forgave a missing share of a large portfolio). `measure` = holdings + tickers
  listed.

Not guaranteed: the closes are a random walk, not a market model; `used_tool` checks
the needed calls were made, not that their results were used.
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
    same_text,
    strict_decimal,
)
from posttrain.types import Task, Verdict

GET_PRICE = ToolSpec(
    "get_price",
    "The closing price of a ticker on a date.",
    (("ticker", "string", "4 capital letters"), ("date", "string", "YYYY-MM-DD")),
)


def fetched(trace: Trace) -> set[tuple[str, str]]:
    """(ticker, date) pairs whose close the rollout fetched."""
    return {(c.result["ticker"], c.result["date"]) for c in trace.ok("get_price")}


def serve_prices(world: dict[str, Any], arguments: dict[str, Any]) -> Any:
    return services.price(world, arguments["ticker"], arguments["date"])


class PriceCompareDomain(FinalAnswerApiDomain):
    """Which ticker's close changed most, in percent, between two dates."""

    id = "tools/price-compare-v1"
    axes = Axes("text", "simulated_api", "multi", "exact")
    tools = (GET_PRICE,)

    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        asked = 2 + (difficulty - 1) // 2
        world = services.price_world(rng, asked + difficulty, 40)
        tickers = rng.sample(list(world["prices"]), asked)
        for _ in range(50):  # redraw the dates until the leader is clear by half a point
            first, second = sorted(rng.sample(range(len(world["dates"])), 2))
            d1, d2 = world["dates"][first], world["dates"][second]
            change = {t: world["prices"][t][d2] / world["prices"][t][d1] - 1 for t in tickers}
            ranked = sorted(tickers, key=lambda t: -change[t])
            if change[ranked[0]] - change[ranked[1]] > 0.005:
                break
        prompt = (
            f"Of the (fictional) tickers {', '.join(tickers)}, which had the largest "
            f"percentage change in closing price from {d1} to {d2}? (A rise beats a fall.)\n"
            "Reply with the ticker only."
        )
        plan: Plan = [
            [call("get_price", ticker=t, date=d) for t in tickers for d in (d1, d2)],
            ranked[0],
        ]
        meta = {"tickers": tickers, "dates": [d1, d2], "ranked": ranked}
        return Scenario(prompt, ranked[0], world, plan, asked + len(world["prices"]), meta=meta)

    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        return serve_prices(world, arguments)

    def judge(self, task: Task, final: str, trace: Trace) -> Verdict:
        text = final.strip()
        format_ok = len(text) == 4 and text.isalpha()
        have = fetched(trace)
        needed = [(t, d) for t in task.meta["tickers"] for d in task.meta["dates"]]
        used = all(pair in have for pair in needed)
        return graded(
            format_ok,
            same_text(text, task.answer),
            used,
            "the ticker with the largest change",
            "both closes of every ticker fetched",
        )

    def wrong(self, task: Task) -> list[Plan]:
        calls, ranked = task.meta["plan"][0], task.meta["ranked"]
        prices = task.meta["world"]["prices"]
        d1, d2 = task.meta["dates"]
        by_rise = max(ranked, key=lambda t: prices[t][d2] - prices[t][d1])
        by_level = max(ranked, key=lambda t: prices[t][d1])
        return [
            [calls, by_rise if by_rise != ranked[0] else ranked[1]],
            [task.answer],
            [calls, by_level if by_level != ranked[0] else ranked[-1]],
            [[c for c in calls if c["arguments"]["date"] == d2], task.answer],
        ]


class PortfolioValueDomain(FinalAnswerApiDomain):
    """The value of a table of holdings at one date's closes."""

    id = "tools/portfolio-value-v2"
    axes = Axes("table", "simulated_api", "multi", "numeric")
    tools = (GET_PRICE,)

    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        holdings = 2 + (difficulty - 1) // 2
        world = services.price_world(rng, holdings + difficulty // 2, 30)
        dates, prices = world["dates"], world["prices"]
        tickers = rng.sample(list(prices), holdings)
        when = rng.randint(15, len(dates) - 1)
        rows = []
        for t in tickers:
            bought = dates[rng.randint(0, when - 5)]
            rows.append(
                {
                    "ticker": t,
                    "shares": rng.randint(5, 500),
                    "bought": bought,
                    "paid": prices[t][bought],
                }
            )
        day = dates[when]
        total = sum(r["shares"] * prices[r["ticker"]][day] for r in rows)
        table = "\n".join(
            f"| {r['ticker']} | {r['shares']} | {r['bought']} | {r['paid']:.2f} |" for r in rows
        )
        prompt = (
            "My portfolio of fictional stocks:\n\n| ticker | shares | bought on | price paid |\n"
            f"|---|---|---|---|\n{table}\n\nWhat was it worth at the closing prices of "
            f"{day}? Fetch those closes with the tool.\n"
            "Reply with the number only, rounded to 2 decimal places (for example 1234.56)."
        )
        answer = money(total)
        plan: Plan = [[call("get_price", ticker=r["ticker"], date=day) for r in rows], answer]
        meta = {"rows": rows, "day": day}
        return Scenario(prompt, answer, world, plan, holdings + len(prices), meta=meta)

    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        return serve_prices(world, arguments)

    def judge(self, task: Task, final: str, trace: Trace) -> Verdict:
        value = strict_decimal(final)
        rows, day = task.meta["rows"], task.meta["day"]
        # Closes are in cents and shares whole, so the value is exact: a cent per holding of
        # drift, no relative slack (1e-4 of a large portfolio would forgive a missing share).
        correct = close_enough(value, float(task.answer), abs_tol=0.01 * len(rows), rel_tol=0.0)
        have = fetched(trace)
        used = all((r["ticker"], day) in have for r in rows)
        return graded(
            value is not None,
            correct,
            used,
            "the portfolio's value that day",
            "every holding's close fetched",
        )

    def wrong(self, task: Task) -> list[Plan]:
        calls, rows, answer = task.meta["plan"][0], task.meta["rows"], float(task.answer)
        prices, day = task.meta["world"]["prices"], task.meta["day"]
        partial = sum(r["shares"] * prices[r["ticker"]][day] for r in rows[:-1])
        plans: list[Plan] = [
            [calls, money(answer * 1.03 + 1)],
            [task.answer],
            [calls[:-1], money(partial)],
        ]
        stale = sum(r["shares"] * r["paid"] for r in rows)
        if not close_enough(stale, answer, abs_tol=0.01 * len(rows)):
            plans.append([calls, money(stale)])
        return plans


DOMAINS: tuple[ApiDomain, ...] = (PriceCompareDomain(), PortfolioValueDomain())
