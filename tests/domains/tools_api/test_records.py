"""`tools/record-update-v1`: the staff directory's final state is what is judged."""

from __future__ import annotations

from posttrain.domains.tools_api.records import RecordUpdateDomain
from posttrain.types import ToolCall
from tests.domains.tools_api.episodes import play, with_final

RECORDS = RecordUpdateDomain()


def test_the_bulk_move_needs_the_office_condition() -> None:
    task = RECORDS.generate(0, 5)
    staff = task.meta["world"]["staff"]
    assert len(task.meta["moving"]) < len(task.meta["members"])
    assert all(
        staff[i]["team"] == staff[task.meta["moving"][0]]["team"] for i in task.meta["members"]
    )


def test_updates_alone_without_find_or_get_reach_the_state() -> None:
    task = RECORDS.generate(1, 8)
    updates = [step for step in task.meta["plan"][:-1] if step[0]["name"] == "update"]
    assert play(RECORDS, task, [*updates, "DONE"]).passed


def test_right_state_with_another_final_text_fails_the_format() -> None:
    task = RECORDS.generate(1, 2)
    verdict = play(RECORDS, task, with_final(task, "Done! All moved."))
    assert verdict.components == {"format": 0.0, "state": 1.0, "used_tool": 1.0}


def test_an_extra_edit_breaks_the_state() -> None:
    task = RECORDS.generate(2, 2)
    extra = [{"name": "update", "arguments": {"id": "E101", "field": "level", "value": "20"}}]
    plan = task.meta["plan"]
    assert not play(RECORDS, task, [*plan[:-1], extra, "DONE"]).passed


def test_update_rejects_unknown_fields_and_bad_levels() -> None:
    session = RECORDS.open(RECORDS.generate(0, 1))
    for arguments in (
        {"id": "E101", "field": "name", "value": "X"},
        {"id": "E101", "field": "level", "value": "high"},
        {"id": "E101", "field": "level", "value": "\u00b2"},
        {"id": "E999", "field": "team", "value": "X"},
    ):
        observation = session.call(ToolCall("update", arguments))
        assert observation.error and observation.content.startswith("error: ")
    assert session.world == RECORDS.generate(0, 1).meta["world"]


def test_snapshot_and_restore_roll_back_an_update() -> None:
    task = RECORDS.generate(0, 1)
    session = RECORDS.open(task)
    saved = session.snapshot()
    session.call(ToolCall("update", {"id": "E101", "field": "team", "value": "Zed"}))
    session.restore(saved)
    assert session.world == task.meta["world"]
