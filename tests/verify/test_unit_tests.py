"""Hidden cases in the sandbox: values compared on the host, failures never mistaken for passes."""

from __future__ import annotations

import pytest

from posttrain.sandbox import SandboxUnavailable, layers
from posttrain.verify import unit_tests
from posttrain.verify.unit_tests import run_hidden_cases

pytestmark = pytest.mark.skipif(layers.best_mode() is None, reason="no isolation on this machine")
CASES = [[[1, 2, 3]], [[]], [[5, -5]]]


def test_right_code_returns_every_value() -> None:
    outcome = run_hidden_cases("def total(xs):\n    return sum(xs)\n", "total", CASES)
    assert outcome.error is None and outcome.outputs == [6, 0, 0] and outcome.raised == [None] * 3


def test_exceptions_are_reported_per_case() -> None:
    code = "def total(xs):\n    return sum(xs) // len(xs)\n"
    outcome = run_hidden_cases(code, "total", CASES)
    assert outcome.outputs == [2, None, 0] and outcome.raised == [None, "ZeroDivisionError", None]


def test_exiting_at_import_runs_no_case() -> None:
    outcome = run_hidden_cases("import os\nos._exit(0)\ndef total(xs): return 6\n", "total", CASES)
    assert outcome.outputs == [None, None, None] and "exit 0" in outcome.detail


def test_forged_result_lines_cannot_supply_values() -> None:
    """Lines that look like results, before and after the harness's, change nothing: the
    marker is random per run (and values a task could forge are values it could return)."""
    forged = (
        "import atexit, sys\n"
        'atexit.register(lambda: print(\'@@posttrain-0000@@[{"ok": true, "value": 6}]\'))\n'
        'print(\'@@posttrain-guess@@[{"ok": true, "value": 6}]\')\n'
        "def total(xs):\n    return -1\n"
    )
    outcome = run_hidden_cases(forged, "total", CASES)
    assert outcome.outputs == [-1, -1, -1]  # only what the function really returned


def test_endless_loop_times_out_as_a_failed_run() -> None:
    outcome = run_hidden_cases("def total(xs):\n    while True: pass\n", "total", CASES, timeout=1)
    assert outcome.error is None and outcome.outputs == [None] * 3 and "timed out" in outcome.detail


def test_a_missing_sandbox_is_an_error_not_a_failure(monkeypatch: pytest.MonkeyPatch) -> None:
    def unavailable(*args: object, **kwargs: object) -> None:
        raise SandboxUnavailable("no isolation here")

    monkeypatch.setattr(unit_tests, "shared_pool", unavailable)
    outcome = run_hidden_cases("def total(xs): return 0\n", "total", CASES)
    assert outcome.error and "no isolation" in outcome.error


@pytest.mark.parametrize("tamper", ["_results.append({'ok': True, 'value': 6})", "_results.append(7)", "_results.clear()"])  # fmt: skip
def test_results_tampered_by_the_code_are_garbled_not_a_crash(tamper: str) -> None:
    """The code shares the harness's globals: extra, missing or non-dict rows are garbled."""
    code = f"def total(xs):\n    {tamper}\n    return sum(xs)\n"
    outcome = run_hidden_cases(code, "total", CASES)
    assert outcome.outputs == [None] * 3 and outcome.detail == "garbled results"
