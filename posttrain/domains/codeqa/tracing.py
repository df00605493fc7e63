"""Trace a generated Python snippet by reading it: output, a variable, a line's count, dead lines.

    from posttrain.domains.codeqa.tracing import DOMAINS
    task = DOMAINS[0].generate(seed=0, difficulty=4)

Four domains over the snippets of `snippets.py`, each with its own question and judge:

- `codeqa/predict-output-v1` (exact) — the snippet's printed output, line by line;
- `codeqa/final-value-v1` (exact) — one named integer variable's value at the end;
- `codeqa/line-count-v1` (exact) — how many times one line inside a loop runs (its
  loops run 2 .. 5 + d//2 times, and the asked count is spread over the counts the
  drawn snippets offer, so no constant answer is right on more than about a third);
- `codeqa/dead-lines-v1` (set match) — the line numbers that never run for the input `n`.

Difficulty fixes the snippet's line count (`difficulty_measure`), its nesting depth and
its loop lengths. Answers come from our interpreter, never from running text.

Not guaranteed: an `if`/`for` header counts as executed once reached (Python's own line
tracing agrees); the snippets hold only small integers, one string and one list.
"""

from __future__ import annotations

import random

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.domains.codeqa.judging import (
    judge_int_set,
    judge_integer,
    judge_lines,
    normalized_lines,
    numbered,
)
from posttrain.domains.codeqa.snippets import Program, generate_program
from posttrain.types import Task, Verdict

_CODE = "Here is a Python 3 program:\n\n```python\n{}\n```\n"
_NUMBERED = (
    "Here is a Python 3 program; each line starts with its line number and `| `, "
    "which are not part of the code:\n\n```\n{}\n```\n"
)


def _measure(program: Program) -> float:
    return float(len(program.source.splitlines()))


class PredictOutput(AnswerDomain):
    """The exact text a generated snippet prints."""

    id = "codeqa/predict-output-v1"
    axes = Axes("code", "none", "single", "exact")
    instructions = (
        "Reply with the exact printed output only: one printed line per line, "
        "no code block, nothing else."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        program = generate_program(rng, difficulty, printing=True, with_input=False)
        prompt = _CODE.format(program.source) + "What does this program print?"
        answer = "\n".join(program.run.output)
        return Problem(prompt, answer, {"source": program.source}, _measure(program))

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_lines(task, text)

    def wrong(self, task: Task) -> list[str]:
        lines = normalized_lines(task.answer)
        first = lines[0].split(" ")
        bumped = " ".join([*first[:-1], str(int(first[-1]) + 1)])
        swapped = lines[1:2] + lines[:1] + lines[2:]
        return [
            "\n".join(lines[:-1]),  # stopped one line early
            "\n".join([bumped, *lines[1:]]),  # one value off by one
            "\n".join(swapped if swapped != lines else [*lines, "0"]),  # wrong order
        ]


class FinalValue(AnswerDomain):
    """The value of one integer variable after a generated snippet runs."""

    id = "codeqa/final-value-v1"
    axes = Axes("code", "none", "single", "exact")
    instructions = "Reply with the integer only."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        program = generate_program(rng, difficulty, printing=False, with_input=False)
        initial = {s.target: s.expr[1] for s in program.stmts[: len(program.ints)]}
        changed = [v for v in program.ints if program.run.env[v] != initial[v]]
        name = rng.choice(changed or program.ints)
        value = program.run.env[name]
        prompt = _CODE.format(program.source)
        prompt += f"What is the value of the variable `{name}` after the program finishes?"
        meta = {"source": program.source, "name": name, "initial": initial[name]}
        return Problem(prompt, str(value), meta, _measure(program))

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(task, text)

    def wrong(self, task: Task) -> list[str]:
        value = int(task.answer)
        initial = int(task.meta["initial"])
        stale = initial if initial != value else value + 2
        return [str(value + 1), str(value - 1), str(stale), str(value - 10)]


class LineCount(AnswerDomain):
    """How many times one statement inside a loop executes."""

    id = "codeqa/line-count-v1"
    axes = Axes("code", "none", "single", "exact")
    instructions = "Reply with the count as one integer only."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        # Loops of 2 .. 5 + d//2 iterations (the other tracing domains' 1 .. 2 + d//3
        # would make every count at d1 a 2), and the asked count drawn evenly from the
        # counts the drawn programs offer, so no constant answer is right often.
        spans = (2, 5 + difficulty // 2)
        offered: dict[int, list[tuple[Program, int]]] = {}
        for drawn in range(1, 101):  # at least 12 programs, more until one has a loop
            program = generate_program(rng, difficulty, printing=False, with_input=False,
                                       loop_spans=spans)  # fmt: skip
            for line in program.loop_lines:
                if program.run.counts[line] >= 2:
                    offered.setdefault(program.run.counts[line], []).append((program, line))
            if drawn >= 12 and offered:
                break
        program, line = rng.choice(offered[rng.choice(sorted(offered))])
        counts = program.run.counts
        prompt = _NUMBERED.format(numbered(program.source))
        prompt += f"How many times does line {line} execute when the program runs once?"
        neighbours = [counts.get(line - 1, 0), counts.get(line + 1, 0)]
        meta = {"source": program.source, "line": line, "neighbours": neighbours}
        return Problem(prompt, str(counts[line]), meta, _measure(program))

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_integer(task, text)

    def wrong(self, task: Task) -> list[str]:
        count = int(task.answer)
        near = [n for n in task.meta["neighbours"] if n not in (count, count + 1, count - 1)]
        return [str(count + 1), str(count - 1), str(near[0] if near else count * 2 + 1)]


class DeadLines(AnswerDomain):
    """The line numbers of a snippet that never execute for the given input."""

    id = "codeqa/dead-lines-v1"
    axes = Axes("code", "none", "single", "set_match")
    instructions = (
        "Reply with the line numbers only, comma-separated, in any order (for example: 4, 7, 9)."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        for _ in range(200):
            program = generate_program(rng, difficulty, printing=False, with_input=True)
            dead = sorted(line for line, n in program.run.counts.items() if n == 0)
            if dead:
                break
        live = sorted(line for line, n in program.run.counts.items() if n > 0)
        prompt = _NUMBERED.format(numbered(program.source))
        prompt += (
            "The input is `n`, set on line 1. An `if` or `for` line counts as executed "
            "when the program reaches it. Which lines never execute?"
        )
        meta = {"source": program.source, "live": live}
        return Problem(prompt, ",".join(map(str, dead)), meta, _measure(program))

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_int_set(task, text)

    def wrong(self, task: Task) -> list[str]:
        dead = [int(x) for x in task.answer.split(",")]
        live: list[int] = task.meta["live"]
        partial = dead[:-1] if len(dead) > 1 else [*dead, live[-1]]
        shifted = [x + 1 for x in dead]
        return [",".join(map(str, xs)) for xs in (live, partial, shifted)]


DOMAINS: tuple[AnswerDomain, ...] = (PredictOutput(), FinalValue(), LineCount(), DeadLines())
