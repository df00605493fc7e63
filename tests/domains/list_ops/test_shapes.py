"""`list_ops/shapes.py`: chunk a list, transpose a matrix."""

from __future__ import annotations

import json

from posttrain.domains.list_ops.shapes import Chunk, Transpose


def test_chunk_tasks_always_end_in_a_short_group() -> None:
    domain = Chunk()
    short = 0
    for seed in range(20):
        task = domain.generate(seed, 6)
        groups = json.loads(task.answer)
        assert all(len(g) == task.meta["k"] for g in groups[:-1])
        short += len(groups[-1]) < task.meta["k"]
    assert short == 20


def test_chunk_accepts_spaced_json() -> None:
    domain = Chunk()
    task = domain.generate(1, 3)
    spaced = json.dumps(json.loads(task.answer), indent=2)
    assert domain.judge(task, spaced).passed


def test_transpose_answer_swaps_the_shape() -> None:
    domain = Transpose()
    task = domain.generate(0, 7)
    matrix, answer = task.meta["matrix"], json.loads(task.answer)
    assert (len(answer), len(answer[0])) == (len(matrix[0]), len(matrix))
    assert all(answer[j][i] == matrix[i][j] for i in range(len(matrix)) for j in range(len(answer)))  # fmt: skip


def test_transpose_refuses_the_input_matrix() -> None:
    domain = Transpose()
    task = domain.generate(0, 4)
    verdict = domain.judge(task, json.dumps(task.meta["matrix"]))
    assert verdict.reward == 0.0 and verdict.components["format"] == 1.0
