"""The simulated calendar: one person's events on weekdays, and two task kinds.

Tools: `list_events`, `find_events`, `get_event`, `create_event`, `move_event`,
`cancel_event` (plus the shared `wait`). Times are "HH:MM" strings. The written
policy (`POLICY`) keeps events on weekdays within 09:00-18:00, forbids overlaps, and
lets the user move or cancel only events they organize.

Task kinds (templates):
- `schedule_task` — book meetings at the earliest free half-hour slot of given days
  (the day must be read first); reply with the chosen start times.
- `move_task` — move named events to new start times; some moves break the policy
  (another organizer, an overlap, outside working hours) and must be refused; reply
  with the moved ids or NONE.

Not guaranteed: the calendar has one owner ("you") and no time zones.
"""

from __future__ import annotations

import random
import re
from datetime import date, timedelta
from typing import Any

from posttrain.domains.agents.db import Database, Tables, ToolError, ToolSpec
from posttrain.domains.agents.episode_tasks import TODAY, Scenario, Service, call, people

OPEN, CLOSE = 9 * 60, 18 * 60
_TIME = re.compile(r"([01]\d|2[0-3]):([0-5]\d)")
TITLES = ("Standup", "Design review", "1:1 with manager", "Budget sync", "Hiring panel", "Roadmap",
          "Customer call", "Lunch and learn", "Sprint planning", "Retro", "Vendor demo", "Board prep")  # fmt: skip

POLICY = """- Events only Monday to Friday, starting at or after 09:00 and ending at or before 18:00.
- No two events may overlap (one may start when another ends).
- You may move or cancel only events whose organizer is "you"; refuse anything else.
- Never change data the user did not ask to change."""


def minutes(text: Any) -> int:
    match = _TIME.fullmatch(text) if isinstance(text, str) else None
    if match is None:
        raise ToolError(f"time must be HH:MM, got {str(text)[:20]!r}")
    return int(match.group(1)) * 60 + int(match.group(2))


def clock(total: int) -> str:
    return f"{total // 60:02d}:{total % 60:02d}"


def _day(text: Any) -> date:
    try:
        return date.fromisoformat(text)
    except (TypeError, ValueError):
        raise ToolError(f"date must be YYYY-MM-DD, got {str(text)[:20]!r}") from None


def _active(db: Database, day: str) -> list[dict[str, Any]]:
    rows = db.rows("events", lambda e: e["date"] == day and e["status"] == "active")
    return sorted(rows, key=lambda e: (e["start"], e["id"]))


def list_events(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    return {"date": args["date"], "items": _active(db, _day(args["date"]).isoformat())}


def find_events(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    query = str(args["title"]).casefold().strip()
    return {"items": [e for e in db.rows("events") if query and query in e["title"].casefold() and e["status"] == "active"]}  # fmt: skip


def get_event(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    return db.get("events", args["event_id"])


def _slot(args: dict[str, Any]) -> tuple[str, int, int]:
    day, start, end = _day(args["date"]).isoformat(), minutes(args["start"]), minutes(args["end"])
    if end <= start:
        raise ToolError("end must be after start")
    return day, start, end


def create_event(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    day, start, end = _slot(args)
    event = {"id": db.next_id("events", "E", 501), "title": str(args["title"]), "date": day,
             "start": clock(start), "end": clock(end), "organizer": "you", "status": "active"}  # fmt: skip
    db.put("events", event)
    return event


def move_event(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    event = db.get("events", args["event_id"])
    day, start, end = _slot(args)
    event.update(date=day, start=clock(start), end=clock(end))
    db.put("events", event)
    return event


def cancel_event(db: Database, args: dict[str, Any]) -> dict[str, Any]:
    event = db.get("events", args["event_id"])
    event["status"] = "cancelled"
    db.put("events", event)
    return event


def violation(db: Database, name: str, args: dict[str, Any]) -> str | None:
    if name in ("move_event", "cancel_event"):
        event = db.tables.get("events", {}).get(args["event_id"])
        if event is None:
            return None
        if event["organizer"] != "you":
            return "only events the user organizes may be moved or cancelled"
        if name == "cancel_event":
            return None
    try:
        day, start, end = _slot(args)
    except ToolError:
        return None
    if date.fromisoformat(day).weekday() >= 5 or start < OPEN or end > CLOSE:
        return "events only on weekdays within 09:00-18:00"
    for other in _active(db, day):
        if (
            other["id"] != args.get("event_id")
            and minutes(other["start"]) < end
            and start < minutes(other["end"])
        ):
            return f"the event would overlap {other['id']}"
    return None


_S = {"type": "string"}
_WHEN = {"date": {"type": "string", "description": "YYYY-MM-DD"}, "start": {"type": "string", "description": "HH:MM"},
         "end": {"type": "string", "description": "HH:MM"}}  # fmt: skip
TOOLS = (
    ToolSpec(
        "list_events",
        "The active events of one day, by start time.",
        {"date": _S},
        ("date",),
        "list",
        list_events,
    ),  # fmt: skip
    ToolSpec(
        "find_events",
        "Active events whose title contains the text.",
        {"title": _S},
        ("title",),
        "list",
        find_events,
    ),  # fmt: skip
    ToolSpec("get_event", "One event.", {"event_id": _S}, ("event_id",), "read", get_event),
    ToolSpec(
        "create_event",
        "Create an event organized by you.",
        {"title": _S, **_WHEN},
        ("title", "date", "start", "end"),
        "write",
        create_event,
    ),  # fmt: skip
    ToolSpec(
        "move_event",
        "Move an event to a new date and time.",
        {"event_id": _S, **_WHEN},
        ("event_id", "date", "start", "end"),
        "write",
        move_event,
    ),  # fmt: skip
    ToolSpec(
        "cancel_event", "Cancel an event.", {"event_id": _S}, ("event_id",), "write", cancel_event
    ),  # fmt: skip
)


def weekdays(n: int) -> list[str]:
    """The first `n` weekdays after TODAY."""
    out: list[str] = []
    day = date.fromisoformat(TODAY)
    while len(out) < n:
        day += timedelta(days=1)
        if day.weekday() < 5:
            out.append(day.isoformat())
    return out


def build(rng: random.Random, difficulty: int) -> Tables:
    """5 + d weekdays, each with 2 + d/3 events on the half-hour grid."""
    events: dict[str, dict[str, Any]] = {}
    others = people(rng, 6)
    for day in weekdays(5 + difficulty):
        starts = sorted(rng.sample(range(OPEN, CLOSE - 30, 30), 2 + difficulty // 3))
        titles = rng.sample(TITLES, len(starts))
        for i, (start, title) in enumerate(zip(starts, titles, strict=True)):
            room = (starts[i + 1] if i + 1 < len(starts) else CLOSE) - start
            end = start + min(room, rng.choice((30, 30, 60, 90)))
            event_id = f"E-{101 + len(events)}"
            organizer = "you" if rng.random() < 0.6 else rng.choice(others)
            events[event_id] = {"id": event_id, "title": title, "date": day, "start": clock(start),
                                "end": clock(end), "organizer": organizer, "status": "active"}  # fmt: skip
    return {"events": events}


def _earliest(db: Database, day: str, length: int) -> int | None:
    for start in range(OPEN, CLOSE - length + 1, 30):
        if (
            violation(
                db,
                "create_event",
                {"date": day, "start": clock(start), "end": clock(start + length)},
            )
            is None
        ):
            return start
    return None


def schedule_task(rng: random.Random, difficulty: int, db: Database) -> Scenario:
    days = rng.sample(weekdays(5 + difficulty), 1 + (difficulty - 1) // 3)
    asks, writes, naive, starts = [], [], [], []
    for day in days:
        title = rng.choice(
            ("Interview", "Dentist", "Focus time", "Team offsite prep", "Call with Sam")
        )
        length = rng.choice((30, 45, 60, 90))
        start = _earliest(db, day, length)
        if start is None:
            length = 30
            start = _earliest(db, day, length)
        assert start is not None
        args = {"title": title, "date": day, "start": clock(start), "end": clock(start + length)}
        create_event(db, args)
        writes.append(call("create_event", **args))
        naive.append(
            call("create_event", **{**args, "start": "09:00", "end": clock(OPEN + length)})
        )
        asks.append(f'a {length}-minute "{title}" on {day}')
        starts.append(clock(start))
    return Scenario(
        "Please book " + "; ".join(asks) + ", each at the earliest time that day that fits my calendar, starting on the hour or half hour.",  # fmt: skip
        "the start times you booked, as HH:MM, comma-separated in the order I listed the meetings",
        [call("list_events", date=d) for d in days], writes, ", ".join(starts),
        ", ".join(["09:00"] * len(starts)) if starts != ["09:00"] * len(starts) else ", ".join(["09:30"] * len(starts)),
        naive, confirm="I will book the meetings at the times above. Shall I go ahead?", measure=2 * len(days),
    )  # fmt: skip


def move_task(rng: random.Random, difficulty: int, db: Database) -> Scenario:
    days = rng.sample(weekdays(5 + difficulty), 1 + (difficulty - 1) // 3)
    asks, writes, naive, moved = [], [], [], []
    for day in days:
        event = rng.choice(_active(db, day))
        length = minutes(event["end"]) - minutes(event["start"])
        free = _earliest(db, day, length)
        if (
            rng.random() < 0.5 and free is not None
        ):  # make this move allowed; otherwise break a rule
            event["organizer"], target = "you", free
        else:
            breaking = rng.choice(("organizer", "overlap", "hours"))
            others = [e for e in _active(db, day) if e["id"] != event["id"]]
            if breaking == "organizer" and free is not None:
                event["organizer"], target = rng.choice(people(rng, 3)), free
            elif breaking == "overlap" and others:
                event["organizer"], target = "you", minutes(rng.choice(others)["start"])
            else:
                event["organizer"], target = "you", rng.choice((7 * 60, 8 * 60, CLOSE))
        db.put("events", event)
        args = {
            "event_id": event["id"],
            "date": day,
            "start": clock(target),
            "end": clock(target + length),
        }
        asks.append(
            f'move my "{event["title"]}" on {day} to start at {clock(target)} (same length)'
        )
        naive.append(call("move_event", **args))
        if violation(db, "move_event", args) is None:
            tables = db.snapshot()
            writes.append(call("move_event", **args))
            moved.append(event["id"])
            move_event(db, args)
            db.restore(tables)  # the arranged data stays as it was before the gold moves
    return Scenario(
        "Please " + "; then ".join(asks) + ".",
        "the ids of the events you moved, comma-separated in the order I asked, or NONE if you moved none",
        [call("list_events", date=d) for d in days], writes, ", ".join(moved) or "NONE",
        ", ".join(a.arguments["event_id"] for a in naive) if len(moved) < len(naive) else "NONE", naive,
        confirm="I will move the events that the policy allows. Shall I go ahead?", measure=2 * len(days),
        tables=db.snapshot(),
    )  # fmt: skip


CALENDAR = Service("calendar", "the Plandesk calendar service", POLICY, TOOLS, violation, build)
