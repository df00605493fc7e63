"""Invitation, appointment letter and meeting minutes: distractors fail, equivalents pass."""

from __future__ import annotations

import json
from typing import Any

from posttrain.domains.extract.events import AppointmentLetter, Invitation, MeetingMinutes
from posttrain.domains.extract.record import ExtractDomain
from posttrain.types import Task


def _with(domain: ExtractDomain, task: Task, **changes: Any) -> tuple[float, bool]:
    v = domain.judge(task, json.dumps({**json.loads(task.answer), **changes}))
    return v.reward, v.passed


def test_the_doors_open_time_is_not_the_start_time() -> None:
    task = Invitation().generate(0, 6)
    assert not _with(Invitation(), task, start_time=task.meta["distractors"]["start_time"])[1]


def test_times_must_be_on_the_24_hour_clock() -> None:
    task = Invitation().generate(1, 4)
    assert _with(Invitation(), task, end_time="9:00 PM") == (0.0, False)


def test_the_old_appointment_of_a_rescheduled_letter_fails() -> None:
    task = AppointmentLetter().generate(0, 8)
    wrong = task.meta["distractors"]
    assert "moved" in task.prompt[0].content
    reward, passed = _with(AppointmentLetter(), task, appointment_date=wrong["appointment_date"],
                           appointment_time=wrong["appointment_time"])  # fmt: skip
    assert not passed and abs(reward - 7 / 9) < 1e-9


def test_check_in_time_in_words_is_read_as_minutes() -> None:
    task = AppointmentLetter().generate(2, 9)
    minutes = json.loads(task.answer)["arrive_minutes_early"]
    assert f"{minutes} minutes before" not in task.prompt[0].content


def test_action_items_and_attendees_pass_in_any_order() -> None:
    task = MeetingMinutes().generate(0, 9)
    gold = json.loads(task.answer)
    shuffled = {"attendees": gold["attendees"][::-1], "action_items": gold["action_items"][::-1]}
    assert _with(MeetingMinutes(), task, **shuffled) == (1.0, True)


def test_a_person_who_sent_apologies_is_not_an_attendee() -> None:
    task = MeetingMinutes().generate(1, 5)
    reward, passed = _with(MeetingMinutes(), task, attendees=task.meta["distractors"]["attendees"])
    assert not passed and 0.75 < reward < 1.0
