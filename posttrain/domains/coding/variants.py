"""Repository variants with their own generators: a traceback, a CLI's output, a rename.

- `coding/fix-from-traceback-v1`: no tests in the repository; the prompt shows the
  command that crashed and its traceback (only bugs that raise are injected).
- `coding/fix-cli-output-v1`: a command-line program prints the wrong text; the prompt
  shows the command, what it prints and what it should print; hidden runs of the
  program with other arguments must print exactly the right text.
- `coding/refactor-rename-v1`: no bug; rename a function everywhere in its module (the
  tests already use the new name). Behaviour is checked by visible and hidden tests,
  the rename by the module's syntax tree (the old name may not remain, not even as an alias).

Not guaranteed: the traceback is rebuilt on the host from the buggy template (file
paths as in the sandbox), so its frames are exact but its wording is Python 3.11's.
"""

from __future__ import annotations

import ast
import random
import re
import shlex
import traceback
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.coding.bugs import unified_diff
from posttrain.domains.coding.domain import RepoDomain, tool_turn
from posttrain.domains.coding.repo import (
    Plan,
    Repo,
    build_repo,
    call_text,
    path_of,
    render_tests,
)
from posttrain.domains.coding.templates_more import GRADES, REPORT
from posttrain.domains.coding.verify import Judge
from posttrain.types import Message, Reference, Task


def _shown(repo: Repo) -> dict[str, Any]:
    return next(c for c in repo.cases if c["visible"] and c["f2p"])


def python_command(case: dict[str, Any]) -> str:
    package, module = case["module"].rsplit(".", 1)
    code = f"from {package} import {module}; print({call_text(case)})"
    return (
        f'python3 -c "{code}"'
        if not set(code) & set('"$`\\!')
        else "python3 -c " + shlex.quote(code)
    )


def cli_command(case: dict[str, Any]) -> str:
    return " ".join(["python3", "-m", case["module"], *(shlex.quote(a) for a in case["args"][0])])


def traceback_text(repo: Repo, case: dict[str, Any]) -> str:
    """The traceback the sandbox would print for `case` on the buggy code (our templates)."""
    module = case["module"].rsplit(".", 1)[-1]
    filename = f"/workspace/{path_of(repo.package, module)}"
    source = repo.files[path_of(repo.package, module)]
    namespace: dict[str, Any] = {"__name__": case["module"]}
    exec(compile(source, filename, "exec"), namespace)  # our own template, on the host
    lines = ["Traceback (most recent call last):", '  File "<string>", line 1, in <module>']
    try:
        namespace[case["call"]](*case["args"])
    except Exception as exc:
        for frame in traceback.extract_tb(exc.__traceback__):
            if frame.filename == filename and frame.lineno is not None:
                code = source.splitlines()[frame.lineno - 1].strip()
                lines += [
                    f'  File "{filename}", line {frame.lineno}, in {frame.name}',
                    f"    {code}",
                ]
        lines.append(f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__)
    return "\n".join(lines)


class FixFromTracebackDomain(RepoDomain):
    id = "coding/fix-from-traceback-v1"

    def plan(self, difficulty: int) -> Plan:
        return Plan(modules=min(2 + (difficulty - 1) // 3, 5), bugs=1, subtlety=3, visible=0,
                    hidden=2 + difficulty // 2, tests=False, raising=True)  # fmt: skip

    def statement(self, task: Task, repo: Repo) -> str:
        task.meta["run"] = command = python_command(_shown(repo))
        return (f"The Python package `{repo.package}` in /workspace (see README.md; it has no tests) "
                f"crashes. Running\n\n    {command}\n\nprints\n\n{traceback_text(repo, _shown(repo))}\n\n"
                "Find and fix the bug in the package source so that this call and others like it work.")  # fmt: skip


class FixCliOutputDomain(RepoDomain):
    id = "coding/fix-cli-output-v1"
    axes = Axes("code", "shell", "multi", "exact")

    def plan(self, difficulty: int) -> Plan:
        return Plan(modules=1 + (difficulty - 1) // 3, bugs=1, subtlety=1 + (difficulty - 1) // 3, visible=0,
                    hidden=3 + difficulty // 2, tests=False, cli=True, bug_templates=(REPORT, GRADES))  # fmt: skip

    def statement(self, task: Task, repo: Repo) -> str:
        case = _shown(repo)
        task.meta["run"] = command = cli_command(case)
        printed, wanted = case["buggy"], case["expected"]
        got = (
            printed["value"][1]
            if "value" in printed
            else f"(a traceback ending in {printed['raises']})\n"
        )
        return (f"The command-line program in /workspace (package `{repo.package}`, see README.md) "
                f"prints the wrong output. Running\n\n    {command}\n\nprints:\n```\n{got}```\n"
                f"It should print exactly:\n```\n{wanted['value'][1]}```\n"
                "Fix the program; it is also run with other arguments, and each run must print exactly the right text.")  # fmt: skip


RENAMES: dict[tuple[str, str], tuple[str, ...]] = {
    ("kvparse", "parse_int"): ("to_int", "read_int", "int_or_default"),
    ("intervals", "merge"): ("merge_all", "union", "coalesce"),
    ("report", "tally"): ("count_words", "word_table", "frequencies"),
    ("grades", "parse"): ("parse_scores", "read_scores", "split_scores"),
}


class RefactorRenameDomain(RepoDomain):
    id = "coding/refactor-rename-v1"
    axes = Axes("code", "shell", "multi", "structure")

    def plan(self, difficulty: int) -> Plan:
        return Plan(modules=min(1 + (difficulty + 1) // 3, 5), bugs=0, visible=1 + difficulty // 4,
                    hidden=2 + difficulty // 3)  # fmt: skip

    def measure(self, difficulty: int) -> float:
        plan = self.plan(difficulty)
        return float(plan.modules * 10 + plan.visible + plan.hidden / 10)

    def build(self, rng: random.Random, difficulty: int) -> Repo:
        for _ in range(50):
            repo = build_repo(rng, self.plan(difficulty))
            targets = [k for k in RENAMES if k[0] in repo.modules]
            if targets:
                break
        else:  # pragma: no cover - half the templates have a target
            raise ValueError("no renamable function")
        module, old = rng.choice(targets)
        new = rng.choice(RENAMES[(module, old)])
        path = path_of(repo.package, module)
        renamed = re.sub(rf"\b{old}\b", new, repo.files[path])
        name = f"{repo.package}.{module}"
        for case in repo.cases:
            if case["module"] == name and case["call"] == old:
                case.update(call=new, name=case["name"].replace(old, new), f2p=True, buggy={"raises": "AttributeError"})  # fmt: skip
        repo.files[f"tests/test_{module}.py"] = render_tests(repo.package, module, [c for c in repo.cases if c["visible"] and c["module"] == name])  # fmt: skip
        repo.fixed = {path: renamed}
        repo.bugs = [{"kind": "rename", "module": module, "function": old, "new": new, "path": path, "subtlety": 1}]  # fmt: skip
        return repo

    def statement(self, task: Task, repo: Repo) -> str:
        bug = repo.bugs[0]
        return (f"Refactor the Python repository in /workspace (package `{repo.package}`, tests in `tests/`): "
                f"rename the function `{bug['function']}` in `{bug['path']}` to `{bug['new']}` and update every "
                f"use of it. The tests already use the new name. Do not keep the old name (no alias) and do "
                f"not change any behaviour: the tests, and hidden tests, must pass.")  # fmt: skip

    def extra(self, judge: Judge, task: Task, files: dict[str, bytes]) -> dict[str, float]:
        bug = task.meta["bugs"][0]
        return {"structure": float(renamed_everywhere(files, task.meta["editable"], bug["path"], bug["function"], bug["new"]))}  # fmt: skip

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        bug, done = task.meta["bugs"][0], Message("assistant", "Done.")
        source = task.files[bug["path"]]
        def_only = source.replace(f"def {bug['function']}(", f"def {bug['new']}(")
        alias = source + f"\n\n{bug['new']} = {bug['function']}\n"
        return super().corrupt(task, reference) + [
            Reference([tool_turn("apply_patch", patch=unified_diff({bug["path"]: source}, {bug["path"]: text})), done])
            for text in (def_only, alias)
        ]  # fmt: skip


def renamed_everywhere(files: dict[str, bytes], editable: list[str], path: str, old: str, new: str) -> bool:  # fmt: skip
    """`new` is defined at the top of `path`, and `old` names nothing in any editable file."""
    trees = {}
    for p in editable:
        try:
            trees[p] = ast.parse(files.get(p, b"").decode())
        except (SyntaxError, ValueError, UnicodeDecodeError, RecursionError, MemoryError):
            return False
    defined = any(isinstance(n, ast.FunctionDef) and n.name == new for n in trees[path].body)
    for tree in trees.values():
        for node in ast.walk(tree):
            name = getattr(node, "id", None) or getattr(node, "attr", None) or getattr(node, "name", None)  # fmt: skip
            if isinstance(node, ast.alias):
                name = node.asname or node.name
            if name == old or (isinstance(node, ast.arg) and node.arg == old):
                return False
    return defined


class ImplementCliDomain(RepoDomain):
    """`coding/implement-cli-v1`: a command-line program's `main` is a stub; write it from
    its docstring and example runs (hidden runs must print exactly the right text)."""

    id = "coding/implement-cli-v1"
    axes = Axes("code", "shell", "multi", "exact")

    def plan(self, difficulty: int) -> Plan:
        return Plan(modules=1 + (difficulty + 2) // 4, bugs=0, visible=2 + difficulty // 4, hidden=3 + difficulty // 2, tests=False)  # fmt: skip

    def measure(self, difficulty: int) -> float:
        plan = self.plan(difficulty)
        return float(plan.modules * 10 + plan.visible + plan.hidden / 10)

    def build(self, rng: random.Random, difficulty: int) -> Repo:
        for _ in range(50):
            repo = build_repo(rng, self.plan(difficulty))
            clis = [m for m in repo.modules if m in (REPORT.module, GRADES.module)]
            if clis:
                break
        else:  # pragma: no cover - a quarter of the templates are CLIs
            raise ValueError("no command-line module")
        module = rng.choice(clis)
        path = path_of(repo.package, module)
        lines = repo.files[path].splitlines()
        start, end = function_span(lines, "main")
        repo.fixed = {path: repo.files[path]}
        repo.files[path] = (
            "\n".join(lines[: start + 2] + ["    raise NotImplementedError"] + lines[end:]) + "\n"
        )
        name = f"{repo.package}.{module}"
        for case in repo.cases:
            if case["module"] == name and case["call"] == "main":
                case.update(f2p=True, buggy={"raises": "NotImplementedError"})
        repo.bugs = [
            {"kind": "stub", "module": module, "function": "main", "path": path, "subtlety": 1}
        ]
        return repo

    def statement(self, task: Task, repo: Repo) -> str:
        bug = repo.bugs[0]
        shown = [c for c in repo.cases if c["visible"] and c["call"] == "main" and c["module"].endswith("." + bug["module"])]  # fmt: skip
        task.meta["run"] = cli_command(shown[0])
        runs = "\n".join(f"$ {cli_command(c)}\n{c['expected']['value'][1]}" for c in shown)
        return (f"In the Python package `{repo.package}` in /workspace (see README.md), the command-line entry "
                f"point `main` of `{bug['path']}` is a stub. Implement it as its docstring says, so that the "
                f"program prints exactly what these runs show:\n```\n{runs}```\nHidden runs with other "
                "arguments must print exactly the right text too.")  # fmt: skip


def function_span(lines: list[str], name: str) -> tuple[int, int]:
    """The [start, end) lines of the top-level function `name` (trailing blank lines excluded)."""
    start = next(i for i, x in enumerate(lines) if x.startswith(f"def {name}("))
    end = start + 1
    while end < len(lines) and (not lines[end] or lines[end][0] in " \t"):
        end += 1
    while lines[end - 1] == "":
        end -= 1
    return start, end


DOMAINS = (
    FixFromTracebackDomain(),
    FixCliOutputDomain(),
    RefactorRenameDomain(),
    ImplementCliDomain(),
)
