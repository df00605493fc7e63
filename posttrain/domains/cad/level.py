"""`cad/scene-level-v1`: place a key, coins and enemies in a game level so it stays playable.

The prompt shows a grid level (`#` wall, `.` floor, `S` spawn, `E` exit, `D` a locked
door that the key opens) and rules: the key lies on the spawn's side of the door,
exactly K steps from the spawn; every enemy at least R steps from the spawn; no coin
next to an enemy; items on floor cells, one per cell; and, with enemies blocking their
cells, the player can still walk spawn → key → door → exit and reach every coin.
The answer is JSON: `{"key": [row, col], "coins": [[row, col], ...], "enemies": [...]}`
(row 0 at the top). Judged by breadth-first search on the grid; any placement meeting
the rules passes. Difficulty d sets 1 + d // 2 coins, 1 + d // 3 enemies and a larger
map; `difficulty_measure` counts the items.

Not guaranteed: steps are 4-neighbour moves; the player's path is checked with
enemies as walls but coins and the key as floor.
"""

from __future__ import annotations

import json
import random
from collections import deque
from typing import Any

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.types import Task, Verdict

Cell = tuple[int, int]


def _distances(grid: list[str], start: Cell, blocked: set[Cell], door_open: bool) -> dict[Cell, int]:  # fmt: skip
    out = {start: 0}
    queue = deque([start])
    while queue:
        r, c = queue.popleft()
        for nr, nc in ((r + 1, c), (r - 1, c), (r, c + 1), (r, c - 1)):
            if (nr, nc) in out or not (0 <= nr < len(grid) and 0 <= nc < len(grid[0])):
                continue
            tile = grid[nr][nc]
            if tile == "#" or (tile == "D" and not door_open) or (nr, nc) in blocked:
                continue
            out[(nr, nc)] = out[(r, c)] + 1
            queue.append((nr, nc))
    return out


def _find(grid: list[str], tile: str) -> Cell:
    for r, row in enumerate(grid):
        if tile in row:
            return (r, row.index(tile))
    raise ValueError(tile)


def _make_level(rng: random.Random, difficulty: int) -> dict[str, Any]:
    coins, enemies = 1 + difficulty // 2, 1 + difficulty // 3
    height, width = 7 + difficulty // 2, 12 + difficulty
    for _ in range(200):
        split = width // 2 + rng.randrange(-1, 2)
        rows = [["#" if r in (0, height - 1) or c in (0, width - 1) or c == split else "." for c in range(width)] for r in range(height)]  # fmt: skip
        for _ in range((height - 2) * (width - 2) // 8):
            rows[rng.randrange(1, height - 1)][rng.randrange(1, width - 1)] = "#"
        rows[rng.randrange(1, height - 1)][split] = "D"
        spawn = (rng.randrange(1, height - 1), rng.randrange(1, split - 1))
        exit_ = (rng.randrange(1, height - 1), rng.randrange(split + 1, width - 1))
        rows[spawn[0]][spawn[1]], rows[exit_[0]][exit_[1]] = "S", "E"
        grid = ["".join(r) for r in rows]
        left = _distances(grid, spawn, set(), door_open=False)
        whole = _distances(grid, spawn, set(), door_open=True)
        door = _find(grid, "D")
        if door not in whole or exit_ not in whole:
            continue
        key_min = rng.randrange(max(2, max(left.values()) // 2), max(left.values()) + 1)
        enemy_min = 3
        floor = [cell for cell in sorted(whole) if grid[cell[0]][cell[1]] == "."]
        rng.shuffle(floor)
        spec = {"grid": grid, "coins": coins, "enemies": enemies, "key_min": key_min, "enemy_min": enemy_min}  # fmt: skip
        answer = _greedy(spec, floor, left, whole)
        if answer is not None:
            return {**spec, "answer": answer}
    raise RuntimeError("no level found")  # pragma: no cover


def _greedy(spec: dict[str, Any], floor: list[Cell], left: dict[Cell, int], whole: dict[Cell, int]) -> dict[str, Any] | None:  # fmt: skip
    """A valid placement from the shuffled floor cells, or None: enemies first (each kept
    only if spawn → key → door → exit stays open), then coins clear of enemies."""
    grid = spec["grid"]
    spawn, door, exit_ = _find(grid, "S"), _find(grid, "D"), _find(grid, "E")
    keys = [c for c in floor if left.get(c, -1) == spec["key_min"]]
    if not keys:
        return None
    key = keys[0]
    enemies: list[Cell] = []
    for cell in floor:
        if len(enemies) == spec["enemies"]:
            break
        if cell == key or whole[cell] < spec["enemy_min"]:
            continue
        blocked = {*enemies, cell}
        opened = _distances(grid, spawn, blocked, door_open=True)
        if door in opened and exit_ in opened and key in _distances(grid, spawn, blocked, door_open=False):  # fmt: skip
            enemies.append(cell)
    opened = _distances(grid, spawn, set(enemies), door_open=True)
    coins = [
        cell
        for cell in floor
        if cell != key
        and cell not in enemies
        and cell in opened
        and all(abs(e[0] - cell[0]) + abs(e[1] - cell[1]) > 1 for e in enemies)
    ][: spec["coins"]]
    answer = {"key": list(key), "coins": [list(c) for c in coins], "enemies": [list(e) for e in enemies]}  # fmt: skip
    ok = len(enemies) == spec["enemies"] and len(coins) == spec["coins"]
    return answer if ok and not _problems(spec, answer) else None


def _problems(spec: dict[str, Any], answer: dict[str, Any]) -> list[str]:
    """Every rule the placement breaks (empty when it is valid)."""
    grid = spec["grid"]
    spawn, door, exit_ = _find(grid, "S"), _find(grid, "D"), _find(grid, "E")
    key = (answer["key"][0], answer["key"][1])
    coins = [(c[0], c[1]) for c in answer["coins"]]
    enemies = [(e[0], e[1]) for e in answer["enemies"]]
    cells = [key, *coins, *enemies]
    problems = []
    if any(not (0 <= r < len(grid) and 0 <= c < len(grid[0])) or grid[r][c] != "." for r, c in cells):  # fmt: skip
        return ["an item is not on a floor cell"]
    if len(set(cells)) != len(cells):
        problems.append("two items share a cell")
    left = _distances(grid, spawn, set(), door_open=False)
    if left.get(key, -1) != spec["key_min"]:
        problems.append(f"the key is not on the spawn's side exactly {spec['key_min']} steps away")
    whole = _distances(grid, spawn, set(), door_open=True)
    if any(whole.get(e, -1) < spec["enemy_min"] for e in enemies):
        problems.append(f"an enemy is closer than {spec['enemy_min']} steps to the spawn (or unreachable)")  # fmt: skip
    if any(abs(e[0] - c[0]) + abs(e[1] - c[1]) <= 1 for e in enemies for c in coins):
        problems.append("a coin is next to an enemy")
    blocked = set(enemies)
    to_key = _distances(grid, spawn, blocked, door_open=False)
    opened = _distances(grid, spawn, blocked, door_open=True)
    if key not in to_key or door not in opened or exit_ not in opened:
        problems.append("enemies block the way spawn → key → door → exit")
    if any(c not in opened for c in coins):
        problems.append("a coin cannot be reached")
    return problems


def _cells(value: Any, count: int) -> bool:
    return (
        isinstance(value, list)
        and len(value) == count
        and all(
            isinstance(v, list)
            and len(v) == 2
            and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
            for v in value  # fmt: skip
        )
    )


class SceneLevelDomain(AnswerDomain):
    """Place a key, coins and enemies in a grid level so that it stays playable."""

    id = "cad/scene-level-v1"
    axes = Axes("geometry", "none", "single", "validity")
    instructions = (
        'Answer with one JSON object {"key": [row, col], "coins": [[row, col], ...], "enemies": [[row, col], ...]} '
        "(row 0 is the top line, column 0 the left character), with exactly the asked number of coins and "
        "enemies. Reply with the JSON only: no prose, no Markdown fences."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        spec = _make_level(rng, difficulty)
        answer = spec.pop("answer")
        prompt = (
            "A game level ('#' wall, '.' floor, 'S' spawn, 'E' exit, 'D' a locked door that the key opens):\n\n"
            + "\n".join(spec["grid"])
            + f"\n\nPlace one key, {spec['coins']} coin(s) and {spec['enemies']} enemy(ies) on floor cells, one item "
            f"per cell. Rules: the key can be reached from S without going through D, and the shortest such walk "
            f"from S to it is exactly {spec['key_min']} steps; every enemy is at least {spec['enemy_min']} steps from S; no coin is next to an enemy "
            "(up, down, left or right); enemies block their cells, and the player can still walk from S to the key, "
            "then through D to E, and reach every coin. A step moves up, down, left or right."
        )
        return Problem(
            prompt, json.dumps(answer), {"level": spec}, 1 + spec["coins"] + spec["enemies"]
        )

    def judge(self, task: Task, text: str) -> Verdict:
        spec = task.meta["level"]
        stripped = text.strip()
        data: Any = None
        if stripped.startswith("{") and len(stripped) < 10_000:
            try:
                data = json.loads(stripped)
            except (ValueError, RecursionError):  # ValueError: bad JSON, or an int over 4300 digits
                data = None
        well_formed = isinstance(data, dict) and sorted(data) == ["coins", "enemies", "key"] and _cells([data.get("key")], 1) and _cells(data.get("coins"), spec["coins"]) and _cells(data.get("enemies"), spec["enemies"])  # fmt: skip
        if not well_formed:
            return Verdict(0.0, False, "The answer is not the asked JSON (key, coins, enemies with the asked counts).", {"format": 0.0, "rules": 0.0})  # fmt: skip
        problems = _problems(spec, data)
        if problems:
            return Verdict(0.25, False, "The placement breaks rules: " + "; ".join(problems) + ".", {"format": 1.0, "rules": 0.0})  # fmt: skip
        return Verdict(1.0, True, "The level is playable and meets every rule.", {"format": 1.0, "rules": 1.0})  # fmt: skip

    def wrong(self, task: Task) -> list[str]:
        """The key beyond the door, an enemy on the spawn's doorstep, two items on one cell, JSON cut short."""
        spec = task.meta["level"]
        answer = json.loads(task.answer)
        grid = spec["grid"]
        spawn = _find(grid, "S")
        left = _distances(grid, spawn, set(), door_open=False)
        whole = _distances(grid, spawn, set(), door_open=True)
        far = [list(c) for c in sorted(whole) if c not in left and grid[c[0]][c[1]] == "."]
        near = [list(c) for c in sorted(whole) if whole[c] == 1 and grid[c[0]][c[1]] == "."]
        beyond = {**answer, "key": far[0]} if far else {**answer, "key": [0, 0]}
        close = {**answer, "enemies": [near[0], *answer["enemies"][1:]]} if near else {**answer, "enemies": [[0, 0], *answer["enemies"][1:]]}  # fmt: skip
        shared = {**answer, "coins": [answer["key"], *answer["coins"][1:]]}
        return [json.dumps(beyond), json.dumps(close), json.dumps(shared), task.answer[:-3]]


DOMAINS = (SceneLevelDomain(),)
