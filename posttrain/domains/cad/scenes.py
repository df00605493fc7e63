"""Room-layout domains: furnish a room from a description with spatial constraints.

- `cad/scene-room-v1` (single turn): a room, a door, furniture with sizes, and rules
  (against a wall, beside, facing, the door kept clear, every front reachable from the
  door by a 50 cm walker, nothing overlapping, everything inside); the answer is a JSON
  scene `{"desk": {"x": 10, "y": 0, "facing": "north"}, ...}`.
- `cad/scene-room-render-v1` (multi-turn): the same, with a `render` tool that draws a
  proposed scene as a top-down text plan (overlaps marked); the final scene must be
  one that was rendered.

Judged geometrically (layout.py), never against the reference: any layout meeting
every rule passes. The generator builds a valid layout first and states relations
that hold in it, so every task is solvable. Difficulty d places 2 + d // 2 objects
(`difficulty_measure`) in a room that grows with them.

Not guaranteed: the rules are the ones stated; a layout can pass and still look odd
(a chair beside a wardrobe facing a wall is fine if no rule forbids it).
"""

from __future__ import annotations

import copy
import json
import random
from typing import Any

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.domains.cad.layout import (  # fmt: skip
    FACINGS,
    Placed,
    against_wall,
    beside,
    door_zone,
    faces,
    inside,
    overlaps,
    place,
    reachable_fronts,
    top_view,
)
from posttrain.tools.parse import format_tool_call, function_schema
from posttrain.types import Message, Observation, Reference, Rollout, Task, ToolCall, Verdict

CATALOG: dict[str, tuple[int, int]] = {"bed": (140, 200), "wardrobe": (100, 60), "desk": (120, 60), "bookshelf": (80, 30), "dresser": (90, 45), "sofa": (180, 80), "tv stand": (150, 40), "armchair": (80, 80), "plant": (40, 40), "nightstand": (40, 40), "chair": (50, 50), "lamp": (30, 30)}  # fmt: skip
WALL_ITEMS = ("bed", "wardrobe", "desk", "bookshelf", "dresser", "sofa", "tv stand")
FREE_ITEMS = ("armchair", "plant", "nightstand", "chair", "lamp")
_INWARD = {"north": "south", "south": "north", "east": "west", "west": "east"}


def _wall_spot(rng: random.Random, name: str, room: tuple[int, int], wall: str) -> Placed:
    size = CATALOG[name]
    facing = _INWARD[wall]
    probe = place(name, size, 0, 0, facing)
    x: float
    y: float
    if wall in ("north", "south"):
        x = rng.randrange(0, (room[0] - int(probe.w)) // 10 + 1) * 10
        y = 0 if wall == "south" else room[1] - probe.d
    else:
        y = rng.randrange(0, (room[1] - int(probe.d)) // 10 + 1) * 10
        x = 0 if wall == "west" else room[0] - probe.w
    return place(name, size, x, y, facing)


def _near_spot(rng: random.Random, name: str, anchor: Placed, how: str) -> Placed:
    size = CATALOG[name]
    if how == "beside":
        facing = anchor.facing
        probe = place(name, size, 0, 0, facing)
        gap = rng.choice([0, 10, 20])
        if facing in ("north", "south"):
            x = anchor.x2 + gap if rng.random() < 0.5 else anchor.x - gap - probe.w
            return place(name, size, x, anchor.y, facing)
        y = anchor.y2 + gap if rng.random() < 0.5 else anchor.y - gap - probe.d
        return place(name, size, anchor.x, y, facing)
    facing = _INWARD[anchor.facing]  # stand in front of the anchor, looking back at it
    probe = place(name, size, 0, 0, facing)
    dist = rng.choice([60, 80, 100])
    if anchor.facing == "north":
        return place(name, size, anchor.x, anchor.y2 + dist, facing)
    if anchor.facing == "south":
        return place(name, size, anchor.x, anchor.y - dist - probe.d, facing)
    if anchor.facing == "east":
        return place(name, size, anchor.x2 + dist, anchor.y, facing)
    return place(name, size, anchor.x - dist - probe.w, anchor.y, facing)


def make_scene(rng: random.Random, count: int) -> dict[str, Any]:
    """A room, door and furniture with relations that hold in a valid reference layout."""
    for _ in range(500):
        room = (300 + 50 * count + rng.randrange(0, 5) * 20, 300 + 30 * count + rng.randrange(0, 5) * 20)  # fmt: skip
        door_x = rng.randrange(1, (room[0] - 100) // 10) * 10
        names = rng.sample(WALL_ITEMS, min(len(WALL_ITEMS), (count + 1) // 2 + 1))[: (count + 1) // 2]  # fmt: skip
        names += rng.sample(FREE_ITEMS, count - len(names))
        placed: list[Placed] = []
        relations: list[list[str]] = []
        for name in names:
            if name in WALL_ITEMS:
                wall = rng.choice(["north", "east", "west", "south"])
                spot, relation = _wall_spot(rng, name, room, wall), ["against", name, wall]
            else:
                anchor = placed[rng.randrange(len(placed))]
                how = rng.choice(["beside", "faces"])
                spot, relation = _near_spot(rng, name, anchor, how), [how, name, anchor.name]
            clash = any(overlaps(spot, p) for p in placed) or overlaps(spot, door_zone(door_x))
            if clash or not inside(spot, room):
                break
            placed.append(spot)
            relations.append(relation)
        else:
            if reachable_fronts(room, door_x, placed) == {p.name for p in placed}:
                layout = {p.name: {"x": p.x, "y": p.y, "facing": p.facing} for p in placed}
                return {"room": list(room), "door_x": door_x, "names": names, "relations": relations, "layout": layout}  # fmt: skip
    raise RuntimeError("no valid layout found")  # pragma: no cover - 500 tries always suffice


def scene_prompt(scene: dict[str, Any]) -> str:
    w, d = scene["room"]
    lines = [
        f"Furnish a room {w} cm (x, west to east) by {d} cm (y, south to north); its corners are (0, 0) and ({w}, {d}). "  # fmt: skip
        f"The door is in the south wall from x = {scene['door_x']} to x = {scene['door_x'] + 90}; the 90 x 90 cm square just inside it must stay clear.",  # fmt: skip
        "Furniture (width along the front x depth front to back):",
    ]
    lines += [f"- {n}: {CATALOG[n][0]} x {CATALOG[n][1]} cm" for n in scene["names"]]
    lines.append("Rules:")
    for kind, a, b in scene["relations"]:
        if kind == "against":
            lines.append(f"- the {a} stands with its back against the {b} wall")
        elif kind == "beside":
            lines.append(f"- the {a} stands beside the {b} (side by side, at most 30 cm apart, not overlapping)")  # fmt: skip
        else:
            lines.append(
                f"- the {a} faces the {b} (the {b} lies straight ahead of the {a}'s front)"
            )
    lines += [
        "- nothing overlaps and everything is inside the room",
        "- a person 50 cm wide can walk from the door to the front of every piece of furniture",
        'Answer with one JSON object mapping each furniture name to {"x": ..., "y": ..., "facing": ...}: '
        "x and y (cm) are the south-west corner of its footprint and facing is north, east, south or west, the "
        "direction its front looks. Facing north or south, a piece covers width along x and depth along y; facing "
        "east or west, depth along x and width along y. Reply with the JSON only: no prose, no Markdown fences.",
    ]
    return "\n".join(lines)


def parse_layout(text: str, scene: dict[str, Any]) -> tuple[list[Placed] | None, str]:
    """The placed footprints of a JSON answer, or None and why (strict format)."""
    stripped = text.strip() if isinstance(text, str) else ""
    if not stripped.startswith("{") or len(stripped) > 20_000:
        return None, "the answer is not a bare JSON object"
    try:
        data = json.loads(stripped)
    except (ValueError, RecursionError):  # ValueError: bad JSON, or an int over 4300 digits
        return None, "the answer is not valid JSON (or holds a number too long to read)"
    if not isinstance(data, dict) or sorted(data) != sorted(scene["names"]):
        return None, f"the JSON must have exactly the keys {', '.join(scene['names'])}"
    out = []
    for name in scene["names"]:
        item = data[name]
        ok = (
            isinstance(item, dict)
            and sorted(item) == ["facing", "x", "y"]
            and item["facing"] in FACINGS
        )
        numbers = ok and all(isinstance(item[k], int | float) and not isinstance(item[k], bool) and abs(item[k]) < 1e5 for k in ("x", "y"))  # fmt: skip
        if not numbers:
            return None, f"{name} needs numeric x, y and a facing of north, east, south or west"
        out.append(place(name, CATALOG[name], float(item["x"]), float(item["y"]), item["facing"]))
    return out, ""


def judge_layout(scene: dict[str, Any], text: str) -> Verdict:
    placed, why = parse_layout(text, scene)
    names = ("format", "inside", "no_overlap", "door_clear", "relations", "reachable")
    if placed is None:
        return Verdict(0.0, False, f"The scene is malformed: {why}.", dict.fromkeys(names, 0.0))
    room = (scene["room"][0], scene["room"][1])
    by_name = {p.name: p for p in placed}
    outside = [p.name for p in placed if not inside(p, room)]
    clashes = [f"{a.name}/{b.name}" for i, a in enumerate(placed) for b in placed[i + 1 :] if overlaps(a, b)]  # fmt: skip
    in_door = [p.name for p in placed if overlaps(p, door_zone(scene["door_x"]))]
    broken = []
    for kind, a, b in scene["relations"]:
        held = against_wall(by_name[a], room, b) if kind == "against" else beside(by_name[a], by_name[b]) if kind == "beside" else faces(by_name[a], by_name[b])  # fmt: skip
        if not held:
            broken.append(f"{a} {kind} {b}")
    reached = reachable_fronts(room, scene["door_x"], placed)
    unreached = [n for n in scene["names"] if n not in reached]
    components = {
        "format": 1.0,
        "inside": float(not outside),
        "no_overlap": float(not clashes),
        "door_clear": float(not in_door),
        "relations": 1.0 - len(broken) / max(1, len(scene["relations"])),
        "reachable": 1.0 - len(unreached) / len(scene["names"]),
    }
    problems = [f"{label}: {', '.join(items)}" for label, items in (("outside the room", outside), ("overlapping", clashes), ("in the door's square", in_door), ("rules broken", broken), ("fronts not reachable", unreached)) if items]  # fmt: skip
    if problems:
        reward = min(sum(components.values()) / len(components), 0.9)
        return Verdict(round(reward, 6), False, "The scene breaks rules: " + "; ".join(problems) + ".", components)  # fmt: skip
    return Verdict(1.0, True, "The scene meets every rule.", components)


def layout_corruptions(scene: dict[str, Any]) -> list[str]:
    """Two pieces overlapping, one outside the room, a wall piece turned to face its wall,
    and JSON cut short."""
    layout = scene["layout"]
    names = scene["names"]
    stacked = copy.deepcopy(layout)
    stacked[names[1]]["x"], stacked[names[1]]["y"] = layout[names[0]]["x"], layout[names[0]]["y"]
    outside = copy.deepcopy(layout)
    outside[names[0]]["x"] = scene["room"][0] - 10
    turned = copy.deepcopy(layout)
    turned[names[0]]["facing"] = _INWARD[layout[names[0]]["facing"]]
    good = json.dumps(layout)
    return [json.dumps(stacked), json.dumps(outside), json.dumps(turned), good[: len(good) // 2]]


class SceneRoomDomain:
    """Furnish a room as a JSON scene meeting spatial rules."""

    id = "cad/scene-room-v1"
    axes = Axes("geometry", "none", "single", "validity")
    max_turns = 1

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        scene = make_scene(task_rng(self.id, seed, difficulty), 2 + difficulty // 2)
        prompt = scene_prompt(scene) + self._extra()
        return Task(task_id(self.id, seed, difficulty), self.id, [Message("user", prompt)], json.dumps(scene["layout"]), difficulty, seed, meta={"scene": scene})  # fmt: skip

    def _extra(self) -> str:
        return ""

    def reference(self, task: Task) -> Reference:
        return Reference.single(task.answer)

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        try:
            return judge_layout(task.meta["scene"], rollout.final_text)
        except Exception as exc:  # a verifier bug, not a wrong answer
            return Verdict(0.0, False, "The verifier failed.", {}, error=f"{type(exc).__name__}: {exc}")  # fmt: skip

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        return [Reference.single(t) for t in layout_corruptions(task.meta["scene"])]

    def difficulty_measure(self, task: Task) -> float:
        return float(len(task.meta["scene"]["names"]))


RENDER_SCHEMA = function_schema(
    "render",
    "Draw a proposed scene (the same JSON as the answer, as a string) as a top-down text plan.",
    {"type": "object", "properties": {"scene": {"type": "string"}}, "required": ["scene"]},
)


class SceneRenderSession:
    """One episode's `render` tool for a room; remembers the scenes it drew."""

    def __init__(self, task: Task) -> None:
        self.scene = task.meta["scene"]
        self.tools: list[dict[str, Any]] = [copy.deepcopy(RENDER_SCHEMA)]
        self.rendered: list[str] = []

    def call(self, tool_call: ToolCall) -> Observation:
        args = tool_call.arguments if isinstance(tool_call.arguments, dict) else {}
        if tool_call.name != "render" or not isinstance(args.get("scene"), str):
            return Observation("error: call render with a string argument 'scene'", error=True)
        placed, why = parse_layout(args["scene"], self.scene)
        if placed is None:
            return Observation(f"error: {why}", error=True)
        self.rendered.append(args["scene"].strip())
        room = (self.scene["room"][0], self.scene["room"][1])
        return Observation(top_view(room, self.scene["door_x"], placed))

    def user_turn(self, assistant_message: Message) -> Message | None:
        return None

    def snapshot(self) -> list[str]:
        return list(self.rendered)

    def restore(self, snapshot: Any) -> None:
        self.rendered = list(snapshot)

    def close(self) -> None:
        pass


def _render_turn(scene_text: str) -> Message:
    call = ToolCall("render", {"scene": scene_text}, id="call_0")
    return Message("assistant", format_tool_call(call), tool_calls=[call])


class SceneRoomRenderDomain(SceneRoomDomain):
    """Furnish a room, checking drafts with a top-down `render` tool."""

    id = "cad/scene-room-render-v1"
    axes = Axes("geometry", "cad_kernel", "multi", "validity")
    max_turns = 6

    def _extra(self) -> str:
        return (
            "\n\nYou have a `render` tool: call it with your scene JSON as a string to see a top-down plan. "
            "Render your final scene before answering; your final message must be exactly a scene you rendered."
        )

    def open(self, task: Task, sandbox: object | None = None) -> SceneRenderSession:
        return SceneRenderSession(task)

    def reference(self, task: Task) -> Reference:
        return Reference([_render_turn(task.answer), Message("assistant", task.answer)])

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        verdict = super().verify(task, rollout, session)
        if verdict.error or not verdict.components.get("format"):
            return verdict
        final = rollout.final_text.strip()
        rendered = any(
            c.name == "render"
            and isinstance(c.arguments, dict)
            and str(c.arguments.get("scene", "")).strip() == final  # fmt: skip
            for turn in rollout.turns
            for c in turn.tool_calls
        )
        verdict.components["rendered"] = float(rendered)
        if not rendered:
            verdict.passed, verdict.reward = False, min(verdict.reward, 0.5)
            verdict.reason += " The final scene was never rendered with the tool."
        return verdict

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        wrong = [Reference([_render_turn(t), Message("assistant", t)]) for t in layout_corruptions(task.meta["scene"])]  # fmt: skip
        return [*wrong, Reference.single(task.answer)]


DOMAINS = (SceneRoomDomain(), SceneRoomRenderDomain())
