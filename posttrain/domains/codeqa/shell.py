"""`codeqa/shell-pipeline-v1`: the output of a generated coreutils pipeline over given text.

    from posttrain.domains.codeqa.shell import ShellPipeline
    task = ShellPipeline().generate(seed=0, difficulty=4)

The prompt shows a small file and one pipeline built from `cut`, `grep`, `sort`,
`uniq -c` and `head`; the answer is the pipeline's exact output, which we simulate in
Python (`_simulate`) with GNU semantics under `LC_ALL=C`: byte order, `sort -rn` breaking
count ties by the whole line in reverse, `uniq -c` counting adjacent repeats. Nothing is
run at verification time. Difficulty grows the file (`difficulty_measure` = its lines)
and the pipeline's length.

Not guaranteed: only this fixed vocabulary of stages is modelled; `uniq -c` padding is
not judged (the judge collapses whitespace), so `3 apple` and `      3 apple` both pass.
"""

from __future__ import annotations

import random

from posttrain.domains.answer_domain import AnswerDomain, Problem
from posttrain.domains.base import Axes
from posttrain.domains.codeqa.judging import judge_lines, normalized_lines
from posttrain.types import Task, Verdict

_USERS = ["ana", "bo", "cy", "dee", "eli", "fay", "gus", "hal"]
_ACTIONS = ["login", "logout", "read", "write", "delete", "upload"]


def _simulate(lines: list[str], stages: list[tuple[str, str]]) -> list[str]:
    """Run `stages` over `lines` the way GNU coreutils does under LC_ALL=C."""
    for name, arg in stages:
        if name == "cut":
            lines = [line.split(" ")[int(arg) - 1] for line in lines]
        elif name == "grep":
            lines = [line for line in lines if arg in line]
        elif name == "grep -v":
            lines = [line for line in lines if arg not in line]
        elif name == "sort":
            lines = sorted(lines, key=lambda s: s.encode())
        elif name == "sort -u":
            lines = sorted(set(lines), key=lambda s: s.encode())
        elif name == "sort -rn":
            # numeric key descending, ties by the whole line, also reversed
            lines = sorted(lines, key=lambda s: (int(s.split()[0]), s.encode()), reverse=True)
        elif name == "uniq -c":
            counted: list[list[object]] = []
            for line in lines:
                if counted and counted[-1][1] == line:
                    counted[-1][0] = int(str(counted[-1][0])) + 1
                else:
                    counted.append([1, line])
            lines = [f"{n:>7} {line}" for n, line in counted]
        elif name == "head":
            lines = lines[: int(arg)]
    return lines


def _render(stages: list[tuple[str, str]]) -> str:
    parts = []
    for name, arg in stages:
        if name == "cut":
            parts.append(f"cut -d' ' -f{arg}")
        elif name in ("grep", "grep -v"):
            parts.append(f"{name} {arg}")
        elif name == "head":
            parts.append(f"head -n {arg}")
        else:
            parts.append(name)
    parts[0] += " log.txt"
    return " | ".join(parts)


def _stages(rng: random.Random, difficulty: int) -> list[tuple[str, str]]:
    stages: list[tuple[str, str]] = []
    if difficulty >= 3 and rng.random() < 0.5:
        word = rng.choice(_ACTIONS[:4])
        stages.append((rng.choice(["grep", "grep -v"]), word))
    stages.append(("cut", rng.choice(["1", "2"])))
    shape = rng.choice(["count", "count", "top", "unique"])
    if shape == "unique":
        stages.append(("sort -u", ""))
    else:
        stages += [("sort", ""), ("uniq -c", "")]
        if shape == "top" or difficulty >= 5:
            stages.append(("sort -rn", ""))
    if difficulty >= 2 and rng.random() < 0.6:
        stages.append(("head", str(rng.randint(2, 4))))
    return stages


class ShellPipeline(AnswerDomain):
    """Predict a coreutils pipeline's output over a short log file."""

    id = "codeqa/shell-pipeline-v1"
    axes = Axes("code", "none", "single", "exact")
    instructions = (
        "Reply with the exact output only, one line per line, no code block. "
        "For `uniq -c` lines write the count, a space, then the text (padding optional)."
    )

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        size = 4 + 3 * difficulty
        users = _USERS[: 3 + difficulty // 3]
        for _ in range(100):
            log = [f"{rng.choice(users)} {rng.choice(_ACTIONS)}" for _ in range(size)]
            stages = _stages(rng, difficulty)
            output = _simulate(log, stages)
            if len(output) >= 2:
                break
        pipeline = _render(stages)
        prompt = (
            "The file `log.txt` holds these lines (each is `user action`):\n\n```\n"
            + "\n".join(log)
            + f"\n```\n\nWith GNU coreutils and LC_ALL=C, what does this command print?\n\n"
            f"```sh\n{pipeline}\n```\n"
        )
        meta = {"log": log, "pipeline": pipeline}
        return Problem(prompt, "\n".join(output), meta, float(size))

    def judge(self, task: Task, text: str) -> Verdict:
        return judge_lines(task, text)

    def wrong(self, task: Task) -> list[str]:
        lines = normalized_lines(task.answer)
        first = lines[0].split(" ")
        if first[0].isdigit():
            bumped = " ".join([str(int(first[0]) + 1), *first[1:]])
        else:
            bumped = first[0] + "s"
        reordered = list(reversed(lines))
        if reordered == lines:  # pragma: no cover - lines are distinct
            reordered = [*lines, lines[0]]
        return [
            "\n".join(lines[:-1]),  # one line short
            "\n".join([bumped, *lines[1:]]),  # one count off by one
            "\n".join(reordered),  # wrong order
        ]


DOMAINS: tuple[AnswerDomain, ...] = (ShellPipeline(),)
