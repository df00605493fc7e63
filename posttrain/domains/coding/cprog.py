"""`coding/fix-c-program-v1`: a C program (built with gcc) prints wrong output; fix it.

The repository holds `NAME.c` (one of `ctemplates.C_TEMPLATES` with one or two injected
bugs), `tests/cases.json` (visible argument lists and expected output) and
`tests/check.py`, which compiles the program and runs the cases. Expected outputs come
from each template's Python twin, so generation never compiles. The verdict compiles
the allow-listed `NAME.c` (nothing else is taken from the workspace) in a fresh
sandbox with `gcc -std=c11 -O0` and runs visible and hidden argument lists from a
Python harness in its own process; stdout and the exit code are compared on the host.

Not guaranteed: gcc must be on the machine (it is looked up inside the sandbox);
stderr is not compared.
"""

from __future__ import annotations

import json
import random
import re
import secrets
from typing import Any

from posttrain.domains.base import Axes
from posttrain.domains.coding.bugs import inject, unified_diff
from posttrain.domains.coding.ctemplates import C_TEMPLATES, CTemplate
from posttrain.domains.coding.domain import RepoDomain, tool_turn
from posttrain.domains.coding.repo import Repo
from posttrain.domains.coding.runner import load_module, parse_results
from posttrain.domains.coding.single import SingleTurnRepoTasks
from posttrain.domains.coding.verify import Judge
from posttrain.types import Message, Reference, Task

CHECK = '''"""Compile the program and run tests/cases.json: python3 tests/check.py"""
import json
import subprocess
import sys

SOURCE = "NAME.c"
build = subprocess.run(["gcc", "-std=c11", "-O0", "-Wall", "-o", "NAME", SOURCE], capture_output=True, text=True)
if build.returncode:
    sys.exit("compile error:\\n" + build.stderr)
failed = 0
for case in json.load(open("tests/cases.json")):
    run = subprocess.run(["./NAME", *case["args"]], capture_output=True, text=True, timeout=5)
    if [run.stdout, run.returncode] != [case["stdout"], case["exit_code"]]:
        failed += 1
        print(f"FAIL ./NAME {' '.join(case['args'])}\\n  expected {case['stdout']!r} (exit {case['exit_code']})\\n"
              f"  got      {run.stdout!r} (exit {run.returncode})")
print(f"{failed} failed" if failed else "all passed")
sys.exit(1 if failed else 0)
'''

HARNESS = """
import json, subprocess, sys
spec = json.loads(sys.stdin.read())
build = subprocess.run(["gcc", "-std=c11", "-O0", "-o", "/tmp/judged", spec["source"]], capture_output=True, timeout=60)
results = []
for case in spec["cases"]:
    if build.returncode:
        results.append({"raises": "CompileError"})
        continue
    try:
        run = subprocess.run(["/tmp/judged", *case["args"]], capture_output=True, timeout=2)
        results.append({"value": [run.stdout.decode(errors="replace"), run.returncode]})
    except subprocess.TimeoutExpired:
        results.append({"raises": "Timeout"})
sys.stdout.write("\\nMARKER" + json.dumps(results) + "\\n")
"""


def _outcome(model: str, args: list[str]) -> dict[str, Any]:
    return {"value": load_module(model, "model").run(list(args))}


def build_c_repo(rng: random.Random, bugs: int, subtlety: int, visible: int, hidden: int) -> tuple[Repo, CTemplate, str]:  # fmt: skip
    """A C repository with `bugs` injected bugs; also the fix plus one more bug (a breaking patch)."""
    template = rng.choice(C_TEMPLATES)
    sites = [s for s in template.sites if s.subtlety <= subtlety]
    chosen = rng.sample(sites, min(bugs, len(sites)))
    source = inject(template.source, [(s.c_old, s.c_new) for s in chosen])
    model = inject(template.model, [(s.py_old, s.py_new) for s in chosen])
    cases = c_cases(rng, template, model, visible, hidden)
    path = f"{template.name}.c"
    shown = [{"args": c["args"], "stdout": c["expected"]["value"][0], "exit_code": c["expected"]["value"][1]} for c in cases if c["visible"]]  # fmt: skip
    files = {path: source, "tests/check.py": CHECK.replace("NAME", template.name),
             "tests/cases.json": json.dumps(shown, indent=1) + "\n",
             "README.md": f"# {template.name}\n\n`{path}`: {template.topic}.\n\nTest: `python3 tests/check.py`.\n"}  # fmt: skip
    bug_rows = [{"kind": s.kind, "module": template.name, "function": "main", "path": path, "subtlety": s.subtlety} for s in chosen]  # fmt: skip
    repo = Repo("", files, {path: template.source}, [path], cases, bug_rows)
    spare = [s for s in template.sites if s not in chosen]
    breaking = None
    for site in rng.sample(spare, len(spare)):
        broken = load_module(inject(template.model, [(site.py_old, site.py_new)]), "broken")
        if any(
            broken.run(list(c["args"])) != c["expected"]["value"] for c in cases if not c["f2p"]
        ):
            breaking = unified_diff({path: source}, {path: inject(template.source, [(site.c_old, site.c_new)])})  # fmt: skip
            break
    return repo, template, breaking or ""


def c_cases(rng: random.Random, template: CTemplate, model: str, visible: int, hidden: int) -> list[dict[str, Any]]:  # fmt: skip
    """Visible and hidden argument lists, at least one of each failing under `model`."""
    cases: list[dict[str, Any]] = []
    seen: set[str] = set()
    for want_visible, count, size in ((True, visible, 3), (False, hidden, 6)):
        mine: list[dict[str, Any]] = []
        for attempt in range(200):
            args = template.args(rng, size)
            if json.dumps(args) in seen:
                continue
            case = {"module": template.name, "call": "run", "args": args, "capture": False, "visible": want_visible,
                    "expected": _outcome(template.model, args), "buggy": _outcome(model, args)}  # fmt: skip
            case["f2p"] = case["expected"] != case["buggy"]
            if (
                len(mine) < count - 1
                or case["f2p"]
                or (attempt > 150 and any(c["f2p"] for c in mine))
            ):
                seen.add(json.dumps(args))
                mine.append(case)
            if len(mine) >= count and any(c["f2p"] for c in mine):
                break
        if not any(c["f2p"] for c in mine):
            raise ValueError(f"no failing case for {template.name}")
        cases += mine
    for number, case in enumerate(cases, start=1):
        case["name"] = f"{'case' if case['visible'] else 'hidden'}_{number}"
    return cases


class FixCProgramDomain(RepoDomain):
    id = "coding/fix-c-program-v1"
    axes = Axes("code", "shell", "multi", "unit_tests")
    run_command = "python3 tests/check.py"

    def build(self, rng: random.Random, difficulty: int) -> Repo:
        repo, _, breaking = build_c_repo(rng, 1 if difficulty < 7 else 2, 1 + (difficulty - 1) // 3, 2 + difficulty // 3, 3 + difficulty // 2)  # fmt: skip
        repo.bugs[0]["breaking"] = breaking
        return repo

    def breaking(self, rng: random.Random, repo: Repo) -> str | None:
        return str(repo.bugs[0].pop("breaking")) or None

    def measure(self, difficulty: int) -> float:
        return float(
            (1 if difficulty < 7 else 2) * 10 + (difficulty - 1) // 3 + (3 + difficulty // 2) / 10
        )

    def statement(self, task: Task, repo: Repo) -> str:
        path = repo.editable[0]
        head = (f"The C program `{path}` in /workspace (see README.md) fails its tests: `python3 tests/check.py` "
                f"compiles it with gcc and runs the argument lists in tests/cases.json. Fix the bug in `{path}` "
                "(do not change the tests).")  # fmt: skip
        failing = [c for c in repo.cases if c["visible"] and c["f2p"]]
        if task.difficulty <= 4:
            case = failing[0]
            return (f"{head}\n\nFor example `./{case['module']} {' '.join(case['args'])}` printed "
                    f"{case['buggy']['value'][0]!r} but should print {case['expected']['value'][0]!r}.")  # fmt: skip
        return head

    def run_cases(self, judge: Judge, task: Task, cases: list[dict[str, Any]]) -> list[dict[str, Any]] | None:  # fmt: skip
        marker = f"@@coding-{secrets.token_hex(8)}@@"
        spec = json.dumps({"source": task.meta["editable"][0], "cases": [{"args": c["args"]} for c in cases]})  # fmt: skip
        result = judge.exec(["python3", "-I", "-S", "-c", HARNESS.replace("MARKER", marker)], timeout=60, stdin=spec)  # fmt: skip
        return parse_results(result.stdout, marker, len(cases))

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        done = Message("assistant", "Done.")
        path = task.meta["editable"][0]
        case = next(c for c in task.meta["cases"] if c["visible"] and c["f2p"])
        stdout, code = case["expected"]["value"]
        test = " && ".join([f"argc == {len(case['args']) + 1}"] + [f"strcmp(argv[{i}], {json.dumps(a)}) == 0" for i, a in enumerate(case["args"], start=1)])  # fmt: skip
        opening = "int main(int argc, char **argv) {\n"
        cheat = "#include <string.h>\n" + task.files[path].replace(opening, f"{opening}    if ({test}) {{\n        fputs({json.dumps(stdout)}, stdout);\n        return {code};\n    }}\n")  # fmt: skip
        cases_file = "tests/cases.json"
        patches = [unified_diff({path: task.files[path]}, {path: cheat}), unified_diff({cases_file: task.files[cases_file]}, {cases_file: "[]\n"})]  # fmt: skip
        if task.meta["breaking"]:
            patches.append(task.meta["breaking"])
        return [Reference([done])] + [Reference([tool_turn("apply_patch", patch=p), done]) for p in patches]  # fmt: skip


# template -> (the function's C text, its documentation, the stub's body, the twin's stub site)
C_STUBS: dict[str, tuple[str, str, str, tuple[str, str]]] = {
    "numstat": (
        "static int parse(int argc, char **argv, long *out) {\n    int n = 0;\n    for (int i = 1; i < argc; i++) {\n"
        "        out[n++] = strtol(argv[i], NULL, 10);\n    }\n    return n;\n}\n",
        "Store the integer arguments argv[1..argc-1] (base 10, strtol) in out, in order; return how many.",
        "    return 0;\n", ("values = [int(a) for a in args]", "values = []"),
    ),
    "caesar": (
        "static char shift_char(char c, int k) {\n    if (islower((unsigned char)c)) {\n"
        "        return (char)('a' + ((c - 'a' + k) % 26 + 26) % 26);\n    }\n    if (isupper((unsigned char)c)) {\n"
        "        return (char)('A' + ((c - 'A' + k) % 26 + 26) % 26);\n    }\n    return c;\n}\n",
        "Shift a letter k places within its alphabet (a-z or A-Z), wrapping around; k may be negative "
        "or larger than 26. Other characters are returned unchanged.",
        "    return c;\n", ("def shift_char(c, k):\n", "def shift_char(c, k):\n    return c\n"),
    ),
}  # fmt: skip
_C_BLOCK = re.compile(r"```c[ \t]*\n(.*?)```", re.DOTALL)


class ImplementCFunctionDomain(SingleTurnRepoTasks):
    """`coding/implement-c-function-v1`: write one C function from its contract and example runs."""

    id = "coding/implement-c-function-v1"

    def build(self, rng: random.Random, difficulty: int) -> Repo:
        template = rng.choice(C_TEMPLATES)
        text, doc, body, (py_old, py_new) = C_STUBS[template.name]
        signature = text.splitlines()[0]
        stub = f"/* {doc} */\n{signature}\n{body}}}\n"
        source = template.source.replace(text, stub)
        cases = c_cases(rng, template, inject(template.model, [(py_old, py_new)]), 2 + difficulty // 4, 3 + difficulty // 2)  # fmt: skip
        path = f"{template.name}.c"
        bug = {"kind": "stub", "module": template.name, "function": signature, "path": path, "subtlety": 1, "stub": stub, "body": text}  # fmt: skip
        return Repo("", {path: source}, {path: template.source}, [path], cases, [bug])

    def breaking(self, rng: random.Random, repo: Repo) -> str | None:
        return None

    def measure(self, difficulty: int) -> float:
        return float(2 + difficulty // 4 + (3 + difficulty // 2) / 10)

    def statement(self, task: Task, repo: Repo) -> str:
        bug = repo.bugs[0]
        runs = "\n".join(f"$ ./{c['module']} {' '.join(c['args'])}\n{c['expected']['value'][0]}(exit {c['expected']['value'][1]})" for c in repo.cases if c["visible"])  # fmt: skip
        return (f"The C program `{bug['path']}` (compiled with `gcc -std=c11`) has a stub:\n\n```c\n{bug['stub']}```\n\n"
                f"The whole program:\n\n```c\n{repo.files[bug['path']]}```\n\nOnce the function is written, it "
                f"behaves like this:\n{runs}\n\nImplement the function as its comment says (hidden runs with other "
                "arguments are checked). Answer with the complete function definition in one ```c block; it "
                "replaces the stub.")  # fmt: skip

    def reference(self, task: Task) -> Reference:
        return Reference.single(f"```c\n{task.meta['bugs'][0]['body']}```")

    def final_files(self, task: Task, text: str) -> dict[str, bytes] | str:
        bug = task.meta["bugs"][0]
        blocks = _C_BLOCK.findall(text)
        name = bug["function"].split("(")[0].split()[-1]
        if not blocks or f"{name}(" not in blocks[-1]:
            return f"No ```c block defining {name}()."
        return {bug["path"]: task.files[bug["path"]].replace(bug["stub"], blocks[-1]).encode()}

    def run_cases(self, judge: Judge, task: Task, cases: list[dict[str, Any]]) -> list[dict[str, Any]] | None:  # fmt: skip
        return FixCProgramDomain.run_cases(FixCProgramDomain(), judge, task, cases)

    def corrupt(self, task: Task, reference: Reference) -> list[Reference]:
        bug = task.meta["bugs"][0]
        template = next(t for t in C_TEMPLATES if t.name == bug["module"])
        body = bug["body"]
        wrong = [bug["stub"], body.replace("{", "{ oops", 1)]
        wrong += [body.replace(s.c_old, s.c_new) for s in template.sites if s.c_old in body]
        return [Reference.single(f"```c\n{w}```") for w in wrong]


DOMAINS = (FixCProgramDomain(), ImplementCFunctionDomain())
