"""Math equivalence: what math-verify accepts, the fast path, timeouts, threads, junk."""

from __future__ import annotations

import doctest
import os
import random
import signal
import string
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from posttrain.verify import math_equal, math_equiv

pytestmark = pytest.mark.timeout(120)

# Evaluating this tower takes SymPy far longer than any timeout used here.
SLOW = "9^{9^{9^{9}}}"


def test_doctests_pass() -> None:
    assert doctest.testmod(math_equiv).failed == 0


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [
        ("0.5", "1/2"),
        ("\\frac12", "0.5"),
        ("$\\frac{1}{2}$", "\\frac{1}{2}"),
        ("(x+1)^2", "x^2+2x+1"),
        ("\\frac{\\sqrt{2}}{2}", "\\frac{1}{\\sqrt{2}}"),
        ("\\boxed{3\\pi}", "3\\pi"),
        ("0.333333", "\\frac{1}{3}"),
        ("\\{2, 1\\}", "\\{1, 2\\}"),
        ("x = 2", "2"),
    ],
)
def test_equivalent_forms_are_equal(predicted: str, gold: str) -> None:
    assert math_equal(predicted, gold)


@pytest.mark.parametrize(
    ("predicted", "gold"),
    [
        ("0.33", "\\frac{1}{3}"),
        ("x^2+2x+2", "(x+1)^2"),
        ("\\sqrt{2}", "2"),
        ("-\\frac{1}{2}", "\\frac{1}{2}"),
        ("\\{1, 3\\}", "\\{1, 2\\}"),
        ("3", "4"),
    ],
)
def test_near_misses_are_not_equal(predicted: str, gold: str) -> None:
    assert not math_equal(predicted, gold)


def test_plain_numbers_are_answered_without_a_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    def no_worker() -> None:
        raise AssertionError("the fast path should not need a worker")

    monkeypatch.setattr(math_equiv._POOL, "take", no_worker)
    assert math_equal("0.50", "1/2")
    assert math_equal("-3", "-3.0")
    assert not math_equal("12", "13")


def test_a_huge_exponent_is_not_expanded_in_the_caller(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(math_equiv._POOL, "take", lambda: None)  # no worker: False at once
    for text in ("1e999999999", "1e-999999999", "1E+1_000_000_000"):
        started = time.monotonic()
        assert not math_equal(text, "1")
        assert not math_equal("1", text)
        assert time.monotonic() - started < 1.0
    assert math_equal("1e999999999", "1.0E+999999999")


def test_an_exponent_beyond_decimals_range_is_not_equal_and_does_not_raise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(math_equiv._POOL, "take", lambda: None)  # answered without a worker
    huge = "2e9999999999999999999"  # Decimal raised InvalidOperation on it
    assert not math_equal(huge, "0.5")
    assert not math_equal("0.5", huge)
    assert not math_equal(huge, huge)


@pytest.mark.parametrize(
    ("predicted", "gold", "equal"),
    [("1e20", "1", False), ("2.5e3", "2.5", False), ("1e1000", "1e999", False),
     ("2.5e3", "2500", True), ("1E-1", "1/10", True), ("-5e0", "-5", True)],
)  # fmt: skip
def test_scientific_notation_is_compared_by_value_without_a_worker(
    monkeypatch: pytest.MonkeyPatch, predicted: str, gold: str, equal: bool
) -> None:
    def no_worker() -> None:
        raise AssertionError("math-verify reads the e of 1e20 as Euler's number")

    monkeypatch.setattr(math_equiv._POOL, "take", no_worker)
    assert math_equal(predicted, gold) is equal


def test_a_slow_comparison_times_out_to_false() -> None:
    assert math_equal("x", "x")  # a warm worker, so only the comparison is timed
    started = time.monotonic()
    assert not math_equal(SLOW, "1", timeout_s=1.0)
    assert time.monotonic() - started < 5.0


def test_the_next_call_works_after_a_timeout() -> None:
    assert not math_equal(SLOW, "1", timeout_s=0.5)
    assert math_equal("\\frac{2}{4}", "0.5")


def test_works_from_a_non_main_thread() -> None:
    results: list[bool] = []
    thread = threading.Thread(
        target=lambda: results.extend(
            [math_equal("(x+1)^2", "x^2+2x+1"), math_equal(SLOW, "1", timeout_s=0.5)]
        )
    )
    thread.start()
    thread.join(timeout=60)
    assert results == [True, False]


def test_concurrent_callers_get_their_own_answers() -> None:
    pairs = [(f"\\frac{{{n}}}{{2}}", f"{n / 2}") for n in range(1, 9)]
    pairs += [(f"\\frac{{{n}}}{{3}}", f"{n / 2}") for n in range(1, 9)]
    with ThreadPoolExecutor(max_workers=6) as pool:
        results = list(pool.map(lambda pair: math_equal(*pair), pairs))
    assert results == [True] * 8 + [False] * 8


def test_a_worker_that_will_not_start_gives_false(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(math_equiv, "_POOL", math_equiv._WorkerPool(1))
    monkeypatch.setattr(math_equiv, "_WORKER_COMMAND", "import sys; sys.exit(3)")
    assert not math_equal("x", "x")
    assert not math_equal("x", "x")


def test_a_worker_that_dies_mid_call_gives_false(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(math_equiv, "_POOL", math_equiv._WorkerPool(1))
    monkeypatch.setattr(math_equiv, "_WORKER_COMMAND", "print('ready', flush=True)")
    assert not math_equal("x", "x")
    assert not math_equal("x", "x")


def test_killing_a_dead_worker_with_an_unsent_request_does_not_raise(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(math_equiv, "_WORKER_COMMAND", "pass")
    worker = math_equiv._Worker()
    worker._process.wait()
    assert worker._process.stdin is not None
    worker._process.stdin.write(b"[1, 2]\n")  # buffered: close() must flush it to a dead pipe
    worker.kill()


ORPHAN = r"""
import os, sys, threading, time
from posttrain.verify import math_equiv
assert math_equiv.math_equal("x + 1", "1 + x")  # a worker started, now idle
print(math_equiv._POOL._idle[0]._process.pid, flush=True)
threading.Thread(target=math_equiv.math_equal, args=(sys.argv[1], "1", 600.0), daemon=True).start()
time.sleep(1.0)  # the worker is busy on the tower
os._exit(0)
"""


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as stat:
            return stat.read().rpartition(")")[2].split()[0] != "Z"  # a zombie is dead
    except FileNotFoundError:
        return False


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
def test_a_busy_worker_dies_with_its_callers_process() -> None:
    # v1's worker went on at 100% CPU after its caller exited, busy on a comparison.
    child = subprocess.run(
        [sys.executable, "-c", ORPHAN, SLOW], capture_output=True, text=True, timeout=120
    )
    assert child.returncode == 0, child.stderr
    pid = int(child.stdout.split()[0])
    try:
        deadline = time.monotonic() + 5.0
        while _alive(pid) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert not _alive(pid)
    finally:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)


def test_workers_started_from_a_finished_thread_still_answer() -> None:
    # A worker dies with the thread that started it (PR_SET_PDEATHSIG), so workers are
    # started from one spawner thread: here the caller's thread is gone before the call.
    pool = math_equiv._WorkerPool(1)
    thread = threading.Thread(target=lambda: pool.give_back(pool.take()))  # type: ignore[arg-type]
    thread.start()
    thread.join()
    time.sleep(0.5)
    worker = pool.take()
    assert worker is not None and worker.ask("x + 1", "1 + x", 30.0) is True
    worker.kill()


def _junk() -> list[str]:
    rng = random.Random(0)
    return [
        "",
        "   \n\t",
        "".join(rng.choice(string.printable) for _ in range(100_000)),
        b"\xff\xfe \xc3( \xed\xa0\x80".decode(errors="replace"),
        "\ud800",
        "9" * 5000,
        "nan",
        "inf",
        "[" * 100_000,
        "\\frac{" * 300,
        "$" * 1000,
    ]


def test_junk_is_not_equal_and_never_raises() -> None:
    assert not any(math_equal(text, "\\frac{1}{7}", timeout_s=2.0) for text in _junk())


def test_junk_as_gold_is_not_equal() -> None:
    assert not any(math_equal("1/7", text, timeout_s=2.0) for text in _junk())


def test_non_string_input_is_not_equal() -> None:
    assert not math_equal(None, "1")  # type: ignore[arg-type]
    assert not math_equal("1", 1)  # type: ignore[arg-type]


def test_100kb_inputs_finish_without_a_backtracking_blowup() -> None:
    for text in ("x" * 100_000, "9" * 100_000, "[" * 100_000):
        started = time.perf_counter()
        math_equal(text, "1")
        assert time.perf_counter() - started < 1.0
