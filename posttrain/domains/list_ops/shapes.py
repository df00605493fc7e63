"""`list/*` tasks whose answer is a grid: chunk a list into groups, transpose a matrix.

    from posttrain.domains.list_ops.shapes import DOMAINS
    task = DOMAINS[1].generate(seed=0, difficulty=3)

The answer is one JSON array of integer arrays (`[[1,2],[3]]`; any JSON spacing, or a
single ```json fence, is accepted), verified by structure: it must parse, have the right
shape (row lengths) and the right values. A right-shaped grid with a wrong value earns
0.2 (still failed); anything else wrong earns 0. Difficulty grows the element count
(`measure`).

Not guaranteed: JSON numbers must be integers (`2.0` is not `2`); the prompt's list
or matrix is shown in a different notation from the answer, so an echo never parses.
"""

from __future__ import annotations

import random

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.domains.list_ops.formats import (
    JSON_GRID_ONLY,
    distinct_wrongs,
    grid_text,
    joined,
    judge_grid,
)
from posttrain.types import Task, Verdict

_STRUCTURE = Axes("text", "none", "single", "structure")
Grid = list[list[int]]


def _grid_wrongs(answer: Grid, extra: list[Grid]) -> list[str]:
    """The domain's own mistakes, then a value off by one, the last row dropped and the
    last row repeated."""
    changed = [list(row) for row in answer]
    changed[-1][-1] += 1
    generic = [changed, answer[:-1], answer + answer[-1:]]
    right = grid_text(answer)
    texts = [grid_text(g) for g in [*extra, *generic] if g]
    return distinct_wrongs(right, texts, lambda t: t == right)


def _chunks(values: list[int], k: int) -> Grid:
    return [values[i : i + k] for i in range(0, len(values), k)]


class Chunk(AnswerDomain):
    """Split a list into consecutive groups of k; the last group may be shorter."""

    id = "list/chunk-v1"
    axes = _STRUCTURE
    instructions = JSON_GRID_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        n = 5 + 3 * (difficulty - 1)
        k = rng.randint(2, max(2, min(6, n // 2)))
        while n % k == 0:  # a short last group is the point of the task (n-1 never divides n)
            k += 1
        values = [rng.randint(-9 if difficulty >= 5 else 0, 50) for _ in range(n)]
        prompt = (
            f"Split this list into consecutive groups of {k} elements, in order; the last "
            f"group holds whatever remains.\n{joined(values)}"
        )
        answer = _chunks(values, k)
        return Problem(prompt, grid_text(answer), {"values": values, "k": k}, measure=n)

    def judge(self, task: Task, text: str) -> Verdict:
        m = task.meta
        return judge_grid(_chunks(m["values"], m["k"]), text, f"groups of {m['k']}")

    def wrong(self, task: Task) -> list[str]:
        values, k = task.meta["values"], task.meta["k"]
        answer = _chunks(values, k)
        padded = [row + [0] * (k - len(row)) for row in answer]
        return _grid_wrongs(answer, [_chunks(values, k + 1), [values], padded])


# Rows × columns per difficulty: never square, so the transpose differs in shape too.
_SHAPES = [(2, 3), (3, 2), (2, 4), (3, 4), (4, 3), (4, 5), (5, 4), (5, 6), (6, 5), (6, 7)]


def _transposed(matrix: Grid) -> Grid:
    return [list(col) for col in zip(*matrix, strict=True)]


class Transpose(AnswerDomain):
    """Transpose a matrix given row by row: row i of the answer is column i of the input."""

    id = "list/transpose-v1"
    axes = _STRUCTURE
    instructions = JSON_GRID_ONLY

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        rows, cols = _SHAPES[difficulty - 1]
        low = -9 if difficulty >= 5 else 0
        matrix = [[rng.randint(low, 30) for _ in range(cols)] for _ in range(rows)]
        shown = "\n".join(" ".join(str(x) for x in row) for row in matrix)
        prompt = (
            f"Here is a matrix with {rows} rows and {cols} columns, one row per line:\n"
            f"{shown}\n\nGive its transpose as a list of rows (row i of the transpose is "
            "column i of the matrix)."
        )
        answer = _transposed(matrix)
        return Problem(prompt, grid_text(answer), {"matrix": matrix}, measure=rows * cols)

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_grid(_transposed(task.meta["matrix"]), text, "the transposed matrix")

    def wrong(self, task: Task) -> list[str]:
        matrix: Grid = task.meta["matrix"]
        answer = _transposed(matrix)
        rotated = [row[::-1] for row in answer]  # a quarter turn instead of a transpose
        return _grid_wrongs(answer, [matrix, rotated])


DOMAINS: tuple[AnswerDomain, ...] = (Chunk(), Transpose())
