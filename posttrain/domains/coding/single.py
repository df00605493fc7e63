"""Single-turn repository domains: answer with a patch, a function, or the bug's location.

- `coding/patch-from-failure-v1`: the prompt shows the package's modules and the failing
  tests' output; the answer is a unified diff in a ```diff block, applied on the host and
  judged like the multi-turn fixes (allow-listed files, visible and hidden tests).
- `coding/implement-function-v1`: one function of a module is a stub; the prompt shows the
  module and examples; the answer is the function in a ```python block, appended to the
  module (it replaces the stub) and judged by hidden tests.
- `coding/locate-bug-v1`: name the function (or class) holding the bug, as `module.name`.

Not guaranteed: code blocks are found by their fences only (the last ```diff or ```python
block counts); prose around them is allowed.
"""

from __future__ import annotations

import random
import re
from abc import abstractmethod
from typing import Any

from posttrain.domains.answer_domain import AnswerDomain, Problem, verdict
from posttrain.domains.base import Axes, Session
from posttrain.domains.coding.bugs import unified_diff
from posttrain.domains.coding.domain import RepoTasks, hard_coded
from posttrain.domains.coding.patch import PatchError, apply_patch
from posttrain.domains.coding.repo import Plan, Repo, build_repo, call_text, outcome_text, path_of
from posttrain.domains.coding.runner import load_module, run_on_host, same
from posttrain.domains.coding.templates_more import TEMPLATES
from posttrain.domains.coding.variants import function_span
from posttrain.types import Reference, Rollout, Task, Verdict

_DIFF = re.compile(r"```(?:diff|patch)[ \t]*\n(.*?)```", re.DOTALL)
_PYTHON = re.compile(r"```(?:python|py)[ \t]*\n(.*?)```", re.DOTALL)


def sources_text(repo: Repo) -> str:
    parts = [f"`{path_of(repo.package, m)}`:\n```python\n{repo.files[path_of(repo.package, m)]}```" for m in repo.modules]  # fmt: skip
    return "\n\n".join(parts)


def failures_text(repo: Repo) -> str:
    failing = [c for c in repo.cases if c["visible"] and c["f2p"]]
    return "\n".join(f"FAILED {c['name']}: `{call_text(c)}` gave {outcome_text(c['buggy'])}, expected {outcome_text(c['expected'])}" for c in failing)  # fmt: skip


class SingleTurnRepoTasks(RepoTasks):
    axes = Axes("code", "none", "single", "unit_tests")
    max_turns = 1
    accepts_prose = True  # a fenced block inside an explanation is a fine answer

    @abstractmethod
    def final_files(self, task: Task, text: str) -> dict[str, bytes] | str:
        """Written by each subclass."""

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        text = rollout.final_text if isinstance(rollout.final_text, str) else ""
        try:
            final = self.final_files(task, text)
        except Exception as exc:  # a verifier bug, never the answer's fault
            return Verdict(0.0, False, "The verifier failed on this answer.", error=f"{type(exc).__name__}: {exc}")  # fmt: skip
        if isinstance(final, str):
            return Verdict(0.0, False, final, {"tests_fixed": 0.0, "tests_kept": 0.0, "tests_broken": 0.0})  # fmt: skip
        return self.judge(task, final)


class PatchFromFailureDomain(SingleTurnRepoTasks):
    id = "coding/patch-from-failure-v1"

    def plan(self, difficulty: int) -> Plan:
        return Plan(modules=2 + (difficulty - 1) // 4, bugs=1 if difficulty < 8 else 2,
                    subtlety=1 + (difficulty - 1) // 3, hidden=2 + difficulty // 3)  # fmt: skip

    def statement(self, task: Task, repo: Repo) -> str:
        return (f"A Python package `{repo.package}` has these modules:\n\n{sources_text(repo)}\n\n"
                f"Its tests fail:\n{failures_text(repo)}\n\nFix the bug in the package source (hidden tests "
                "with other inputs are run too). Answer with a unified diff in a ```diff block, with paths "
                f"relative to the repository root (--- a/{repo.package}/..., +++ b/{repo.package}/...).")  # fmt: skip

    def reference(self, task: Task) -> Reference:
        return Reference.single(f"```diff\n{task.answer}```")

    def final_files(self, task: Task, text: str) -> dict[str, bytes] | str:
        blocks = _DIFF.findall(text)
        if not blocks:
            return "No ```diff block in the answer."
        try:
            patched = apply_patch(task.files, blocks[-1])
        except PatchError as exc:
            return f"The patch does not apply: {str(exc)[:200]}"
        return {p: t.encode() for p, t in patched.items()}

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        tests = sorted(p for p in task.files if p.startswith("tests/"))
        wrong = [hard_coded(task), unified_diff({tests[0]: task.files[tests[0]]}, {})]
        if task.meta["breaking"]:
            wrong.append(task.meta["breaking"])
        return [Reference.single(f"```diff\n{p}```") for p in wrong] + [Reference.single("```diff\n```")]  # fmt: skip


IMPLEMENTABLE = tuple((t.module, f.name) for t in TEMPLATES for f in t.functions if not f.capture)


class ImplementFunctionDomain(SingleTurnRepoTasks):
    id = "coding/implement-function-v1"

    def plan(self, difficulty: int) -> Plan:
        return Plan(modules=1 + (difficulty + 2) // 4, bugs=0, visible=2 + difficulty // 5, hidden=2 + difficulty // 2)  # fmt: skip

    def build(self, rng: random.Random, difficulty: int) -> Repo:
        repo = build_repo(rng, self.plan(difficulty))
        module, name = rng.choice([k for k in IMPLEMENTABLE if k[0] in repo.modules])
        path = path_of(repo.package, module)
        lines = repo.files[path].splitlines()
        start, end = function_span(lines, name)
        stub = lines[: start + 2] + ["    raise NotImplementedError"] + lines[end:]
        repo.fixed = {path: repo.files[path]}
        repo.files[path] = "\n".join(stub) + "\n"
        stubbed = {f"{repo.package}.{m}": load_module(repo.files[path_of(repo.package, m)], f"{repo.package}.{m}") for m in repo.modules}  # fmt: skip
        for case in repo.cases:
            case["buggy"] = run_on_host(stubbed, case)
            case["f2p"] = not same(case["buggy"], case["expected"])
        repo.files = {p: t for p, t in repo.files.items() if not p.startswith("tests/")}
        body = "\n".join(lines[start:end]) + "\n"
        repo.bugs = [{"kind": "stub", "module": module, "function": name, "path": path, "subtlety": 1, "body": body}]  # fmt: skip
        return repo

    def statement(self, task: Task, repo: Repo) -> str:
        bug = repo.bugs[0]
        shown = [c for c in repo.cases if c["visible"] and c["call"] == bug["function"] and c["module"].endswith("." + bug["module"])]  # fmt: skip
        examples = "\n".join(f">>> {call_text(c)}\n{outcome_text(c['expected'])}" for c in shown)
        return (f"In the Python package `{repo.package}`, the function `{bug['function']}` of `{bug['path']}` "
                f"is a stub. The module:\n\n```python\n{repo.files[bug['path']]}```\n\nExamples:\n{examples}\n\n"
                f"Implement `{bug['function']}` as its docstring says (hidden tests with other inputs are run). "
                "Answer with its complete definition (and any helper it needs) in one ```python block; "
                "it is appended to the module, replacing the stub.")  # fmt: skip

    def reference(self, task: Task) -> Reference:
        return Reference.single(f"```python\n{task.meta['bugs'][0]['body']}```")

    def final_files(self, task: Task, text: str) -> dict[str, bytes] | str:
        bug = task.meta["bugs"][0]
        blocks = _PYTHON.findall(text)
        if not blocks or f"def {bug['function']}(" not in blocks[-1]:
            return f"No ```python block defining {bug['function']}()."
        files = {p: t.encode() for p, t in task.files.items()}
        files[bug["path"]] = (task.files[bug["path"]] + "\n\n" + blocks[-1]).encode()
        return files

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        name = task.meta["bugs"][0]["function"]
        shown = [c for c in task.meta["cases"] if c["visible"] and c["call"] == name and "value" in c["expected"]]  # fmt: skip
        table = {repr(c["args"]): c["expected"]["value"] for c in shown}
        wrong = [
            f"def {name}(*args):\n    return None\n",
            f"def {name}(*args):\n    return {table!r}.get(repr(list(args)))\n",
            f"def {name}(*args):\n    return (\n",
            reference.final.replace(f"def {name}(", f"def {name}_v2(")
            .strip("`")
            .removeprefix("python\n"),
        ]
        return [Reference.single(f"```python\n{w}```") for w in wrong]

    def measure(self, difficulty: int) -> float:
        plan = self.plan(difficulty)
        return float(plan.modules * 10 + plan.visible + plan.hidden / 10)


class LocateBugDomain(AnswerDomain):
    """`coding/locate-bug-v1`: which function holds the bug that fails these tests?"""

    id = "coding/locate-bug-v1"
    axes = Axes("code", "none", "single", "exact")
    instructions = "Answer with `module.name` only (e.g. `parser.read_header`), nothing else."

    def make(self, rng: random.Random, difficulty: int) -> Problem:
        repo = build_repo(rng, Plan(modules=2 + (difficulty - 1) // 3, bugs=1, subtlety=1 + (difficulty - 1) // 3, hidden=0))  # fmt: skip
        bug = repo.bugs[0]
        names = {m: _top_names(repo.files[path_of(repo.package, m)]) for m in repo.modules}
        prompt = (f"A Python package `{repo.package}` has these modules:\n\n{sources_text(repo)}\n\n"
                  f"Its tests fail:\n{failures_text(repo)}\n\nWhich top-level function or class contains the bug?")  # fmt: skip
        measure = len(repo.modules) * 10 + 1 + (difficulty - 1) // 3
        return Problem(prompt, f"{bug['module']}.{bug['function']}", {"names": names}, measure)

    def judge(self, task: Task, text: str) -> Verdict:
        got = text.strip().strip("`")
        if not re.fullmatch(r"[a-z_]+\.[A-Za-z_]\w*", got):
            return verdict(False, f"`{task.answer}`", why="the answer is not `module.name`")
        return verdict(got == task.answer, f"`{task.answer}`", why=f"got `{got}`")

    def wrong(self, task: Task) -> list[str]:
        module, name = task.answer.split(".")
        names: dict[str, list[str]] = task.meta["names"]
        others = [f"{module}.{n}" for n in names[module] if n != name]
        elsewhere = [f"{m}.{name}" for m in names if m != module]
        return (others[:2] + elsewhere[:1] + [module])[:4]


def _top_names(source: str) -> list[str]:
    return re.findall(r"^(?:def|class) ([A-Za-z_]\w*)", source, re.MULTILINE)


DOMAINS: tuple[Any, ...] = (PatchFromFailureDomain(), ImplementFunctionDomain(), LocateBugDomain())
