"""Sandbox throughput and memory: the warm pool against a fresh bwrap and plain python3.

    .venv/bin/python bench/sandbox.py [--trivial 1000 --pytest 200 --pool-size 2 \\
        --concurrency 2 --pss-sandboxes 8]

Two workloads, each run by three methods on the same machine state, the methods
interleaved in rounds (so a change in background load hits all three alike):

- ``trivial``: snippets ``print(k * 3 + 1)``; success is exit 0 and exactly that line.
- ``pytest``: a file ``test_k.py`` per execution with 2-3 tiny tests (one with a
  fixture, one parametrized), run by pytest; success is exit 0 and ``N passed``.

Methods, all issued by the same number of threads (``concurrency``):

- ``pool``: `SandboxPool(pool_size)`; each execution is lease -> (write_file) ->
  run_python -> release (the release resets the sandbox). The trivial workload uses a
  pool with the default spec (no preload), the pytest workload one with
  ``preload=("pytest",)`` (`pytest_preload`) running ``pytest.main([...])`` in the
  warm interpreter.
- ``fresh_bwrap``: one ``bwrap ... python3 -S`` per execution with the sandbox's own
  bwrap command line (`layers.launch_argv`, so the same setpriv uid drop, namespaces,
  binds and tmpfs), the same seccomp program (``bwrap --seccomp``), the task's
  rlimits (``prlimit`` inside the sandbox, as the fork-server sets them in the task)
  and the task environment. The pytest file is copied in with ``bwrap --file``.
  Differences are printed with the results (no per-execution cgroups).
- ``plain``: an unisolated ``python3 -S`` subprocess per execution in a fresh temp dir.

Fresh bwrap and plain use the sandbox's interpreter (`layers.sandbox_python`) and
packages (`layers.site_packages`, bound at `layers.SANDBOX_SITE` inside); ``-S`` as
the fork-server is started with.
Memory: `n_pss` idle sandboxes (default spec) are started and the PSS of each one's
whole host process tree (``/proc/PID/smaps_rollup``) is summed. The last line
`run_bench` prints is one JSON object with the numbers and the settings.
"""

from __future__ import annotations

import json
import math
import os
import statistics
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

from posttrain.sandbox import layers
from posttrain.sandbox.bench_baselines import FreshBwrap, plain
from posttrain.sandbox.pool import SandboxPool
from posttrain.sandbox.results import SandboxSpec
from posttrain.sandbox.sandbox import Sandbox, SandboxUnavailable

METHODS = ("pool", "fresh_bwrap", "plain")
TRIVIAL_TIMEOUT_S = 10.0
PYTEST_TIMEOUT_S = 30.0
PYTEST_ARGS = ["-q", "-p", "no:cacheprovider"]
FRESH_BWRAP_DIFFERS = (
    "no per-execution cgroup (pool sandboxes have cgroup memory/pids/cpu where active); "
    "seccomp loaded by bwrap before python starts (pool: by the server after its imports); "
    "rlimits set by prlimit inside the sandbox (pool: by the forked task); "
    "pytest file copied in with bwrap --file (pool: write_file)"
)

# ----------------------------------------------------------------------------- workloads


def trivial_code(k: int) -> tuple[str, str]:
    """A snippet and its exact expected stdout."""
    return f"print({k} * 3 + 1)", f"{k * 3 + 1}\n"


def pytest_file(k: int) -> tuple[str, str, int]:
    """(file name, source, number of tests it holds): 2-3 functions, a fixture, a parametrize."""
    extra = k % 2 == 1
    source = (
        "import pytest\n\n\n"
        "@pytest.fixture\n"
        f"def base():\n    return {k}\n\n\n"
        f"def test_fixture(base):\n    assert base + 1 == {k + 1}\n\n\n"
        '@pytest.mark.parametrize("x", [1, 2])\n'
        f"def test_param(x):\n    assert x * {k} == {k} * x\n"
    )
    if extra:
        source += f'\n\ndef test_str():\n    assert str({k}) == "{k}"\n'
    return f"test_{k}.py", source, 4 if extra else 3


def _check_trivial(k: int, exit_code: int, stdout: str, stderr: str) -> str | None:
    expected = trivial_code(k)[1]
    if exit_code != 0 or stdout != expected:
        return f"exit {exit_code}, stdout {stdout[-200:]!r}, stderr {stderr[-300:]!r}"
    return None


def _check_pytest(k: int, exit_code: int, stdout: str, stderr: str) -> str | None:
    n_tests = pytest_file(k)[2]
    if exit_code != 0 or f"{n_tests} passed" not in stdout or "failed" in stdout:
        return f"exit {exit_code}, stdout {stdout[-300:]!r}, stderr {stderr[-300:]!r}"
    return None


# ----------------------------------------------------------------------------- measurement


@dataclass
class MethodRun:
    latencies: list[float] = field(default_factory=list)
    wall_s: float = 0.0
    failures: int = 0
    first_failure: str | None = None

    def summary(self) -> dict[str, Any]:
        lat = sorted(self.latencies)
        n = len(lat)
        return {
            "n": n,
            "failures": self.failures,
            "median_ms": round(statistics.median(lat) * 1e3, 2) if n else None,
            "p99_ms": round(lat[max(0, math.ceil(0.99 * n) - 1)] * 1e3, 2) if n else None,
            "per_s": round(n / self.wall_s, 2) if n and self.wall_s > 0 else None,
            "first_failure": self.first_failure,
        }


Execution = Callable[[int], str | None]  # k -> None on success, else why it failed


def _run_batch(fn: Execution, ks: Sequence[int], concurrency: int, into: MethodRun | None) -> int:
    """Run `fn` over `ks` from `concurrency` threads; record into `into`; returns failures."""
    lock = threading.Lock()
    failures = 0

    def one(k: int) -> None:
        nonlocal failures
        start = time.perf_counter()
        try:
            why = fn(k)
        except Exception as exc:  # an infrastructure error is a failed execution, not a crash
            why = f"{type(exc).__name__}: {exc}"
        elapsed = time.perf_counter() - start
        with lock:
            if into is not None:
                into.latencies.append(elapsed)
            if why is not None:
                failures += 1
                if into is not None and into.first_failure is None:
                    into.first_failure = f"k={k}: {why}"[:600]

    start = time.perf_counter()
    with ThreadPoolExecutor(max_workers=concurrency) as executor:
        list(executor.map(one, ks))
    if into is not None:
        into.wall_s += time.perf_counter() - start
        into.failures += failures
    return failures


def _compare(
    methods: dict[str, Execution], n: int, concurrency: int, rounds: int
) -> dict[str, MethodRun]:
    """Each method on k = 0..n-1, interleaved in `rounds` chunks, after an untimed warm-up."""
    runs = {name: MethodRun() for name in methods}
    names = list(methods)
    for name in names:  # warm-up (page cache, first lease): not timed, failures still count
        warm = MethodRun()
        _run_batch(methods[name], [n + j for j in range(concurrency)], concurrency, warm)
        runs[name].failures += warm.failures
        runs[name].first_failure = warm.first_failure
    rounds = max(1, min(rounds, n))
    for r in range(rounds):
        ks = list(range(n * r // rounds, n * (r + 1) // rounds))
        for name in names[r % len(names) :] + names[: r % len(names)]:
            _run_batch(methods[name], ks, concurrency, runs[name])
    return runs


def _pool_trivial(pool: SandboxPool) -> Execution:
    def run(k: int) -> str | None:
        with pool.lease() as sb:
            result = sb.run_python(trivial_code(k)[0], timeout=TRIVIAL_TIMEOUT_S)
        why = _check_trivial(k, result.exit_code, result.stdout, result.stderr)
        return why if result.error is None else f"{result.error}; {why}"

    return run


def _pool_pytest(pool: SandboxPool) -> Execution:
    def run(k: int) -> str | None:
        name, source, _ = pytest_file(k)
        code = f"import pytest, sys; sys.exit(pytest.main({[*PYTEST_ARGS, name]!r}))"
        with pool.lease() as sb:
            sb.write_file(name, source)
            result = sb.run_python(code, timeout=PYTEST_TIMEOUT_S)
        why = _check_pytest(k, result.exit_code, result.stdout, result.stderr)
        return why if result.error is None else f"{result.error}; {why}"

    return run


def _isolation_probe(run: Callable[[str], tuple[int, str, str]]) -> str:
    """uid, seccomp filters and the address-space/nproc rlimits as a task sees them."""
    code = (
        "import os, resource\n"
        "s = dict(l.split(':', 1) for l in open('/proc/self/status') if ':' in l)\n"
        "print(f\"uid={os.getuid()} seccomp={s['Seccomp'].strip()}"
        " filters={s.get('Seccomp_filters', '?').strip()}"
        " as_mb={resource.getrlimit(resource.RLIMIT_AS)[0] >> 20}"
        ' nproc={resource.getrlimit(resource.RLIMIT_NPROC)[0]}")'
    )
    exit_code, stdout, stderr = run(code)
    return stdout.strip() if exit_code == 0 else f"probe failed ({exit_code}): {stderr[-200:]}"


# ----------------------------------------------------------------------------- memory


def _pss_kb(pid: int) -> int | None:
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Pss:"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def measure_pss(n: int, spec: SandboxSpec | None = None) -> dict[str, Any]:
    """Start `n` idle sandboxes and sum the PSS of each one's whole host process tree."""
    sandboxes: list[Sandbox] = []
    try:
        start = time.perf_counter()
        for _ in range(n):
            sandboxes.append(Sandbox(spec or SandboxSpec()))
        start_s = time.perf_counter() - start
        time.sleep(0.2)  # let the launchers settle
        per_sandbox, unreadable, n_procs = [], 0, 0
        for sb in sandboxes:
            total = 0
            for pid in sb.pids:
                kb = _pss_kb(pid)
                if kb is None:
                    unreadable += 1
                else:
                    total += kb
                    n_procs += 1
            per_sandbox.append(total / 1024)
    finally:
        for sb in sandboxes:
            sb.close()
    return {
        "sandboxes": n,
        "mb_per_sandbox": round(statistics.mean(per_sandbox), 2) if per_sandbox else None,
        "mb_total": round(sum(per_sandbox), 2),
        "processes": n_procs,
        "unreadable_pids": unreadable,
        "start_s_per_sandbox": round(start_s / n, 3) if n else None,
    }


def _pool_pss_mb(pool: SandboxPool) -> float:
    return sum(_pss_kb(pid) or 0 for pid in pool.pids) / 1024 / pool.size


# ----------------------------------------------------------------------------- the benchmark


def _ratio(a: float | None, b: float | None) -> float | None:
    return round(a / b, 2) if a and b else None


def _loadavg() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def _print_table(out: Callable[[str], Any], title: str, runs: dict[str, dict[str, Any]]) -> None:
    out(title)
    out(f"  {'method':<12} {'n':>6} {'fail':>5} {'median ms':>10} {'p99 ms':>9} {'exec/s':>9}")
    for name, s in runs.items():
        med = f"{s['median_ms']:.1f}" if s["median_ms"] is not None else "-"
        p99 = f"{s['p99_ms']:.1f}" if s["p99_ms"] is not None else "-"
        per_s = f"{s['per_s']:.1f}" if s["per_s"] is not None else "-"
        out(f"  {name:<12} {s['n']:>6} {s['failures']:>5} {med:>10} {p99:>9} {per_s:>9}")
        if s["first_failure"]:
            out(f"    first failure: {s['first_failure']}")
    pool, fresh, plain = (runs[m]["per_s"] for m in METHODS)
    out(f"  pool / fresh_bwrap: {_ratio(pool, fresh)}x   pool / plain: {_ratio(pool, plain)}x")


def run_bench(
    n_trivial: int = 1000,
    n_pytest: int = 200,
    pool_size: int = 2,
    concurrency: int = 2,
    n_pss: int = 8,
    out: Callable[[str], Any] = print,
    *,
    rounds: int = 4,
    pytest_preload: Sequence[str] = ("pytest",),
) -> dict[str, Any]:
    """Measure both workloads with all three methods and the idle PSS; see the module doc.

    Prints settings, a table per workload and the memory figures through `out`, then
    one JSON line (also returned as a dict). Raises `SandboxUnavailable` without bwrap.
    `pytest_preload` is what the pytest pool imports before forking; pytest's entry-point
    plugins (e.g. ``anyio.pytest_plugin``, ``pytest_timeout``) load per task unless listed.
    """
    if min(n_trivial, n_pytest, pool_size, concurrency, rounds) < 1 or n_pss < 0:
        raise ValueError("counts, pool size, concurrency and rounds must be positive")
    if layers.best_mode() != "bwrap":
        raise SandboxUnavailable("the benchmark compares against bwrap, which cannot run here")
    python = layers.sandbox_python()
    assert python is not None  # best_mode() == "bwrap" implies it
    spec = SandboxSpec()
    pytest_spec = SandboxSpec(preload=tuple(pytest_preload))
    fresh = FreshBwrap(spec)
    active = layers.active_layers()
    settings: dict[str, Any] = {
        "n_trivial": n_trivial,
        "n_pytest": n_pytest,
        "pool_size": pool_size,
        "concurrency": concurrency,
        "threads": concurrency,
        "rounds": rounds,
        "n_pss": n_pss,
        "cpus": os.cpu_count(),
        "python": python,
        "pythonpath": layers.site_packages(),
        "mode": "bwrap",
        "trivial_pool": "own pool, default spec (no preload)",
        "pytest_pool": f"own pool, preload={tuple(pytest_preload)!r}",
        "fresh_bwrap_differs": FRESH_BWRAP_DIFFERS,
        "loadavg_start": _loadavg(),
    }
    out("sandbox bench: warm pool vs fresh bwrap per execution vs plain python3 per execution")
    out(
        f"  N trivial {n_trivial}, N pytest {n_pytest}; pool size {pool_size}; concurrency "
        f"{concurrency} issuing threads; {rounds} interleaved rounds; {os.cpu_count()} CPUs"
    )
    out(f"  python {python} -S, PYTHONPATH {layers.site_packages()}")
    out(f"  layers: {', '.join(active)}")
    out(f"  fresh bwrap differs: {FRESH_BWRAP_DIFFERS}")
    out(f"  load average at start: {settings['loadavg_start']}")

    def fresh_run(code: str) -> tuple[int, str, str]:
        return fresh.run(["-c", code], TRIVIAL_TIMEOUT_S)

    results: dict[str, dict[str, dict[str, Any]]] = {}
    extra: dict[str, Any] = {}

    # -- trivial snippets
    t0 = time.perf_counter()
    with SandboxPool(pool_size, spec) as pool:
        extra["pool_start_s"] = round(time.perf_counter() - t0, 3)

        def pool_run(code: str) -> tuple[int, str, str]:
            with pool.lease() as sb:
                r = sb.run_python(code, timeout=TRIVIAL_TIMEOUT_S)
            return r.exit_code, r.stdout, r.stderr

        probes = {"pool": _isolation_probe(pool_run), "fresh_bwrap": _isolation_probe(fresh_run)}
        out("  isolation probe (what a task sees):")
        for name, line in probes.items():
            out(f"    {name:<12} {line}")

        def fresh_trivial(k: int) -> str | None:
            return _check_trivial(k, *fresh.run(["-c", trivial_code(k)[0]], TRIVIAL_TIMEOUT_S))

        def plain_trivial(k: int) -> str | None:
            argv = ["-c", trivial_code(k)[0]]
            return _check_trivial(k, *plain(python, argv, TRIVIAL_TIMEOUT_S))

        runs = _compare(
            {"pool": _pool_trivial(pool), "fresh_bwrap": fresh_trivial, "plain": plain_trivial},
            n_trivial, concurrency, rounds,
        )  # fmt: skip
        extra["pool_recycled"] = pool.stats.recycled
        extra["pss_mb_per_sandbox_pool_idle"] = round(_pool_pss_mb(pool), 2)
    results["trivial"] = {name: run.summary() for name, run in runs.items()}
    title = f"trivial snippets (print(k * 3 + 1)), pool start {extra['pool_start_s']} s:"
    _print_table(out, title, results["trivial"])

    # -- pytest files
    def fresh_pytest(k: int) -> str | None:
        name, source, _ = pytest_file(k)
        argv = ["-m", "pytest", *PYTEST_ARGS, name]
        return _check_pytest(k, *fresh.run(argv, PYTEST_TIMEOUT_S, {name: source}))

    def plain_pytest(k: int) -> str | None:
        name, source, _ = pytest_file(k)
        argv = ["-m", "pytest", *PYTEST_ARGS, name]
        return _check_pytest(k, *plain(python, argv, PYTEST_TIMEOUT_S, {name: source}))

    t0 = time.perf_counter()
    with SandboxPool(pool_size, pytest_spec) as pool:
        extra["pytest_pool_start_s"] = round(time.perf_counter() - t0, 3)
        runs = _compare(
            {"pool": _pool_pytest(pool), "fresh_bwrap": fresh_pytest, "plain": plain_pytest},
            n_pytest, concurrency, rounds,
        )  # fmt: skip
        extra["pytest_pool_recycled"] = pool.stats.recycled
        extra["pss_mb_per_sandbox_pytest_preload"] = round(_pool_pss_mb(pool), 2)
    results["pytest"] = {name: run.summary() for name, run in runs.items()}
    title = f"pytest files (2-3 tests, fixture + parametrize), pool start {extra['pytest_pool_start_s']} s:"
    _print_table(out, title, results["pytest"])

    # -- memory
    pss = measure_pss(n_pss, spec) if n_pss else {}
    if pss:
        out(
            f"memory: {n_pss} idle sandboxes (default spec), PSS of each whole host process "
            f"tree: {pss['mb_per_sandbox']} MB per sandbox, {pss['mb_total']} MB total "
            f"({pss['processes']} processes, {pss['unreadable_pids']} unreadable; start "
            f"{pss['start_s_per_sandbox']} s each); pytest-preloaded pool sandbox: "
            f"{extra['pss_mb_per_sandbox_pytest_preload']} MB"
        )
    settings["loadavg_end"] = _loadavg()
    out(f"load average at end: {settings['loadavg_end']}")

    trivial, pyt = results["trivial"], results["pytest"]
    failures = {f"{w}/{m}": results[w][m]["failures"] for w in results for m in METHODS}
    summary: dict[str, Any] = {
        "pool_per_s": trivial["pool"]["per_s"],
        "fresh_bwrap_per_s": trivial["fresh_bwrap"]["per_s"],
        "plain_per_s": trivial["plain"]["per_s"],
        "ratio_vs_fresh_bwrap": _ratio(trivial["pool"]["per_s"], trivial["fresh_bwrap"]["per_s"]),
        "ratio_vs_plain": _ratio(trivial["pool"]["per_s"], trivial["plain"]["per_s"]),
        "p99_ms": trivial["pool"]["p99_ms"],
        "median_ms": trivial["pool"]["median_ms"],
        "pytest_pool_per_s": pyt["pool"]["per_s"],
        "pytest_fresh_bwrap_per_s": pyt["fresh_bwrap"]["per_s"],
        "pytest_plain_per_s": pyt["plain"]["per_s"],
        "pytest_ratio_vs_fresh_bwrap": _ratio(pyt["pool"]["per_s"], pyt["fresh_bwrap"]["per_s"]),
        "pytest_ratio_vs_plain": _ratio(pyt["pool"]["per_s"], pyt["plain"]["per_s"]),
        "pytest_p99_ms": pyt["pool"]["p99_ms"],
        "layers": active,
        "pss_mb_per_sandbox": pss.get("mb_per_sandbox"),
        "pss_mb_total_8": pss.get("mb_total") if n_pss == 8 else None,
        "pss_mb_total": pss.get("mb_total"),
        "pss_sandboxes": n_pss,
        "pss_unreadable_pids": pss.get("unreadable_pids"),
        "failures": failures,
        "failures_total": sum(failures.values()),
        "isolation_probe": probes,
        "results": results,
        **extra,
        "settings": settings,
    }
    out(json.dumps(summary))
    return summary


__all__ = ["measure_pss", "pytest_file", "run_bench", "trivial_code"]
