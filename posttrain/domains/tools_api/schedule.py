"""`tools/date-offset-v1`: date arithmetic anchored on a fictional event found with a calendar API.

The prompt names an anchor event from a generated calendar (`get_event`) and a chain
of derived events, each some days after the previous one; from difficulty 5 a
weekend rule moves the last one to the following Monday (`weekday` tells the day).
`add_days` does the arithmetic. The answer is the last event's date, YYYY-MM-DD;
the anchor must have been looked up. `measure` = offsets + rule + events listed.

Not guaranteed: the model may do the date arithmetic itself (only the anchor
lookup is required); dates are proleptic Gregorian, as Python's `datetime`.
"""

from __future__ import annotations

import datetime as dt
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
    graded,
    same_text,
    strict_date,
)
from posttrain.types import Task, Verdict

_KINDS = (
    "Lantern Fair",
    "Harvest Moot",
    "Tide Market",
    "Glass Festival",
    "Founders' Day",
    "River Regatta",
    "Kite Games",
)
_DERIVED = (
    "rehearsal",
    "permit deadline",
    "closing ceremony",
    "audit",
    "cleanup day",
    "review meeting",
)


class DateOffsetDomain(FinalAnswerApiDomain):
    """The date of an event defined by day offsets from a looked-up anchor event."""

    id = "tools/date-offset-v1"
    axes = Axes("text", "simulated_api", "multi", "exact")
    tools = (
        ToolSpec(
            "get_event", "The date of a named event.", (("name", "string", "the event's name"),)
        ),
        ToolSpec(
            "add_days",
            "The date some days after (or, if negative, before) a date.",
            (("date", "string", "YYYY-MM-DD"), ("days", "integer", "days to add")),
        ),
        ToolSpec("weekday", "The day of the week of a date.", (("date", "string", "YYYY-MM-DD"),)),
    )

    def make(self, rng: random.Random, difficulty: int) -> Scenario:
        namer = services.Namer(rng)
        count = 3 + difficulty
        names = [f"{namer.word(2)} {rng.choice(_KINDS)}" for _ in range(count)]
        start = dt.date(2042, 1, 1)
        events = {n: (start + dt.timedelta(days=rng.randint(0, 2500))).isoformat() for n in names}
        anchor = names[0]
        steps, weekend_rule = 1 + (difficulty - 1) // 2, difficulty >= 5
        derived = rng.sample(_DERIVED, steps)
        offsets = [rng.randint(3, 90) for _ in derived]
        sentences, previous = [], f"the {anchor}"
        plan: Plan = [[call("get_event", name=anchor)]]
        date = events[anchor]
        for what, days in zip(derived, offsets, strict=True):
            sentences.append(f"The {what} is {days} days after {previous}.")
            previous = f"the {what}"
            plan.append([call("add_days", date=date, days=days)])
            date = services.add_days(date, days)
        dates_before_rule = date
        if weekend_rule:
            sentences.append(
                f"If the {derived[-1]} falls on a Saturday or Sunday, it moves to the following Monday."
            )
            plan.append([call("weekday", date=date)])
            shift = {"Saturday": 2, "Sunday": 1}.get(services.weekday(date), 0)
            if shift:
                plan.append([call("add_days", date=date, days=shift)])
                date = services.add_days(date, shift)
        plan.append(date)
        prompt = (
            f"The {anchor} is in the event calendar (it is fictional; look up its date). "
            + " ".join(sentences)
            + f"\nOn what date is the {derived[-1]}? Reply with the date only, as YYYY-MM-DD."
        )
        meta = {"anchor": anchor, "offsets": offsets, "unshifted": dates_before_rule}
        measure = steps + int(weekend_rule) + count
        return Scenario(prompt, date, {"events": events}, plan, measure, meta=meta)

    def serve(self, world: dict[str, Any], name: str, arguments: dict[str, Any]) -> Any:
        if name == "get_event":
            return services.event_date(world, arguments["name"])
        if name == "weekday":
            return {"date": arguments["date"], "weekday": services.weekday(arguments["date"])}
        return {"date": services.add_days(arguments["date"], int(arguments["days"]))}

    def judge(self, task: Task, final: str, trace: Trace) -> Verdict:
        date = strict_date(final)
        used = any(c.result["event"] == task.meta["anchor"] for c in trace.ok("get_event"))
        correct = date is not None and same_text(date, task.answer)
        return graded(
            date is not None, correct, used, "the event's date", "the anchor event looked up"
        )

    def wrong(self, task: Task) -> list[Plan]:
        plan, answer = task.meta["plan"], task.answer
        anchor_date = task.meta["world"]["events"][task.meta["anchor"]]
        plans: list[Plan] = [
            [*plan[:-1], services.add_days(answer, 1)],
            [answer],
            [plan[0], anchor_date],
        ]
        if task.meta["unshifted"] != answer:  # the weekend rule moved it: forgetting it is wrong
            plans.append([*plan[:-1], task.meta["unshifted"]])
        else:
            plans.append([*plan[:2], services.add_days(anchor_date, task.meta["offsets"][0] - 1)])
        return plans


DOMAINS: tuple[ApiDomain, ...] = (DateOffsetDomain(),)
