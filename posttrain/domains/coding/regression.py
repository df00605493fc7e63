"""`coding/write-regression-test-v2`: write a test that catches a reported bug (do not fix it).

The repository's own tests pass (its failing cases are left out); the prompt names
where the bug is, and at low difficulty one input that shows it. The agent writes
`tests/test_regression.py`, the only file taken from its workspace. The verdict runs
that file's `test*` functions (pytest-style asserts, `pytest.raises`; no fixtures) three
times, each in a fresh sandbox, by our own harness in a process of its own each time:
against the buggy repository and against a behaviour-preserving edit of it, where
some test must fail both times, and against the fixed one, where every test must pass.
Components: `fails_on_buggy`, `passes_on_fixed`. The edit (`noop_edit`) puts a no-op
statement at the top of each buggy function and a comment at the end of its file: the
text, syntax tree and bytecode change, the behaviour does not, so a test that only
notices the code changed (its text, an AST or bytecode hash) fails to fail there. v1
appended the comment alone, which a hash of the syntax tree saw through.

Not guaranteed: a test that reads the module's source and looks for the buggy code
itself passes; it has had to find the bug to do so.
"""

from __future__ import annotations

import ast
import secrets
from typing import Any

from posttrain.domains.base import Session
from posttrain.domains.coding.bugs import KINDS
from posttrain.domains.coding.domain import RepoDomain, tool_turn
from posttrain.domains.coding.repo import Plan, Repo, call_text, outcome_text, path_of, render_tests
from posttrain.domains.coding.runner import load_module, parse_results, run_on_host, same
from posttrain.domains.coding.tools import CodingSession
from posttrain.domains.coding.verify import Judge
from posttrain.types import Message, Reference, Rollout, Task, Verdict

TEST_PATH = "tests/test_regression.py"
NO_OP_EDIT = b"\n# (added by the judge: a comment, the behaviour is unchanged)\n"
NO_OP_STATEMENT = "_judge_noop = None  # added by the judge: the behaviour is unchanged"
HARNESS = """
import importlib.util, json, os, sys
sys.dont_write_bytecode = True
sys.path.insert(0, os.getcwd())
_out = sys.stdout
_results = []
try:
    _spec = importlib.util.spec_from_file_location("test_regression", "tests/test_regression.py")
    _module = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_module)
    _names = sorted(n for n in vars(_module) if n.startswith("test") and callable(getattr(_module, n)))
except BaseException as _exc:
    _names = []
    _results.append({"name": "<import>", "ok": False})
for _name in _names:
    try:
        getattr(_module, _name)()
        _results.append({"name": _name, "ok": True})
    except BaseException:
        _results.append({"name": _name, "ok": False})
_out.write("\\nMARKER" + json.dumps([{"value": _results}]) + "\\n")
_out.flush()
"""


def noop_edit(source: bytes, functions: set[str]) -> bytes:
    """`source` with `NO_OP_STATEMENT` first in the body of each function named in
    `functions` (after its docstring) and `NO_OP_EDIT` at the end: its text, syntax tree
    and bytecode change, its behaviour does not. A function whose body shares its `def`
    line gets no statement."""
    text = source.decode()
    lines = text.splitlines(keepends=True)
    at: list[tuple[int, str]] = []  # (line index to insert before, indentation)
    for node in ast.walk(ast.parse(text)):
        if (
            not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            or node.name not in functions
        ):
            continue
        first = node.body[0]
        docstring = isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str)  # fmt: skip
        anchor = node.body[1] if docstring and len(node.body) > 1 else first
        if anchor.lineno == node.lineno or (docstring and anchor is first):
            continue  # a one-line body, or a docstring alone
        at.append((anchor.lineno - 1, " " * anchor.col_offset))
    for index, indent in sorted(at, reverse=True):
        lines.insert(index, f"{indent}{NO_OP_STATEMENT}\n")
    return "".join(lines).encode() + NO_OP_EDIT


def _alone(repo: Repo, case: dict[str, Any]) -> bool:
    """Whether `case` fails on the buggy code in a fresh process (not only after other calls)."""
    module = case["module"].rsplit(".", 1)[-1]
    fresh = {case["module"]: load_module(repo.files[path_of(repo.package, module)], case["module"])}
    return not same(run_on_host(fresh, case), case["expected"])


def regression_test_source(package: str, case: dict[str, Any]) -> str:
    """A pytest-style regression test asserting `case`'s correct outcome."""
    module = case["module"].rsplit(".", 1)[-1]
    expected, call = case["expected"], call_text(case)
    head = f"import contextlib\nimport io\n\nimport pytest\n\nfrom {package} import {module}\n\n\ndef test_regression():\n"
    if "raises" in expected:
        return head + f"    with pytest.raises({expected['raises']}):\n        {call}\n"
    if case["capture"]:
        return head + (f"    out = io.StringIO()\n    with contextlib.redirect_stdout(out):\n        result = {call}\n"
                       f"    assert [result, out.getvalue()] == {expected['value']!r}\n")  # fmt: skip
    return head + f"    assert {call} == {expected['value']!r}\n"


class WriteRegressionTestDomain(RepoDomain):
    id = "coding/write-regression-test-v2"

    def plan(self, difficulty: int) -> Plan:
        return Plan(modules=min(2 + (difficulty - 1) // 3, 5), bugs=1, subtlety=1 + (difficulty - 1) // 3, hidden=1)  # fmt: skip

    def build(self, rng: Any, difficulty: int) -> Repo:
        repo = super().build(rng, difficulty)
        for module in repo.modules:  # the repository's tests pass: its failing cases are left out
            name = f"{repo.package}.{module}"
            keep = [c for c in repo.cases if c["visible"] and not c["f2p"] and c["module"] == name]
            repo.files[f"tests/test_{module}.py"] = render_tests(repo.package, module, keep)
        repo.bugs[0]["witness"] = next(c for c in sorted(repo.cases, key=lambda c: c["visible"]) if c["f2p"] and _alone(repo, c))  # fmt: skip
        return repo

    def statement(self, task: Task, repo: Repo) -> str:
        bug = repo.bugs[0]
        task.meta["run"] = f"python3 -m pytest -q -p no:cacheprovider {TEST_PATH}"
        where = (
            f"`{bug['function']}` in `{bug['path']}`"
            if task.difficulty <= 7
            else f"`{bug['path']}`"
        )
        hint = f" ({KINDS[bug['kind']]})" if task.difficulty <= 5 else ""
        head = (f"The Python repository in /workspace (package `{repo.package}`, tests in `tests/`) has a bug "
                f"in {where}{hint}. Do not fix it: write a regression test in `{TEST_PATH}` (plain pytest-style "
                "`test_*` functions without fixtures) that fails on the current code and passes once the bug is "
                "fixed. Only that file is taken from your workspace.")  # fmt: skip
        if task.difficulty <= 3:
            case = next(c for c in repo.cases if c["visible"] and c["f2p"])
            head += f"\n\nFor example `{call_text(case)}` gives {outcome_text(case['buggy'])}."
        return head

    def footer(self, task: Task) -> str:
        return super().footer(task).split("\n", 1)[1]

    def reference(self, task: Task) -> Reference:
        case = task.meta["bugs"][0]["witness"]
        return Reference([
            tool_turn("read_file", path=task.meta["bugs"][0]["path"]),
            tool_turn("write_file", path=TEST_PATH, content=regression_test_source(task.meta["package"], case)),
            tool_turn("shell", command=task.meta["run"]),
            Message("assistant", "The regression test fails on the current code, as it should."),
        ])  # fmt: skip

    def verify(self, task: Task, rollout: Rollout, session: Session | None) -> Verdict:
        final = session.files() if isinstance(session, CodingSession) else {}
        test = final.get(TEST_PATH)
        if test is None:
            return Verdict(0.0, False, f"No {TEST_PATH} was written.", {"fails_on_buggy": 0.0, "passes_on_fixed": 0.0})  # fmt: skip
        try:
            buggy, fixed, edited = self._runs(task, test)
        except Exception as exc:  # the sandbox failed, not the answer
            return Verdict(0.0, False, "The verifier failed; nothing was judged.", error=f"{type(exc).__name__}: {exc}")  # fmt: skip
        # A test of behaviour fails on the buggy code however its text is laid out; one
        # that only notices the file changed passes once a comment is added.
        fails = all(bool(run) and not all(r["ok"] for r in run) for run in (buggy, edited))
        passes = bool(fixed) and all(r["ok"] for r in fixed)
        components = {"fails_on_buggy": float(fails), "passes_on_fixed": float(passes)}
        if fails and passes:
            return Verdict(1.0, True, "The test fails on the buggy code and passes on the fixed code.", components)  # fmt: skip
        why = "passes on the buggy code" if not fails else "fails on the fixed code"
        return Verdict(0.25 * (fails + passes), False, f"The regression test {why}.", components)

    def _runs(
        self, task: Task, test: bytes
    ) -> tuple[list[dict[str, Any]], list[dict[str, Any]], list[dict[str, Any]]]:
        """The test's results on the buggy repository, the fixed one, and the buggy one
        with every file the fix touches edited without changing its behaviour."""
        pristine = {p: t.encode() for p, t in task.files.items()} | {TEST_PATH: test}
        fixed = pristine | {p: t.encode() for p, t in task.meta["fixed"].items()}
        buggy = {b["function"] for b in task.meta["bugs"]}
        edited = pristine | {p: noop_edit(pristine[p], buggy) for p in task.meta["fixed"]}
        runs = []
        # A fresh sandbox for each tree: in one, a run could tell which tree it is on by
        # its pid (the fixed tree's run is the second) or by what an earlier run left.
        for files in (pristine, fixed, edited):
            with Judge(files) as judge:
                marker = f"@@coding-{secrets.token_hex(8)}@@"
                result = judge.exec(
                    ["python3", "-P", "-c", HARNESS.replace("MARKER", marker)], timeout=10
                )
            rows = parse_results(result.stdout, marker, 1)
            value = rows[0].get("value") if rows else None
            runs.append(value if isinstance(value, list) and all(isinstance(r, dict) for r in value) else [])  # fmt: skip
        return runs[0], runs[1], runs[2]

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        done = Message("assistant", "Done.")
        case = task.meta["bugs"][0]["witness"]
        package = task.meta["package"]
        tests = [
            "def test_regression():\n    assert True\n",
            "def test_regression():\n    assert False\n",
            regression_test_source(package, {**case, "expected": case["buggy"]}),
        ]
        out = [Reference([done])]
        out += [
            Reference([tool_turn("write_file", path=TEST_PATH, content=t), done]) for t in tests
        ]
        other = regression_test_source(package, case)
        out.append(
            Reference([tool_turn("write_file", path="tests/test_other.py", content=other), done])
        )
        return out


DOMAINS = (WriteRegressionTestDomain(),)
