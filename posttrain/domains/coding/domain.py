"""`RepoDomain`: the shared body of the multi-turn repository domains, and `coding/fix-failing-test-v1`.

A variant sets `id`, `axes`, and writes `plan(difficulty)` (the repository's size and
bugs), `statement(task, repo)` (what the prompt reveals) and, when its verdict needs
more than the cases, `extra(judge, task, files)`. `generate`, `open` (a
`CodingSession` over the repository), `reference` (run the tests, read the buggy
file, apply the true patch, rerun, stop), `verify` (`verify.py`: allow-listed files
onto the pristine repository in a fresh sandbox, visible + hidden cases, per-turn
visible status) and `corrupt` come from here.

Corruptions: a no-op; the fix plus a bug in another module (a pass-to-pass case
breaks); the failing tests deleted; the failing tests weakened; the visible failing
output hard-coded into the source.

Not guaranteed: a verdict needs the sandbox; without it the verdict has `error` set.
"""

from __future__ import annotations

import json
import random
from abc import ABC, abstractmethod
from typing import Any, ClassVar

from posttrain.domains.base import Axes, Session, check_difficulty, task_id, task_rng
from posttrain.domains.coding.bugs import inject, unified_diff
from posttrain.domains.coding.repo import (
    Plan,
    Repo,
    build_repo,
    call_text,
    first_failure,
    outcome_text,
    path_of,
)
from posttrain.domains.coding.runner import load_module, run_on_host, same
from posttrain.domains.coding.templates_more import TEMPLATES
from posttrain.domains.coding.tools import TOOLS_HELP, CodingSession
from posttrain.domains.coding.verify import (
    Judge,
    judged_files,
    per_turn,
    reward_of,
    score,
    score_rows,
    turn_states,
    unchanged,
)
from posttrain.tools.parse import format_tool_call
from posttrain.types import Message, Reference, Rollout, Task, ToolCall, Verdict

PYTEST = "python3 -m pytest -q -p no:cacheprovider"


def tool_turn(name: str, **arguments: str) -> Message:
    call = ToolCall(name, arguments, id="call_0")
    return Message("assistant", format_tool_call(call), tool_calls=[call])


def breaking_patch(rng: random.Random, repo: Repo) -> str | None:
    """The true fix plus a bug in a module without one that breaks a pass-to-pass case."""
    buggy_modules = {b["module"] for b in repo.bugs}
    for template in [t for t in TEMPLATES if t.module in repo.modules and t.module not in buggy_modules]:  # fmt: skip
        name = f"{repo.package}.{template.module}"
        mine = [c for c in repo.cases if c["module"] == name]
        for site in rng.sample(list(template.sites), len(template.sites)):
            broken = inject(template.source, [(site.old, site.new)])
            bad = {name: load_module(broken, name)}
            if any(not same(run_on_host(bad, c), c["expected"]) for c in mine):
                path = path_of(repo.package, template.module)
                after = {**repo.fixed, path: broken}
                return unified_diff({p: repo.files[p] for p in after}, after)
    return None


class RepoTasks(ABC):
    """Generation, verification and corruptions shared by every repository domain."""

    id: ClassVar[str]
    axes: ClassVar[Axes] = Axes("code", "shell", "multi", "unit_tests")
    max_turns = 16
    run_command: ClassVar[str] = PYTEST

    # -- what a variant writes ---------------------------------------------------------

    def plan(self, difficulty: int) -> Plan:
        return Plan(modules=min(2 + (difficulty - 1) // 3, 5), bugs=1 if difficulty < 8 else 2,
                    subtlety=1 + (difficulty - 1) // 3, hidden=2 + difficulty // 3)  # fmt: skip

    def build(self, rng: random.Random, difficulty: int) -> Repo:
        return build_repo(rng, self.plan(difficulty))

    @abstractmethod
    def statement(self, task: Task, repo: Repo) -> str:
        """Written by each subclass."""

    def breaking(self, rng: random.Random, repo: Repo) -> str | None:
        return breaking_patch(rng, repo)

    def run_cases(self, judge: Judge, task: Task, cases: list[dict[str, Any]]) -> list[dict[str, Any]] | None:  # fmt: skip
        return judge.cases(cases)

    def extra(self, judge: Judge, task: Task, files: dict[str, bytes]) -> dict[str, float]:
        """More components that must all be 1 for a pass (a checker, a structure rule)."""
        return {}

    def measure(self, difficulty: int) -> float:
        plan = self.plan(difficulty)
        return float(plan.modules * 10 + plan.bugs * 5 + plan.subtlety + plan.hidden / 10)

    # -- the Domain protocol -------------------------------------------------------------

    def generate(self, seed: int, difficulty: int) -> Task:
        check_difficulty(difficulty)
        rng = task_rng(self.id, seed, difficulty)
        repo = self.build(rng, difficulty)
        task = Task(
            id=task_id(self.id, seed, difficulty), domain=self.id, prompt=[], answer=repo.patch,
            difficulty=difficulty, seed=seed, files=repo.files,
            meta={"package": repo.package, "editable": repo.editable, "cases": repo.cases,
                  "bugs": repo.bugs, "fixed": repo.fixed, "breaking": self.breaking(rng, repo),
                  "measure": self.measure(difficulty), "run": self.run_command},
        )  # fmt: skip
        task.prompt = [Message("user", self.statement(task, repo) + "\n\n" + self.footer(task))]
        return task

    def footer(self, task: Task) -> str:
        return ""

    def judge(self, task: Task, final: dict[str, bytes] | None, coding: CodingSession | None = None, states: list[Any] | None = None) -> Verdict:  # fmt: skip
        """The verdict on `final` (the workspace's files; None: nothing changed), never raising."""
        try:
            return self._judge(task, final, coding, states or [])
        except Exception as exc:  # the sandbox or the verifier failed, not the answer
            return Verdict(0.0, False, "The verifier failed; nothing was judged.", error=f"{type(exc).__name__}: {exc}")  # fmt: skip

    def _judge(self, task: Task, final: dict[str, bytes] | None, coding: CodingSession | None, states: list[Any]) -> Verdict:  # fmt: skip
        cases = task.meta["cases"]
        if unchanged(task, final):
            components = score(cases, [c["buggy"] for c in cases])
            components |= per_turn(task, None, states, None, None)
            return Verdict(0.0, False, "No editable source file was changed; the bug is still there.", components)  # fmt: skip
        assert final is not None
        with Judge(judged_files(task, final)) as judge:
            results = self.run_cases(judge, task, cases)
            components = score(cases, results)
            reward, passed = reward_of(components)
            extra = self.extra(judge, task, final) if passed else {}
            ok = score_rows(cases, results)
            final_ok = [o for o, c in zip(ok, cases, strict=True) if c["visible"]]
            components |= extra | per_turn(task, judge, states, final_ok, coding.state if coding else None, lambda c: self.run_cases(judge, task, c))  # fmt: skip
        if extra and min(extra.values()) < 1.0:
            reward, passed = 0.5, False
        if results is None:
            reason = "The program never reported its test results (it crashed or exited early)."
        elif passed:
            reason = "Every fail-to-pass test now passes and every pass-to-pass test still passes."
        else:
            reason = (f"Fixed {components['tests_fixed']:.0%} of the failing tests, kept "
                      f"{components['tests_kept']:.0%} of the passing ones"
                      + (f"; failed: {', '.join(k for k, v in extra.items() if v < 1)}" if extra else "") + ".")  # fmt: skip
        return Verdict(reward, passed, reason, components)

    def difficulty_measure(self, task: Task) -> float:
        return float(task.meta["measure"])


class RepoDomain(RepoTasks):
    """Base of the multi-turn repository domains: a `CodingSession` with the four tools."""

    tool_names: ClassVar[tuple[str, ...]] = ("shell", "read_file", "write_file", "apply_patch")

    def footer(self, task: Task) -> str:
        editable = ", ".join(task.meta["editable"])
        return (f"Only these files are taken from your workspace when you finish: {editable}. "
                "Everything else is restored, and hidden tests with other inputs are run as well.\n"
                + TOOLS_HELP + f" You have at most {self.max_turns} turns.")  # fmt: skip

    def open(self, task: Task, sandbox: object | None = None) -> CodingSession:
        """A workspace holding the repository; `sandbox` is unused (shell calls lease one)."""
        return CodingSession(task.files, self.tool_names)

    def reference(self, task: Task) -> Reference:
        first = task.meta["bugs"][0]["path"]
        return Reference([
            tool_turn("shell", command=task.meta["run"]),
            tool_turn("read_file", path=first),
            tool_turn("apply_patch", patch=task.answer),
            tool_turn("shell", command=task.meta["run"]),
            Message("assistant", "Fixed: the patch above makes the failing tests pass."),
        ])  # fmt: skip

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        coding = session if isinstance(session, CodingSession) else None
        if coding is None:
            return self.judge(task, None)
        states = turn_states(rollout, coding.history, coding.initial)
        return self.judge(task, coding.files(), coding, states)

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        done = Message("assistant", "Done.")
        out = [Reference([done])]
        if task.meta["breaking"]:
            out.append(Reference([tool_turn("apply_patch", patch=task.meta["breaking"]), done]))
        tests = sorted(p for p in task.files if p.startswith("tests/"))
        f2p = [c for c in task.meta["cases"] if c["visible"] and c["f2p"]]
        if tests and f2p:
            shown = f2p[0]
            test_path = f"tests/test_{shown['module'].rsplit('.', 1)[-1]}.py"
            deleted = unified_diff({test_path: task.files[test_path]}, {})
            out.append(Reference([tool_turn("apply_patch", patch=deleted), done]))
            weak = "\n".join(x for x in task.files[test_path].splitlines() if not x.startswith("    assert") and not x.startswith("    with pytest"))  # fmt: skip
            out.append(Reference([tool_turn("write_file", path=test_path, content=weak + "\n    pass\n"), done]))  # fmt: skip
        out.append(Reference([tool_turn("apply_patch", patch=hard_coded(task)), done]))
        return out


def hard_coded(task: Task) -> str:
    """A patch that wraps the function of the first shown failing case to return its expected
    outcome for exactly those inputs (the visible test passes; hidden ones do not)."""
    case = next((c for c in task.meta["cases"] if c["visible"] and c["f2p"]), None) or next(c for c in task.meta["cases"] if c["f2p"])  # fmt: skip
    path = f"{case['module'].replace('.', '/')}.py"
    expected, fn = case["expected"], case["call"]
    if "raises" in expected:
        body = f"        raise {expected['raises']}('hard-coded')"
    elif case["capture"]:
        body = f"        print({expected['value'][1]!r}, end='')\n        return {expected['value'][0]!r}"
    else:
        body = f"        return {expected['value']!r}"
    wrapper = (f"\n\n_original_{fn} = {fn}\n\n\ndef {fn}(*args, **kwargs):\n"
               f"    if list(args) == {json.loads(json.dumps(case['args']))!r}:\n{body}\n"
               f"    return _original_{fn}(*args, **kwargs)\n")  # fmt: skip
    return unified_diff({path: task.files[path]}, {path: task.files[path] + wrapper})


class FixFailingTestDomain(RepoDomain):
    """`coding/fix-failing-test-v1`: the test suite fails; fix the source (multi-turn, shell)."""

    id = "coding/fix-failing-test-v1"

    def statement(self, task: Task, repo: Repo) -> str:
        failing = [c for c in repo.cases if c["visible"] and c["f2p"]]
        where = [f"tests/test_{c['module'].rsplit('.', 1)[-1]}.py::{c['name']}" for c in failing]
        head = (f"The Python repository in /workspace (package `{repo.package}`, tests in `tests/`, "
                f"see README.md) has failing tests. Fix the bug in the package source; do not change the tests.")  # fmt: skip
        if task.difficulty <= 3:
            case = first_failure(repo.cases)
            return (f"{head}\n\n`{PYTEST}` reports, among others:\nFAILED {where[0]}: "
                    f"`{call_text(case)}` gave {outcome_text(case['buggy'])}, expected {outcome_text(case['expected'])}")  # fmt: skip
        if task.difficulty <= 6:
            return f"{head}\n\nFailing tests: {', '.join(where)}"
        return head
