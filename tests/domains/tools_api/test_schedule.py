"""`tools/date-offset-v1`: dates offset from a looked-up fictional event."""

from __future__ import annotations

import datetime as dt

from posttrain.domains.tools_api.schedule import DateOffsetDomain
from posttrain.types import ToolCall
from tests.domains.tools_api.episodes import play, with_final

DATES = DateOffsetDomain()


def test_answer_is_the_anchor_plus_the_offsets_never_on_a_weekend_from_difficulty_5() -> None:
    for seed in range(10):
        task = DATES.generate(seed, 6)
        anchor = dt.date.fromisoformat(task.meta["world"]["events"][task.meta["anchor"]])
        raw = anchor + dt.timedelta(days=sum(task.meta["offsets"]))
        answer = dt.date.fromisoformat(task.answer)
        assert answer.weekday() < 5
        assert (answer - raw).days in (0, 1, 2)


def test_date_in_another_format_fails_the_format() -> None:
    task = DATES.generate(0, 2)
    day = dt.date.fromisoformat(task.answer)
    verdict = play(DATES, task, with_final(task, day.strftime("%d/%m/%Y")))
    assert verdict.components["format"] == 0.0


def test_arithmetic_done_without_add_days_still_counts_when_the_anchor_was_looked_up() -> None:
    task = DATES.generate(0, 3)
    assert play(DATES, task, [task.meta["plan"][0], task.answer]).passed


def test_a_misspelt_event_gets_a_suggestion_and_is_not_the_lookup() -> None:
    task = DATES.generate(0, 3)
    session = DATES.open(task)
    observation = session.call(ToolCall("get_event", {"name": task.meta["anchor"][:-1]}))
    assert observation.error and task.meta["anchor"] in observation.content
