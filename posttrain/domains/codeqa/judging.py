"""Strict answer judges shared by the `codeqa` domains.

    judge_lines(task, text)       # printed output, line by line
    judge_integer(task, text)     # one integer
    judge_int_set(task, text)     # comma-separated integers in any order (Jaccard credit)
    judge_json_strings(task, text)  # a JSON array of strings, order significant

Each takes the task (whose `answer` is the canonical text) and the model's final text,
and returns a `Verdict`; prose around an answer fails its format and scores 0.

Not guaranteed: `judge_lines` collapses runs of spaces inside a line and ignores leading
and trailing whitespace on each line, so it cannot tell `print("a  b")` from
`print("a b")`; the snippets we generate never print such strings.
"""

from __future__ import annotations

import json

from posttrain.domains.answer_domain import verdict
from posttrain.types import Task, Verdict
from posttrain.verify.answers import parse_int_list, strict_integer


def normalized_lines(text: str) -> list[str]:
    """The text's lines, each with its whitespace collapsed, outer blank lines dropped."""
    return [" ".join(line.split()) for line in text.strip().splitlines()]


def judge_lines(task: Task, text: str) -> Verdict:
    expected = normalized_lines(task.answer)
    got = normalized_lines(text)
    if got == expected:
        return verdict(True, "the exact printed output")
    if len(got) != len(expected):
        why = f"{len(got)} lines instead of {len(expected)}"
    else:
        first = next(i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b)
        why = f"line {first + 1} differs"
    return verdict(False, "the exact printed output", why=why)


def judge_integer(task: Task, text: str) -> Verdict:
    value = strict_integer(text)
    what = "one integer"
    if value is None:
        return verdict(False, what, components={"format": 0.0, "correct": 0.0}, why="not one integer")  # fmt: skip
    ok = value == int(task.answer)
    return verdict(ok, what, components={"format": 1.0, "correct": float(ok)}, why=f"got {value}")


def judge_int_set(task: Task, text: str) -> Verdict:
    """Exact set passes; a well-formed wrong set earns its Jaccard overlap (below 1)."""
    what = "the set of line numbers, comma-separated"
    got = parse_int_list(text)
    if got is None:
        return verdict(False, what, components={"format": 0.0, "jaccard": 0.0}, why="not a comma-separated list of integers")  # fmt: skip
    if len(set(got)) != len(got):
        return verdict(False, what, components={"format": 0.0, "jaccard": 0.0}, why="a number is repeated")  # fmt: skip
    expected = {int(x) for x in task.answer.split(",")}
    overlap = len(expected & set(got)) / len(expected | set(got))
    ok = set(got) == expected
    return verdict(ok, what, components={"format": 1.0, "jaccard": overlap}, reward=overlap, why=f"overlap {overlap:.2f}")  # fmt: skip


def judge_json_strings(task: Task, text: str) -> Verdict:
    what = "a JSON array of strings in order"
    try:
        got = json.loads(text.strip())
    except (ValueError, RecursionError):  # RecursionError: deeply nested brackets
        got = None
    if not isinstance(got, list) or not all(isinstance(x, str) for x in got):
        return verdict(False, what, components={"format": 0.0, "correct": 0.0}, why="not a JSON array of strings")  # fmt: skip
    ok = got == json.loads(task.answer)
    return verdict(ok, what, components={"format": 1.0, "correct": float(ok)}, why="the sequence differs")  # fmt: skip


def numbered(source: str) -> str:
    """The source with `N| ` line-number prefixes, for prompts that ask about lines."""
    lines = source.splitlines()
    width = len(str(len(lines)))
    return "\n".join(f"{i:>{width}}| {line}" for i, line in enumerate(lines, 1))
