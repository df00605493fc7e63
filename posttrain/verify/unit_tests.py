"""Unit tests in the sandbox: run a model's Python against hidden cases, compare on the host.

    outcome = run_hidden_cases(solution_code, "dedupe", [[[1, 1, 2]], [[3]]], timeout=5)
    outcome.outputs      # what the model's function returned, per case (JSON), or None
    outcome.error        # the sandbox failed (not the model's fault): set, never raised

The model's code and a small harness run in one sandboxed process. The harness
calls the function on each case and prints the results as one JSON line after a
random marker; the host parses that line and compares with the expected outputs
itself. The model's code can print anything, exit early or crash: it cannot make a
case pass without returning the right value, because the expected values never
enter the sandbox. A sandbox is leased from a process-wide pool (`SandboxPool`,
size 1, recycled after every task so no hidden case outlives its verification).

Not guaranteed: values must survive a JSON round trip (ints, floats, strings,
lists, dicts with string keys, bools, None); tuples come back as lists.
"""

from __future__ import annotations

import json
import secrets
from dataclasses import dataclass
from typing import Any

from posttrain.sandbox import SandboxError, SandboxSpec
from posttrain.sandbox.shared import shared_pool

SPEC = SandboxSpec(memory_mb=512, timeout_s=5.0, max_processes=16, output_cap=1 << 20)

_HARNESS = """
import json as _json, sys as _sys
_results = []
for _args in _json.loads({cases!r}):
    try:
        _value = {function}(*_args)
        _json.dumps(_value)
        _results.append({{"ok": True, "value": _value}})
    except BaseException as _exc:
        _results.append({{"ok": False, "error": type(_exc).__name__}})
_sys.stdout.flush()
print("\\n{marker}" + _json.dumps(_results))
"""


@dataclass
class CaseOutcome:
    """Per case: the returned value (JSON-decoded) or None if it raised or never ran."""

    outputs: list[Any]
    raised: list[str | None]
    error: str | None = None  # infrastructure failure: the sandbox, not the model
    detail: str = ""  # stderr tail when the code did not even load


def run_hidden_cases(code: str, function: str, cases: list[list[Any]], timeout: float = 5.0) -> CaseOutcome:  # fmt: skip
    """Run `function(*args)` for each case after `code`, in a sandbox; never raises."""
    marker = f"@@posttrain-{secrets.token_hex(8)}@@"
    harness = _HARNESS.format(cases=json.dumps(cases), function=function, marker=marker)
    program = f"{code}\n{harness}"
    try:
        with shared_pool("unit-tests", SPEC, size=1, max_tasks=1).lease(timeout=60) as sandbox:
            result = sandbox.run_python(program, timeout=timeout)
    except (SandboxError, TimeoutError) as exc:
        return CaseOutcome([None] * len(cases), [None] * len(cases), error=f"sandbox: {exc}")
    if result.error:
        return CaseOutcome([None] * len(cases), [None] * len(cases), error=result.error)
    line = next((x for x in reversed(result.stdout.splitlines()) if x.startswith(marker)), None)
    if line is None:
        why = "timed out" if result.timed_out else f"exit {result.exit_code}"
        tail = result.stderr.strip().splitlines()[-1:] or [why]
        return CaseOutcome(
            [None] * len(cases), ["did not run"] * len(cases), detail=f"{why}: {tail[0]}"
        )
    try:
        rows = json.loads(line[len(marker) :])
    except json.JSONDecodeError:
        rows = None
    # The model's code shares the harness's globals: it may have added, removed or
    # replaced rows of `_results`. Anything but one dict per case is garbled.
    if not (isinstance(rows, list) and len(rows) == len(cases) and all(isinstance(r, dict) for r in rows)):  # fmt: skip
        return CaseOutcome(
            [None] * len(cases), ["unreadable"] * len(cases), detail="garbled results"
        )
    outputs = [row.get("value") if row.get("ok") else None for row in rows]
    raised = [None if row.get("ok") else str(row.get("error")) for row in rows]
    return CaseOutcome(outputs, raised)
