"""`coding/fix-type-error-v1`: mypy reports a type error; fix it without silencing the checker.

The repository holds one annotated module (`SETTINGS`) with an injected type bug that
also breaks behaviour (a str returned where an int is promised, an Optional used
unchecked, ...) beside untyped modules. The prompt shows mypy's report (its exact
wording, precomputed per bug site: see `MESSAGES`). A pass needs the fail-to-pass and
pass-to-pass tests (visible and hidden), mypy clean on the editable files in the fresh
judge sandbox, and no `# type: ignore` / `# mypy:` comment in them.

Not guaranteed: the messages are mypy 2.4's wording; `tests/domains/coding/test_typed.py`
runs mypy on every bug site to keep them true.
"""

from __future__ import annotations

import random
import re
import threading

from posttrain.domains.base import Axes
from posttrain.domains.coding.domain import RepoDomain
from posttrain.domains.coding.repo import Plan, Repo
from posttrain.domains.coding.templates import Function, Site, Template
from posttrain.domains.coding.templates_more import TEMPLATES, WORDS
from posttrain.domains.coding.verify import Judge, judged_files
from posttrain.types import Reference, Task

MYPY = "python3 -P -m mypy --no-incremental --cache-dir=/dev/null --hide-error-context --no-error-summary"
# The judge's mypy reads a cache of the standard library's stubs that we build once per
# process (a cold run takes ~1.5 s, a warm one ~0.2 s); the agent's files never reach it.
JUDGE_MYPY = "python3 -P -m mypy --cache-dir=.judge_mypy_cache --hide-error-context --no-error-summary --config-file="
_cache: dict[str, bytes] | None = None
_cache_lock = threading.Lock()


def mypy_cache() -> dict[str, bytes]:
    """mypy's cache for the standard library, built once in a sandbox of its own."""
    global _cache
    with _cache_lock:
        if _cache is None:
            with Judge({"warm.py": "x: int = 1\n"}) as judge:
                judge.exec(f"{JUDGE_MYPY} warm.py", timeout=120)
                files = judge.sandbox.snapshot().files()
            _cache = {p: b for p, b in files.items() if p.startswith(".judge_mypy_cache/")}
        return _cache


def _pairs(rng: random.Random, n: int) -> list[object]:
    pairs = {w: rng.randint(0, 5) for w in rng.sample(WORDS, rng.randint(1, min(n + 1, 8)))}
    return [pairs, rng.choice([*pairs.values(), 9])]


SETTINGS = Template(
    "settings", "typed settings helpers",
    '''"""Typed settings helpers: ports, lookups, sizes, scaling."""

from __future__ import annotations


def parse_port(text: str, default: int = 8080) -> int:
    """The port number in `text`, or `default` when it is not a number in 1..65535."""
    text = text.strip()
    if not text.isdigit():
        return default
    port = int(text)
    if not 1 <= port <= 65535:
        return default
    return port


def find_key(pairs: dict[str, int], wanted: int) -> str | None:
    """The first key (in insertion order) whose value is `wanted`, or None."""
    for key, value in pairs.items():
        if value == wanted:
            return key
    return None


def label(pairs: dict[str, int], wanted: int) -> str:
    """The key holding `wanted`, upper-cased, or "-" when there is none."""
    key = find_key(pairs, wanted)
    if key is None:
        return "-"
    return key.upper()


def total_length(words: list[str]) -> int:
    """The number of characters in all the words."""
    return sum(len(w) for w in words)


def scale(values: list[int], factor: float) -> list[float]:
    """Every value times `factor`, rounded to 2 decimals."""
    return [round(v * factor, 2) for v in values]
''',
    (
        Function("parse_port", lambda rng, n: [rng.choice([f" {rng.randint(1, 9999)}", str(rng.randint(1, 99999)), rng.choice(WORDS), "0"])]),
        Function("label", _pairs),
        Function("total_length", lambda rng, n: [[rng.choice(WORDS) for _ in range(rng.randint(1, n + 1))]]),
        Function("scale", lambda rng, n: [[rng.randint(-9, 9) for _ in range(rng.randint(1, n + 1))], rng.choice([0.5, 1.5, 2.0])]),
    ),
    (
        Site("type_error", "parse_port", "    return port\n", "    return text\n", 1),
        Site("type_error", "label", '    if key is None:\n        return "-"\n', "", 2),
        Site("type_error", "total_length", "return sum(len(w) for w in words)", 'return "".join(words)', 1),
        Site("type_error", "scale", "[round(v * factor, 2) for v in values]", "[str(round(v * factor, 2)) for v in values]", 2),
    ),
)  # fmt: skip

# bug site's function -> (text on the reported line, mypy's message)
MESSAGES: dict[str, tuple[str, str]] = {
    "parse_port": ("    return text", 'Incompatible return value type (got "str", expected "int")  [return-value]'),
    "label": ("    return key.upper()", 'Item "None" of "str | None" has no attribute "upper"  [union-attr]'),
    "total_length": ('return "".join(words)', 'Incompatible return value type (got "str", expected "int")  [return-value]'),
    "scale": ("[str(round(", "List comprehension has incompatible type List[str]; expected List[float]  [misc]"),
}  # fmt: skip


def mypy_report(repo: Repo) -> str:
    lines = []
    for bug in repo.bugs:
        marker, message = MESSAGES[bug["function"]]
        source = repo.files[bug["path"]].splitlines()
        number = next(i for i, x in enumerate(source, start=1) if marker in x)
        lines.append(f"{bug['path']}:{number}: error: {message}")
    return "\n".join(lines)


class FixTypeErrorDomain(RepoDomain):
    id = "coding/fix-type-error-v1"
    axes = Axes("code", "shell", "multi", "validity")

    def plan(self, difficulty: int) -> Plan:
        return Plan(modules=min(1 + (difficulty + 2) // 3, 5), bugs=1, subtlety=1 + (difficulty - 1) // 5,
                    visible=1 + (difficulty <= 5), hidden=2 + difficulty // 3,
                    templates=(SETTINGS, *TEMPLATES), bug_templates=(SETTINGS,))  # fmt: skip

    def statement(self, task: Task, repo: Repo) -> str:
        task.meta["run"] = f"{MYPY} {repo.package}"
        return (f"The Python repository in /workspace (package `{repo.package}`, tests in `tests/`, "
                f"see README.md) fails its type check. `python3 -m mypy {repo.package}` reports:\n\n"
                f"{mypy_report(repo)}\n\nFix the code so that mypy reports no error and the behaviour is "
                "right (the tests, and hidden tests, must pass). Do not silence the checker: no "
                "`# type: ignore` and no `# mypy:` comments.")  # fmt: skip

    def reference(self, task: Task) -> Reference:
        """mypy's report is in the prompt: read the file, patch, rerun mypy (one cold run, ~1 s)."""
        return Reference(super().reference(task).turns[1:])

    def extra(self, judge: Judge, task: Task, files: dict[str, bytes]) -> dict[str, float]:
        editable = task.meta["editable"]
        silenced = any(SILENCER.search(files.get(p, b"")) for p in editable)
        # The cases ran the agent's code in this workspace: lay the judged files out afresh.
        judge.replace(judged_files(task, files) | mypy_cache())
        result = judge.exec(f"{JUDGE_MYPY} {' '.join(editable)}", timeout=30)
        return {"type_check": float(result.exit_code == 0), "no_ignores": float(not silenced)}


# What mypy honours, spaced any way: `# type: ignore[...]`, `#type:ignore`, `# mypy: ...`
# file comments; and the decorator that switches checking off for a function.
SILENCER = re.compile(rb"#\s*type\s*:\s*ignore|#\s*mypy\s*:|no_type_check")

DOMAINS = (FixTypeErrorDomain(),)
