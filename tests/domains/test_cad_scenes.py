"""The scene half of the cad family: room layouts (with and without `render`), levels, shelves."""

from __future__ import annotations

import json

from posttrain.domains.cad.layout import against_wall, beside, faces, place, reachable_fronts
from posttrain.domains.cad.level import DOMAINS as LEVEL
from posttrain.domains.cad.level import SceneLevelDomain
from posttrain.domains.cad.scenes import DOMAINS as ROOMS
from posttrain.domains.cad.scenes import SceneRoomDomain, SceneRoomRenderDomain
from posttrain.domains.cad.shelves import DOMAINS as SHELVES
from posttrain.domains.cad.shelves import SceneShelfDomain
from posttrain.domains.check import check_domains
from posttrain.types import ToolCall


def test_the_scene_domains_pass_the_self_check() -> None:
    results = check_domains([*ROOMS, *LEVEL, *SHELVES], difficulties=(1, 5))
    assert [r for r in results if not r.ok] == []


def test_relations_hold_for_the_textbook_case() -> None:
    room = (400.0, 300.0)
    desk = place("desk", (120, 60), 100, 0, "north")
    chair = place("chair", (50, 50), 110, 120, "south")
    lamp = place("lamp", (30, 30), 230, 0, "north")
    assert against_wall(desk, room, "south") and not against_wall(chair, room, "south")
    assert faces(chair, desk) and not faces(desk, lamp)
    assert beside(desk, lamp) and not beside(desk, chair)


def test_a_walled_in_desk_is_not_reachable() -> None:
    room = (400.0, 300.0)
    desk = place("desk", (120, 60), 140, 240, "south")
    wall = place("wardrobe", (400, 60), 0, 120, "north")  # a full-width barrier
    assert reachable_fronts(room, 0, [desk]) == {"desk"}
    assert "desk" not in reachable_fronts(room, 0, [desk, wall])


def test_another_valid_room_layout_passes() -> None:
    domain = SceneRoomDomain()
    task = domain.generate(3, 1)
    layout = json.loads(task.answer)
    # Re-serialised with other spacing and key order: still the same valid scene.
    text = json.dumps(dict(reversed(list(layout.items()))), indent=2)
    assert domain.verify(task, _rollout(text), None).passed


def test_a_room_answer_with_a_missing_piece_scores_zero() -> None:
    domain = SceneRoomDomain()
    task = domain.generate(0, 3)
    layout = json.loads(task.answer)
    layout.pop(next(iter(layout)))
    assert domain.verify(task, _rollout(json.dumps(layout)), None).reward == 0.0


def test_the_render_tool_draws_a_plan_and_rejects_bad_json() -> None:
    domain = SceneRoomRenderDomain()
    task = domain.generate(1, 2)
    session = domain.open(task)
    drawn = session.call(ToolCall("render", {"scene": task.answer}))
    assert not drawn.error and "north up" in drawn.content and "=" in drawn.content
    assert session.call(ToolCall("render", {"scene": "{"})).error


def test_a_level_placement_that_blocks_the_door_fails() -> None:
    domain = SceneLevelDomain()
    task = domain.generate(0, 4)
    for wrong in domain.wrong(task):
        assert not domain.judge(task, wrong).passed
    assert domain.judge(task, task.answer).passed


def test_a_shelf_box_stacked_on_a_box_must_sit_on_its_top() -> None:
    domain = SceneShelfDomain()
    task = next(t for t in (domain.generate(s, 6) for s in range(40)) if any(not v.startswith("shelf") for v in t.meta["unit"]["supports"].values()))  # fmt: skip
    answer = json.loads(task.answer)
    stacked = next(n for n, v in task.meta["unit"]["supports"].items() if not v.startswith("shelf"))
    assert domain.judge(task, json.dumps(answer)).passed
    answer[stacked][2] += 1
    assert not domain.judge(task, json.dumps(answer)).passed


def _rollout(text: str):  # type: ignore[no-untyped-def]
    from posttrain.types import Message, Rollout, Turn, Verdict

    turn = Turn(text=text, token_ids=[], logprobs=[], finish_reason="stop")
    return Rollout("r", "t", "d", 1, [], [], [], [], [Message("assistant", text)], [turn], Verdict(0.0, False, "unscored"))  # fmt: skip
