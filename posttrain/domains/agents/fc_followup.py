"""`agent/fc-followup-v1`: the next function call in a conversation, resolved from its history.

The prompt is a dialogue: a system message listing the function schemas, then 2..6
earlier exchanges (a user request, the assistant's `<tool_call>` block, a `tool`
message with its JSON result), then a user follow-up that refers back without
restating everything: "Back to the Lima forecast: same thing but for Osaka.", "Now take
the result of the conversion into EUR and convert it into GBP.", "Book a table ... on
the warmest day of the Oslo forecast." The answer is exactly one tool-call block
whose arguments come from the earlier request, the earlier tool result, or the change
the follow-up states; it is judged like `agent/fc-select-v1` (`call_matches` against a
spec pinning every gold argument). Difficulty adds exchanges and decoys: earlier calls
of the same function whose values differ in every argument, so a value taken from the
wrong exchange fails. `difficulty_measure` is the number of messages in the history.

    from posttrain.domains.agents.fc_followup import DOMAINS

Tool results are shown as `tool`-role messages; the built-in chat template
(`posttrain.models.tiny`) renders any non-system/user/assistant role as its tool turn,
and `posttrain.rollout.episode.render` passes the role through.

Not guaranteed: values are compared exactly (strings up to case), so "2024-07-03" must
be copied, not rewritten; results are simulated (fixed exchange rates, made-up
forecasts); requests and follow-ups are templated English.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from posttrain.domains.agents.fc_catalog import (
    CITIES,
    CURRENCIES,
    DATES,
    FLAT,
    LANGUAGES,
    TIMES,
    Function,
    spec,
)
from posttrain.domains.agents.function_calling import CALL_FORMAT, judge_one
from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.tools.parse import format_tool_call
from posttrain.types import Message, Task, ToolCall, Verdict

RATES = {"USD": 1.0, "EUR": 0.92, "GBP": 0.79, "JPY": 157.0, "CHF": 0.89, "CAD": 1.37}
_FN = {f.name: f for f in FLAT}
_RESTAURANTS = ("Chez Nous", "Sakura", "The Oak Room", "Casa Verde")


@dataclass(frozen=True)
class _Exchange:
    """One earlier turn: the request, the call the assistant made, what it returned."""

    function: Function
    request: str
    args: dict[str, Any]
    result: dict[str, Any]

    @property
    def call(self) -> ToolCall:
        return ToolCall(self.function.name, self.args)


def _weather(rng: random.Random, a: dict[str, Any]) -> dict[str, Any]:
    start, highs = rng.randrange(len(DATES) - 7), rng.sample(range(8, 36), a["days"])
    if a["unit"] == "fahrenheit":  # 1.8 per degree keeps distinct highs distinct
        highs = [round(h * 1.8 + 32) for h in highs]
    days = [{"date": DATES[start + i], "high": h, "low": h - rng.randint(4, 9)} for i, h in enumerate(highs)]  # fmt: skip
    return {"city": a["city"], "unit": a["unit"], "forecast": days}


def _tip(rng: random.Random, a: dict[str, Any]) -> dict[str, Any]:
    tip = round(a["bill"] * a["percent"] / 100, 2)
    return {"tip": tip, "per_person": round((a["bill"] + tip) / a["split"], 2)}


_RESULTS: dict[str, Callable[[random.Random, dict[str, Any]], dict[str, Any]]] = {
    "get_weather": _weather,
    "convert_currency": lambda rng, a: {
        **a,
        "result": round(a["amount"] / RATES[a["from_currency"]] * RATES[a["to_currency"]], 2),
    },  # fmt: skip
    "book_table": lambda rng, a: {
        "status": "confirmed",
        "confirmation": f"R-{rng.randint(1000, 9999)}",
    },  # fmt: skip
    "search_flights": lambda rng, a: {
        "flights": [
            {
                "flight": f"{rng.choice(('AF', 'BA', 'JL', 'UA'))}{rng.randint(100, 999)}",
                "departs": rng.choice(TIMES),
                "price": rng.randint(90, 1400),
            }
            for _ in range(rng.randint(1, 3))
        ]
    },  # fmt: skip
    "translate_text": lambda rng, a: {
        "status": "translated",
        "target_language": a["target_language"],
        "characters": len(a["text"]),
    },  # fmt: skip
    "calculate_tip": _tip,
}
# How a follow-up names an earlier exchange; decoys differ in every argument, so it is unique.
_KEYS = {
    "get_weather": "the {city} forecast",
    "convert_currency": "the conversion into {to_currency}",
    "book_table": 'the booking at "{restaurant}"',
    "search_flights": "the {origin} to {destination} flight search",
    "translate_text": "the {target_language} translation",
    "calculate_tip": "the {bill}-dollar bill",
}
_CHANGES: dict[str, tuple[tuple[str, tuple[Any, ...], str], ...]] = {
    "get_weather": (("city", CITIES, "same thing but for {}"), ("days", tuple(range(2, 8)), "same again but for {} days"),
                    ("unit", ("celsius", "fahrenheit"), "same again but in {}")),
    "convert_currency": (("to_currency", CURRENCIES, "same again but into {}"),
                         ("amount", (50, 120, 300, 750, 1500, 4000), "same again but for an amount of {}")),
    "book_table": (("date", DATES, "same again but on {}"), ("time", TIMES, "same again but at {}"),
                   ("party_size", tuple(range(2, 13)), "same again but for {} people")),
    "search_flights": (("date", DATES, "same again but on {}"), ("cabin", ("economy", "premium", "business"), "same again but in {}"),
                       ("passengers", tuple(range(2, 7)), "same again but for {} passengers")),
    "translate_text": (("target_language", LANGUAGES, "same again but into {}"),),
    "calculate_tip": (("percent", (10, 15, 18, 20, 25), "same again but with a {}% tip"),
                      ("split", tuple(range(2, 9)), "same again but split between {} people")),
}  # fmt: skip

# A plan: the follow-up text, how the wanted call derives from an exchange, and an argument
# taken from context (dropped by the "missing argument" corruption).
_Plan = tuple[str, Callable[[_Exchange], ToolCall], str]


def _key(ex: _Exchange) -> str:
    return _KEYS[ex.function.name].format(**ex.args)


def _plan_change(rng: random.Random, t: _Exchange) -> _Plan:
    arg, pool, phrase = rng.choice(_CHANGES[t.function.name])
    value = rng.choice([v for v in pool if v not in t.args.values()])
    text = f"Back to {_key(t)}: {phrase.format(value)}."
    kept = min(k for k in t.args if k != arg)
    return text, lambda ex: ToolCall(ex.function.name, {**ex.args, arg: value}), kept


def _plan_chain(rng: random.Random, t: _Exchange) -> _Plan:
    to = rng.choice([c for c in CURRENCIES if c != t.args["to_currency"]])
    text = f'Now take the "result" of {_key(t)} and convert it into {to}.'
    return text, lambda ex: ToolCall("convert_currency", {"amount": ex.result["result"], "from_currency": ex.args["to_currency"], "to_currency": to}), "amount"  # fmt: skip


def _plan_tip(rng: random.Random, t: _Exchange) -> _Plan:
    to = rng.choice([c for c in CURRENCIES if c != "USD"])
    text = f'Convert the "per_person" amount for {_key(t)} from USD into {to}.'
    return text, lambda ex: ToolCall("convert_currency", {"amount": ex.result["per_person"], "from_currency": "USD", "to_currency": to}), "amount"  # fmt: skip


def _warmest(ex: _Exchange) -> str:
    return str(max(ex.result["forecast"], key=lambda d: d["high"])["date"])


def _plan_warmest(rng: random.Random, t: _Exchange) -> _Plan:
    place, time, n = rng.choice(_RESTAURANTS), rng.choice(TIMES), rng.randint(2, 12)
    text = f'Book a table for {n} at "{place}" at {time} on the warmest day (highest "high") of {_key(t)}.'  # fmt: skip
    return text, lambda ex: ToolCall("book_table", {"restaurant": place, "date": _warmest(ex), "time": time, "party_size": n}), "date"  # fmt: skip


_PLANS: tuple[tuple[str, Callable[[random.Random, _Exchange], _Plan]], ...] = (
    ("", _plan_change),  # the target function is drawn from FLAT
    ("", _plan_change),  # twice: it is the one plan that covers all six functions
    ("convert_currency", _plan_chain),
    ("calculate_tip", _plan_tip),
    ("get_weather", _plan_warmest),
)


def _exchange(rng: random.Random, function: Function) -> _Exchange:
    request, args = function.make(rng, 1)
    return _Exchange(function, request, args, _RESULTS[function.name](rng, args))


def _decoy(rng: random.Random, target: _Exchange, derive: Callable[[_Exchange], ToolCall]) -> _Exchange:  # fmt: skip
    """An exchange of the same function, different in every argument and in the call it yields."""
    gold = derive(target).arguments
    for _ in range(1000):
        ex = _exchange(rng, target.function)
        if all(ex.args[k] != v for k, v in target.args.items()) and derive(ex).arguments != gold:
            return ex
    raise RuntimeError(f"no decoy for {target.function.name}")  # unreachable with these pools


def _history(rng: random.Random, exchanges: list[_Exchange]) -> list[Message]:
    shown = list(FLAT)
    rng.shuffle(shown)
    schemas = "\n".join(json.dumps(f.schema(), sort_keys=True) for f in shown)
    system = (f"Functions you can call:\n{schemas}\n\nEarlier calls in this conversation were run; "
              "each tool message holds the JSON result of the call just before it.")  # fmt: skip
    out = [Message("system", system)]
    for ex in exchanges:
        out += [
            Message("user", ex.request),
            Message("assistant", format_tool_call(ex.call), tool_calls=[ex.call]),
            Message("tool", json.dumps(ex.result, sort_keys=True), name=ex.function.name),
        ]
    return out


class FunctionFollowupDomain(AnswerDomain):
    """The follow-up call of a multi-message conversation; see the module docstring.

    `make` gives the earlier exchanges as the problem's `history`, so the prompt is a
    message list; the judge, `corrupt` and `verify` are `AnswerDomain`'s and
    `function_calling`'s."""

    id = "agent/fc-followup-v1"
    axes = Axes("conversation", "none", "single", "structure")
    instructions = (
        CALL_FORMAT + " This request needs exactly one call; take every argument it leaves "
        "out from the earlier requests and tool results above."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        name, make_plan = rng.choice(_PLANS)
        target = _exchange(rng, _FN[name] if name else rng.choice(FLAT))
        text, derive, kept = make_plan(rng, target)
        decoys = [_decoy(rng, target, derive) for _ in range(1 + (difficulty - 1) // 4)]
        others = [_exchange(rng, rng.choice([f for f in FLAT if f.name != target.function.name]))
                  for _ in range((difficulty - 1) // 2 - (difficulty - 1) // 4)]  # fmt: skip
        exchanges = [target, *decoys, *others]
        rng.shuffle(exchanges)
        history = tuple(_history(rng, exchanges))
        gold = derive(target)
        earlier = format_tool_call(target.call)
        wrong = [
            earlier,  # the earlier call repeated unchanged
            format_tool_call(derive(decoys[0])),  # values from the wrong exchange
            format_tool_call(
                ToolCall(gold.name, {k: v for k, v in gold.arguments.items() if k != kept})
            ),  # fmt: skip
            earlier + "\n" + format_tool_call(gold),  # the earlier call made again as well
        ]
        meta = {
            "specs": [spec(_FN[gold.name], gold.arguments)],
            "call": gold.to_dict(),
            "wrong": wrong,
        }
        # the measure counts the follow-up's own message too
        return Problem(text, format_tool_call(gold), meta, len(history) + 1, history)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_one(task, text)

    def wrong(self, task: Task) -> list[str]:
        return list(task.meta["wrong"])


DOMAINS: tuple[AnswerDomain, ...] = (FunctionFollowupDomain(),)
