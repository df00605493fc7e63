"""The calendar service: working hours, overlaps, organizers, earliest free slot."""

from __future__ import annotations

import random

from posttrain.domains.agents import calendar
from posttrain.domains.agents.db import Database


def _db() -> Database:
    return Database(calendar.build(random.Random(2), 3))


def test_events_must_be_on_weekdays_within_working_hours() -> None:
    db = Database({"events": {}})
    monday, saturday = "2024-06-17", "2024-06-15"
    assert (
        calendar.violation(db, "create_event", {"date": monday, "start": "09:00", "end": "10:00"})
        is None
    )
    assert (
        calendar.violation(db, "create_event", {"date": monday, "start": "17:30", "end": "18:30"})
        is not None
    )
    assert (
        calendar.violation(db, "create_event", {"date": saturday, "start": "10:00", "end": "11:00"})
        is not None
    )


def test_events_may_touch_but_not_overlap() -> None:
    db = Database({"events": {}})
    calendar.create_event(
        db, {"title": "A", "date": "2024-06-17", "start": "10:00", "end": "11:00"}
    )
    assert (
        calendar.violation(
            db, "create_event", {"date": "2024-06-17", "start": "11:00", "end": "11:30"}
        )
        is None
    )
    assert (
        calendar.violation(
            db, "create_event", {"date": "2024-06-17", "start": "10:30", "end": "11:30"}
        )
        is not None
    )


def test_only_your_own_events_may_be_moved() -> None:
    db = _db()
    event = db.rows("events")[0]
    event["organizer"] = "Someone Else"
    db.put("events", event)
    assert "organizes" in str(calendar.violation(db, "cancel_event", {"event_id": event["id"]}))


def test_the_schedule_task_books_free_slots_in_hours() -> None:
    for seed in range(5):
        db = _db()
        scenario = calendar.schedule_task(random.Random(seed), 7, db)
        gold = _db()
        for write in scenario.writes:
            assert calendar.violation(gold, write.name, write.arguments) is None
            calendar.create_event(gold, write.arguments)
        assert scenario.reply == ", ".join(w.arguments["start"] for w in scenario.writes)
