"""Floor-plan geometry for the scene domains: footprints, relations, reachability, a text view.

Units are centimetres; a room spans x 0..W (west to east) and y 0..D (south to north),
its door on the south wall. A placed object is a `Placed` footprint with the compass
direction its front faces; a footprint is w (along its front) by d (front to back),
turned with the facing.

    box = place(catalog_size, x, y, "north")      # lower-left corner (x, y)
    overlaps(a, b); against_wall(a, room, "west"); beside(a, b); faces(a, b)
    reachable_fronts(room, door, placed)          # names whose front a 50 cm walker reaches
    top_view(room, door, placed)                  # ASCII plan, 20 cm per character

Not guaranteed: everything is axis-aligned (facings are the four compass points);
reachability is a breadth-first search on a 10 cm grid for a walker 50 cm wide, so
gaps under 50 cm block it even where a real person could squeeze through.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

FACINGS = ("north", "east", "south", "west")
CELL = 10
WALKER_CELLS = 2  # obstacles grow by this many cells: a 50 cm walker's centre keeps 25 cm clear
DOOR_WIDTH = 90


@dataclass(frozen=True)
class Placed:
    name: str
    x: float
    y: float
    w: float  # extent along x
    d: float  # extent along y
    facing: str

    @property
    def x2(self) -> float:
        return self.x + self.w

    @property
    def y2(self) -> float:
        return self.y + self.d


def place(name: str, size: tuple[float, float], x: float, y: float, facing: str) -> Placed:
    """A footprint of `size` (width along the front, depth) turned to `facing`."""
    width, depth = size
    if facing in ("north", "south"):
        return Placed(name, x, y, width, depth, facing)
    return Placed(name, x, y, depth, width, facing)


def overlaps(a: Placed, b: Placed) -> bool:
    return a.x < b.x2 and b.x < a.x2 and a.y < b.y2 and b.y < a.y2


def inside(a: Placed, room: tuple[float, float]) -> bool:
    return a.x >= 0 and a.y >= 0 and a.x2 <= room[0] and a.y2 <= room[1]


def door_zone(door_x: float) -> Placed:
    """The square inside the door that must stay clear."""
    return Placed("door", door_x, 0, DOOR_WIDTH, DOOR_WIDTH, "north")


def against_wall(a: Placed, room: tuple[float, float], wall: str) -> bool:
    """Back to `wall`: touching it (within 1 cm) and facing away from it."""
    away = {"north": "south", "south": "north", "east": "west", "west": "east"}[wall]
    gap = {"north": room[1] - a.y2, "south": a.y, "east": room[0] - a.x2, "west": a.x}[wall]
    return a.facing == away and abs(gap) <= 1


def beside(a: Placed, b: Placed, gap: float = 30) -> bool:
    """Side by side: apart by at most `gap` along one axis, overlapping on the other."""
    x_gap = max(b.x - a.x2, a.x - b.x2)
    y_gap = max(b.y - a.y2, a.y - b.y2)
    x_overlap = min(a.x2, b.x2) - max(a.x, b.x)
    y_overlap = min(a.y2, b.y2) - max(a.y, b.y)
    return (0 <= x_gap <= gap and y_overlap > 0) or (0 <= y_gap <= gap and x_overlap > 0)


def faces(a: Placed, b: Placed) -> bool:
    """`a`'s front looks at `b`: `b` lies ahead of a's front, within a's width."""
    if a.facing == "north":
        return b.y >= a.y2 and min(a.x2, b.x2) > max(a.x, b.x)
    if a.facing == "south":
        return b.y2 <= a.y and min(a.x2, b.x2) > max(a.x, b.x)
    if a.facing == "east":
        return b.x >= a.x2 and min(a.y2, b.y2) > max(a.y, b.y)
    return b.x2 <= a.x and min(a.y2, b.y2) > max(a.y, b.y)


def _blocked(room: tuple[float, float], placed: list[Placed]) -> list[list[bool]]:
    nx, ny = int(room[0] // CELL), int(room[1] // CELL)
    grid = [[False] * nx for _ in range(ny)]
    for p in placed:
        x0, x1 = int(p.x // CELL) - WALKER_CELLS, int(-(-p.x2 // CELL)) + WALKER_CELLS
        y0, y1 = int(p.y // CELL) - WALKER_CELLS, int(-(-p.y2 // CELL)) + WALKER_CELLS
        for j in range(max(0, y0), min(ny, y1)):
            for i in range(max(0, x0), min(nx, x1)):
                grid[j][i] = True
    for j in range(ny):
        for i in range(nx):
            if i < WALKER_CELLS or j < WALKER_CELLS or i >= nx - WALKER_CELLS or j >= ny - WALKER_CELLS:  # fmt: skip
                grid[j][i] = True
    return grid


def reachable_fronts(room: tuple[float, float], door_x: float, placed: list[Placed]) -> set[str]:
    """Names of the objects whose front strip (50 cm deep) a walker from the door reaches."""
    grid = _blocked(room, placed)
    ny, nx = len(grid), len(grid[0]) if grid else 0
    start = (WALKER_CELLS, int((door_x + DOOR_WIDTH / 2) // CELL))
    seen = [[False] * nx for _ in range(ny)]
    if not (0 <= start[1] < nx) or start[0] >= ny or grid[start[0]][start[1]]:
        return set()
    queue = deque([start])
    seen[start[0]][start[1]] = True
    while queue:
        j, i = queue.popleft()
        for dj, di in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            a, b = j + dj, i + di
            if 0 <= a < ny and 0 <= b < nx and not seen[a][b] and not grid[a][b]:
                seen[a][b] = True
                queue.append((a, b))
    out = set()
    for p in placed:
        strip = _front_strip(p)
        x0, x1 = int(strip.x // CELL), int(-(-strip.x2 // CELL))
        y0, y1 = int(strip.y // CELL), int(-(-strip.y2 // CELL))
        if any(seen[j][i] for j in range(max(0, y0), min(ny, y1)) for i in range(max(0, x0), min(nx, x1))):  # fmt: skip
            out.add(p.name)
    return out


def _front_strip(p: Placed, depth: float = 50) -> Placed:
    if p.facing == "north":
        return Placed("", p.x, p.y2, p.w, depth, "north")
    if p.facing == "south":
        return Placed("", p.x, p.y - depth, p.w, depth, "south")
    if p.facing == "east":
        return Placed("", p.x2, p.y, depth, p.d, "east")
    return Placed("", p.x - depth, p.y, depth, p.d, "west")


def top_view(
    room: tuple[float, float], door_x: float, placed: list[Placed], cell: float = 20
) -> str:
    """An ASCII plan, north up: each object by the first letter of its label in `placed`
    order (upper case), its front edge marked with '^ > v <', '+' where objects overlap,
    '=' the door; a legend follows."""
    nx, ny = int(-(-room[0] // cell)), int(-(-room[1] // cell))
    rows = [["."] * nx for _ in range(ny)]
    letters = {}
    for index, p in enumerate(placed):
        letter = chr(ord("A") + index % 26)
        letters[letter] = p.name
        for j in range(ny):
            for i in range(nx):
                cx, cy = (i + 0.5) * cell, (j + 0.5) * cell
                if p.x <= cx < p.x2 and p.y <= cy < p.y2:
                    rows[j][i] = "+" if rows[j][i] not in (".",) else letter
    for i in range(nx):
        if door_x <= (i + 0.5) * cell < door_x + DOOR_WIDTH:
            rows[0][i] = "=" if rows[0][i] == "." else "+"
    picture = "\n".join("".join(r) for r in reversed(rows))
    legend = ", ".join(f"{k} = {v} (facing {p.facing})" for (k, v), p in zip(letters.items(), placed, strict=True))  # fmt: skip
    return f"plan, north up, {cell:g} cm per character, room {room[0]:g} x {room[1]:g} cm; '=' door, '+' overlap\n{picture}\n{legend}"  # fmt: skip
