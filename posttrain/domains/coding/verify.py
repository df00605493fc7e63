"""SWE-bench-style verification: allow-listed files onto a pristine repository, hidden tests.

`judged_files` takes only the task's editable source files from the final workspace
and lays them over the pristine repository (`task.files`): edited or deleted tests, a
root `conftest.py`, `pytest.ini`, `pyproject.toml`, `sitecustomize.py` and anything
else the agent wrote never reach the judge. `Judge` opens a fresh sandbox on that
tree (`Sandbox.from_snapshot`) and runs the cases — visible and hidden, inputs the
agent never saw — with the harness of `runner.py` (`python3 -I -S`: no site, no
sitecustomize, no workspace config; expected values stay on the host). `score` turns
the results into SWE-bench semantics: the fail-to-pass cases must now pass and the
pass-to-pass cases must still pass.

    with Judge(judged_files(task, final)) as judge:
        results = judge.cases(task.meta["cases"])   # None when the harness never reported

Not guaranteed: a verification costs a fresh sandbox (~0.1 s) plus the programs' run
time; without isolation on the machine, `Judge` raises `SandboxUnavailable` and the
domains turn it into a verdict with `error` set.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from posttrain.domains.coding.runner import harness_input, harness_program, parse_results, same
from posttrain.sandbox import ExecResult, Sandbox, SandboxSpec, Snapshot
from posttrain.types import Rollout, Task

JUDGE_SPEC = SandboxSpec(memory_mb=768, timeout_s=10.0, max_processes=32, tmpfs_mb=64)


def judged_files(task: Task, final: Mapping[str, bytes] | None) -> dict[str, bytes]:
    """The pristine repository with the editable files taken from `final` (absent: deleted)."""
    files = {path: text.encode() for path, text in task.files.items()}
    if final is None:
        return files
    for path in task.meta["editable"]:
        if path in final:
            files[path] = final[path]
        else:
            files.pop(path, None)
    return files


def unchanged(task: Task, final: Mapping[str, bytes] | None) -> bool:
    """Whether every editable file is as generated (the verdict is then known without running)."""
    return final is None or all(final.get(p) == task.files[p].encode() for p in task.meta["editable"])  # fmt: skip


class Judge:
    """A fresh sandbox holding the judged tree; run cases or commands in it, then close."""

    def __init__(self, files: Mapping[str, bytes | str], spec: SandboxSpec = JUDGE_SPEC) -> None:
        self.sandbox = Sandbox.from_snapshot(Snapshot.from_files(files), spec)

    def cases(self, cases: Sequence[dict[str, Any]], timeout: float = 8.0) -> list[dict[str, Any]] | None:  # fmt: skip
        marker = f"@@coding-{secrets.token_hex(8)}@@"
        result = self.sandbox.exec(
            ["python3", "-I", "-S", "-c", harness_program(marker)], timeout=timeout, stdin=harness_input(list(cases))
        )  # fmt: skip
        if result.error:
            raise RuntimeError(f"sandbox failed: {result.error}")
        return parse_results(result.stdout, marker, len(cases))

    def exec(self, command: str | list[str], timeout: float = 8.0, stdin: str | None = None) -> ExecResult:  # fmt: skip
        result = self.sandbox.exec(command, timeout=timeout, stdin=stdin)
        if result.error:
            raise RuntimeError(f"sandbox failed: {result.error}")
        return result

    def replace(self, files: Mapping[str, bytes | str]) -> None:
        """Make the workspace exactly `files` (the next judged state), with /tmp, /dev/shm,
        their extended attributes and IPC objects wiped: the judged code must not tell its
        runs apart by what an earlier run left behind. Not wiped: the sandbox's pid counter
        (a later run gets higher pids), so a state whose verdict is the reward is judged in
        a `Judge` of its own (the final state; write-regression-test's buggy and fixed
        runs); `replace` serves the per-turn `turn_N_visible` feedback and typed's mypy."""
        self.sandbox.set_baseline(Snapshot.from_files(files))
        self.sandbox.reset()

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.sandbox.close()


def score(cases: Sequence[dict[str, Any]], results: Sequence[dict[str, Any]] | None) -> dict[str, float]:  # fmt: skip
    """Components: tests_fixed / tests_kept (fractions of fail-to-pass / pass-to-pass passing),
    tests_broken (fraction of pass-to-pass now failing)."""
    rows = results if results is not None else [{"raises": "no report"}] * len(cases)
    ok = [same(r, c["expected"]) for c, r in zip(cases, rows, strict=True)]
    f2p = [o for o, c in zip(ok, cases, strict=True) if c["f2p"]]
    p2p = [o for o, c in zip(ok, cases, strict=True) if not c["f2p"]]
    kept = sum(p2p) / len(p2p) if p2p else 1.0
    return {"tests_fixed": sum(f2p) / len(f2p) if f2p else 1.0, "tests_kept": kept, "tests_broken": 1.0 - kept}  # fmt: skip


def reward_of(components: Mapping[str, float]) -> tuple[float, bool]:
    """1 when every fail-to-pass case passes and none broke; else at most 0.5, partial credit."""
    passed = components["tests_fixed"] == 1.0 and components["tests_kept"] == 1.0
    return (1.0, True) if passed else (0.5 * components["tests_fixed"] * components["tests_kept"], False)  # fmt: skip


def turn_states(rollout: Rollout, history: Sequence[Snapshot], initial: Snapshot) -> list[Snapshot]:
    """The workspace after each assistant turn (history holds one entry per served call)."""
    states, calls = [], 0
    for turn in rollout.turns:
        calls += len(turn.tool_calls)
        states.append(history[min(calls, len(history)) - 1] if calls and history else initial)
    return states


def per_turn(task: Task, judge: Judge | None, states: Sequence[Snapshot], final_ok: Sequence[bool] | None,
             final: Snapshot | None, run: Callable[[list[dict[str, Any]]], list[dict[str, Any]] | None] | None = None) -> dict[str, float]:  # fmt: skip
    """`turn_N_visible`: the fraction of visible cases passing after turn N (dense feedback)."""
    visible = [c for c in task.meta["cases"] if c["visible"]]
    if not visible:
        return {}
    base = sum(same(c["buggy"], c["expected"]) for c in visible) / len(visible)
    known: dict[str, float] = {}
    out = {}
    for number, state in enumerate(states[:32], start=1):
        files = state.files()
        if unchanged(task, files):
            value = base
        elif final is not None and state.digest == final.digest and final_ok is not None:
            value = sum(final_ok) / len(final_ok)
        elif judge is None:
            value = 0.0
        else:
            key = "|".join(repr(files.get(p)) for p in task.meta["editable"])
            if key not in known:
                judge.replace(judged_files(task, files))
                rows = run(visible) if run is not None else judge.cases(visible)
                ok = score_rows(visible, rows)
                known[key] = sum(ok) / len(ok)
            value = known[key]
        out[f"turn_{number}_visible"] = value
    return out


def score_rows(cases: Sequence[dict[str, Any]], results: Sequence[dict[str, Any]] | None) -> list[bool]:  # fmt: skip
    if results is None:
        return [False] * len(cases)
    return [same(r, c["expected"]) for c, r in zip(cases, results, strict=True)]
