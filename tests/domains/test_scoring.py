"""`posttrain score`'s engine: reading saved completions, scoring them, summarizing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from posttrain.domains import get_domain
from posttrain.domains.dataset import DatasetDomain
from posttrain.domains.scoring import (
    ScoreInputError,
    read_completions,
    score_completions,
    summarize,
)
from posttrain.tools.parse import format_tool_call
from posttrain.types import ToolCall


def _write(path: Path, rows: list[object]) -> Path:
    path.write_text("".join((r if isinstance(r, str) else json.dumps(r)) + "\n" for r in rows))
    return path


def test_seed_lines_are_scored_per_component(tmp_path: Path) -> None:
    domain = get_domain("arith/addition-v1")
    task = domain.generate(3, 2)
    path = _write(tmp_path / "c.jsonl", [
        {"seed": 3, "difficulty": 2, "completion": task.answer},
        {"seed": 3, "difficulty": 2, "completion": f"It is {task.answer}"},
        {"task": task.to_dict(), "completion": "nope"},
    ])  # fmt: skip
    scored = score_completions(domain, read_completions(path, domain))
    got = [(s.line, s.rollout.verdict.passed, s.rollout.verdict.components) for s in scored]
    assert got == [
        (1, True, {"format": 1.0, "correct": 1.0, "digits": 1.0}),
        (2, False, {"format": 0.0, "correct": 1.0, "digits": 0.0}),
        (3, False, {"format": 0.0, "correct": 0.0, "digits": 0.0}),
    ]
    summary = summarize(scored)
    assert (summary.n, summary.passed.successes, summary.errors) == (3, 1, 0)
    assert summary.components == {
        "format": pytest.approx(1 / 3), "correct": pytest.approx(2 / 3),
        "digits": pytest.approx(1 / 3),
    }  # fmt: skip


def test_turns_replay_tool_calls_through_the_session(tmp_path: Path) -> None:
    domain = get_domain("tools/calculator-v1")
    task = domain.generate(0, 1)
    call = format_tool_call(ToolCall("calculator", {"expression": task.meta["expression"]}))
    path = _write(tmp_path / "c.jsonl", [
        {"seed": 0, "difficulty": 1, "turns": [call, task.answer]},
        {"seed": 0, "difficulty": 1, "completion": task.answer},
    ])  # fmt: skip
    verdicts = [
        s.rollout.verdict for s in score_completions(domain, read_completions(path, domain))
    ]
    assert [v.passed for v in verdicts] == [True, False]  # the second never used the tool
    assert verdicts[1].components["used_tool"] == 0.0


def test_row_lines_score_a_dataset_domain(tmp_path: Path) -> None:
    data = _write(tmp_path / "d.jsonl", [{"prompt": f"p{i}", "answer": f"a{i}"} for i in range(5)])
    domain = DatasetDomain("mine/rows-v1", data, verifier="exact")
    path = _write(tmp_path / "c.jsonl", [{"row": 4, "completion": "a4"}, {"row": 0, "completion": "a4"}])  # fmt: skip
    scored = score_completions(domain, read_completions(path, domain))
    assert [s.rollout.verdict.passed for s in scored] == [True, False]
    assert scored[0].task_id == "mine/rows-v1@row4"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("{oops", ":1: not valid JSON"),
        ("[1]", "must be a JSON object"),
        ({"seed": 1, "difficulty": 11, "completion": "x"}, "'difficulty' must be an integer 1..10"),
        ({"seed": -1, "difficulty": 1, "completion": "x"}, "non-negative integer 'seed'"),
        ({"seed": 1, "difficulty": 1}, "exactly one of 'completion' and 'turns'"),
        ({"seed": 1, "difficulty": 1, "turns": []}, "non-empty list of strings"),
        ({"row": 0, "completion": "x"}, "only for dataset domains"),
        ({"task": {"id": "x"}, "completion": "x"}, "'task' is not a Task"),
    ],
)
def test_bad_lines_name_the_line_and_problem(tmp_path: Path, line: object, message: str) -> None:
    path = _write(tmp_path / "c.jsonl", [line])
    with pytest.raises(ScoreInputError, match=message):
        read_completions(path, get_domain("arith/addition-v1"))


def test_a_task_of_another_domain_is_refused(tmp_path: Path) -> None:
    task = get_domain("list/sort-v1").generate(0, 1)
    path = _write(tmp_path / "c.jsonl", [{"task": task.to_dict(), "completion": "1"}])
    with pytest.raises(ScoreInputError, match="is from 'list/sort-v1'"):
        read_completions(path, get_domain("arith/addition-v1"))
