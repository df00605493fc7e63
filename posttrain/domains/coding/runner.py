"""Test cases as data, run the same way on the host (generation) and in the sandbox (verdict).

A case is a JSON dict `{"name", "module", "call", "args", "capture", "expected", ...}`:
call `module.call(*args)` and record `{"value": v}` (v JSON-normalized; with `capture`,
`v = [return value, printed text]`) or `{"raises": "ExceptionName"}`. `RUNNER` is that
logic as source text: the generator `exec`s it on the host to compute expected values
from the correct program, and `harness_program()` embeds it in the script the verifier
runs inside a fresh sandbox, which prints one JSON line of results after a random marker.

    program = harness_program(marker)       # python3 -I -S -c program, cases on stdin
    results = parse_results(stdout, marker, n_cases)   # None when absent or forged

Expected values never enter the sandbox: a program can only make a case pass by
returning the right value. Not guaranteed: the harness shares its process with the
judged code, which could suppress the harness's own output (the cases then fail).
"""

from __future__ import annotations

import functools
import json
import types
from collections.abc import Callable, Mapping
from typing import Any

RUNNER = """
import contextlib as _contextlib, io as _io, json as _json


def run_case(function, args, capture):
    out = _io.StringIO()
    try:
        with _contextlib.redirect_stdout(out):
            value = function(*args)
        if capture:
            value = [value, out.getvalue()]
        return {"value": _json.loads(_json.dumps(value, allow_nan=False))}
    except (Exception, SystemExit) as exc:
        return {"raises": type(exc).__name__}
"""

_HARNESS = """
import importlib, json, os, signal, sys
sys.dont_write_bytecode = True
sys.path.insert(0, os.getcwd())
class _Timeout(BaseException):
    pass
def _alarm(*_):
    raise _Timeout()
signal.signal(signal.SIGALRM, _alarm)
_stdout = sys.stdout
RUNNER_SOURCE
_spec = json.loads(sys.stdin.read())
_results = []
for _case in _spec["cases"]:
    signal.setitimer(signal.ITIMER_REAL, _spec["case_s"])
    try:
        _function = getattr(importlib.import_module(_case["module"]), _case["call"])
        _results.append(run_case(_function, _case["args"], _case["capture"]))
    except BaseException as _exc:
        _results.append({"raises": type(_exc).__name__})
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
_stdout.write("\\nMARKER" + json.dumps(_results) + "\\n")
_stdout.flush()
"""

_namespace: dict[str, Any] = {}
exec(RUNNER, _namespace)  # our own code: the same runner the sandbox uses
run_case: Callable[[Any, list[Any], bool], dict[str, Any]] = _namespace["run_case"]


def harness_program(marker: str) -> str:
    """The sandbox script: reads `{"cases": [...], "case_s": float}` on stdin."""
    return _HARNESS.replace("RUNNER_SOURCE", RUNNER).replace("MARKER", marker)


def harness_input(cases: list[dict[str, Any]], case_s: float = 2.0) -> str:
    """The stdin for `harness_program`: the cases without their expected values."""
    keep = ("module", "call", "args", "capture")
    return json.dumps({"cases": [{k: c[k] for k in keep} for c in cases], "case_s": case_s})


def parse_results(stdout: str, marker: str, n_cases: int) -> list[dict[str, Any]] | None:
    """The harness's results: exactly one marker line holding `n_cases` results, else None."""
    lines = [x for x in stdout.splitlines() if x.startswith(marker)]
    if len(lines) != 1:
        return None
    try:
        rows = json.loads(lines[0][len(marker) :])
    except ValueError:
        return None
    if not isinstance(rows, list) or len(rows) != n_cases:
        return None
    return [r if isinstance(r, dict) else {"raises": "garbled"} for r in rows]


def load_module(source: str, name: str) -> types.ModuleType:
    """Our own template code as a module object on the host (never model-written code)."""
    module = types.ModuleType(name)
    exec(_compiled(source, name), module.__dict__)
    return module


@functools.lru_cache(maxsize=512)
def _compiled(source: str, name: str) -> types.CodeType:
    return compile(source, f"<{name}>", "exec")


def run_on_host(modules: Mapping[str, types.ModuleType], case: Mapping[str, Any]) -> dict[str, Any]:
    """One case against host-loaded template modules (keyed by dotted module name)."""
    return run_case(getattr(modules[case["module"]], case["call"]), json.loads(json.dumps(case["args"])), case["capture"])  # fmt: skip


def same(result: Mapping[str, Any], expected: Mapping[str, Any]) -> bool:
    """Whether a case's result matches its expected outcome: the exception's name, or the
    JSON values equal by `==` (as the visible tests' asserts compare: 2 == 2.0)."""
    if "raises" in expected:
        return result.get("raises") == expected["raises"]
    return "value" in result and bool(result["value"] == expected["value"])
