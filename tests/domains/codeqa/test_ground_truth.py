"""Our computed `codeqa` answers agree with really running the (trusted, generated) programs."""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
import sys

import pytest

from posttrain.domains.codeqa.calls import CallOrder, RecursionValue
from posttrain.domains.codeqa.shell import ShellPipeline
from posttrain.domains.codeqa.sql import SqlSelect
from posttrain.domains.codeqa.tracing import DeadLines, FinalValue, LineCount, PredictOutput

_CASES = [(seed, difficulty) for seed in (0, 1) for difficulty in (1, 5, 10)]

# Runs a snippet under sys.settrace and reports its stdout and per-line counts as JSON.
_TRACER = """
import contextlib, io, json, sys
src = sys.stdin.read()
counts, out = {}, io.StringIO()
def tracer(frame, event, arg):
    if frame.f_code.co_filename == "<snippet>" and event == "line":
        counts[frame.f_lineno] = counts.get(frame.f_lineno, 0) + 1
    return tracer
env = {}
sys.settrace(tracer)
with contextlib.redirect_stdout(out):
    exec(compile(src, "<snippet>", "exec"), env)
sys.settrace(None)
ints = {k: v for k, v in env.items() if isinstance(v, int)}
print(json.dumps({"out": out.getvalue(), "counts": counts, "env": ints}))
"""


def _trace(source: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", _TRACER], input=source, capture_output=True, text=True, check=True
    )
    return json.loads(done.stdout)


def _python(source: str) -> str:
    done = subprocess.run(
        [sys.executable, "-c", source], capture_output=True, text=True, check=True
    )
    return done.stdout.strip()


@pytest.mark.parametrize(("seed", "difficulty"), _CASES)
def test_snippet_answers_match_a_traced_run(seed: int, difficulty: int) -> None:
    task = PredictOutput().generate(seed, difficulty)
    assert _trace(task.meta["source"])["out"].rstrip("\n") == task.answer
    task = FinalValue().generate(seed, difficulty)
    assert str(_trace(task.meta["source"])["env"][task.meta["name"]]) == task.answer
    task = LineCount().generate(seed, difficulty)
    assert str(_trace(task.meta["source"])["counts"][str(task.meta["line"])]) == task.answer
    task = DeadLines().generate(seed, difficulty)
    ran = set(map(int, _trace(task.meta["source"])["counts"]))
    lines = range(1, len(task.meta["source"].splitlines()) + 1)
    assert ",".join(str(n) for n in lines if n not in ran) == task.answer


@pytest.mark.parametrize(("seed", "difficulty"), _CASES)
def test_call_answers_match_running_python(seed: int, difficulty: int) -> None:
    task = RecursionValue().generate(seed, difficulty)
    assert _python(task.meta["source"] + f"\nprint({task.meta['call']})") == task.answer
    task = CallOrder().generate(seed, difficulty)
    profiled = (
        "import json, sys\norder = []\n"
        "sys.setprofile(lambda f, e, a: order.append(f.f_code.co_name) if e == 'call' else None)\n"
        + task.meta["source"]
        + "\nsys.setprofile(None)\nprint(json.dumps(order))"
    )
    assert _python(profiled) == task.answer


@pytest.mark.parametrize(("seed", "difficulty"), _CASES)
def test_sql_answer_matches_sqlite(seed: int, difficulty: int) -> None:
    task = SqlSelect().generate(seed, difficulty)
    db = sqlite3.connect(":memory:")
    db.execute("CREATE TABLE staff (name TEXT, dept TEXT, age INTEGER, score INTEGER)")
    db.executemany("INSERT INTO staff VALUES (:name, :dept, :age, :score)", task.meta["rows"])
    names = sorted(row[0] for row in db.execute(task.meta["query"]))
    assert names == sorted(task.answer.split(", "))


@pytest.mark.skipif(shutil.which("sort") is None, reason="coreutils not installed")
@pytest.mark.parametrize(("seed", "difficulty"), [*_CASES, (2, 7), (3, 8), (4, 9)])
def test_shell_answer_matches_coreutils(seed: int, difficulty: int) -> None:
    task = ShellPipeline().generate(seed, difficulty)
    log = "\n".join(task.meta["log"]) + "\n"
    command = task.meta["pipeline"].replace(" log.txt", "", 1)
    done = subprocess.run(
        ["sh", "-c", command], input=log, capture_output=True, text=True,
        env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"}, check=False,
    )  # fmt: skip
    assert done.stdout.rstrip("\n") == task.answer


def test_deeply_nested_brackets_are_a_wrong_format_not_a_verifier_error() -> None:
    domain = CallOrder()
    task = domain.generate(0, 1)
    verdict = domain.judge(task, "[" * 50_000)
    assert not verdict.passed and verdict.error is None
    assert verdict.components["format"] == 0.0
