"""`run_bench` at tiny counts: every execution succeeds and the JSON line has its keys."""

from __future__ import annotations

import json

import pytest

from posttrain.sandbox import layers
from posttrain.sandbox.bench import pytest_file, run_bench

pytestmark = pytest.mark.skipif(
    layers.best_mode() != "bwrap", reason="the benchmark compares against bubblewrap"
)

KEYS = (
    "pool_per_s", "fresh_bwrap_per_s", "plain_per_s", "ratio_vs_fresh_bwrap", "ratio_vs_plain",
    "pytest_pool_per_s", "pytest_fresh_bwrap_per_s", "pytest_plain_per_s",
    "pytest_ratio_vs_fresh_bwrap", "p99_ms", "layers", "pss_mb_per_sandbox", "pss_mb_total_8",
    "failures", "failures_total", "settings",
)  # fmt: skip


def test_pytest_files_hold_two_or_three_functions() -> None:
    for k in range(4):
        _, source, n_tests = pytest_file(k)
        assert "@pytest.fixture" in source and "parametrize" in source
        assert source.count("\ndef test_") == n_tests - 1  # the parametrized one counts twice


def test_run_bench_tiny() -> None:
    lines: list[str] = []
    result = run_bench(
        n_trivial=10, n_pytest=3, pool_size=2, concurrency=2, n_pss=2, out=lines.append
    )
    last = json.loads(lines[-1])
    assert last == json.loads(json.dumps(result))
    for key in KEYS:
        assert key in last, key
    assert last["failures_total"] == 0, last["results"]
    assert all(count == 0 for count in last["failures"].values())
    assert len(last["failures"]) == 6  # two workloads x three methods
    for workload in ("trivial", "pytest"):
        for method, stats in last["results"][workload].items():
            assert stats["failures"] == 0 and stats["first_failure"] is None, (workload, method)
            assert stats["n"] == (10 if workload == "trivial" else 3)
            assert stats["per_s"] > 0 and stats["p99_ms"] >= stats["median_ms"] > 0
    assert last["layers"] == layers.active_layers()
    assert last["pss_mb_per_sandbox"] > 0 and last["pss_mb_total_8"] is None  # only 2 started
    assert last["pss_unreadable_pids"] == 0
    assert last["pool_recycled"] == 0 and last["pytest_pool_recycled"] == 0
    assert last["settings"]["pool_size"] == 2 and last["settings"]["concurrency"] == 2
    probes = last["isolation_probe"]
    assert probes["pool"] == probes["fresh_bwrap"], probes  # same uid, seccomp, rlimits
