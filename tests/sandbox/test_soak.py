"""Soak: 10,000 executions through one pool leak no processes, fds, files or memory.

Marked slow (≈ 35 s on 2 cores); `make test-all` runs it.
"""

from __future__ import annotations

import glob
import os
import tempfile
import threading

import pytest

from posttrain.sandbox import SandboxSpec, layers
from posttrain.sandbox.pool import SandboxPool

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(layers.best_mode() is None, reason="no isolation on this machine"),
]

TASKS = [
    "print(sum(range(100)))",
    "open('/tmp/scratch.txt', 'w').write('x' * 1000); open('out.txt', 'w').write('y')",
    "import subprocess; subprocess.run(['true'])",
    "import os\nif os.fork() == 0:\n    os.setsid(); import time; time.sleep(30)\nprint('left a daemon')",
    "import threading; [threading.Thread(target=lambda: None).start() for _ in range(5)]",
]


def _rss_kb(pids: list[int]) -> int:
    total = 0
    for pid in pids:
        try:
            with open(f"/proc/{pid}/status") as f:
                total += next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))
        except (OSError, StopIteration):
            pass
    return total


def test_ten_thousand_executions_leak_nothing() -> None:
    n_total, n_threads = 10_000, 2
    spec = SandboxSpec(memory_mb=512, timeout_s=10)
    fds_before = len(os.listdir("/proc/self/fd"))
    scratch_before = set(glob.glob(os.path.join(tempfile.gettempdir(), "posttrain-sandboxes-*")))
    with SandboxPool(size=2, spec=spec, max_tasks=100_000) as pool:
        failures: list[str] = []
        counter = iter(range(n_total))
        lock = threading.Lock()
        rss: dict[str, int] = {}

        def worker() -> None:
            while True:
                with lock:
                    i = next(counter, None)
                if i is None:
                    return
                if i == 1000:
                    rss["warm"] = _rss_kb(pool.pids + [os.getpid()])
                with pool.lease() as sb:
                    result = sb.run_python(TASKS[i % len(TASKS)], timeout=10)
                    if not result.ok:
                        failures.append(f"{i}: {result}")

        threads = [threading.Thread(target=worker) for _ in range(n_threads)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        rss["end"] = _rss_kb(pool.pids + [os.getpid()])
        assert failures == []
        assert pool.stats.leases == n_total and pool.stats.recycled == 0
        for _ in range(2):  # both sandboxes: only init, server and the probe itself
            with pool.lease() as sb:
                procs = sb.run_python(
                    "import os; print(len([p for p in os.listdir('/proc') if p.isdigit()]))"
                )
                assert int(procs.stdout) <= 3
                assert sb.list_files() == []
                assert sb.run_python("import os; print(os.listdir('/tmp'))").stdout == "[]\n"
        per_sandbox = 2  # the launcher (bwrap or unshare) and the server, its namespace's pid 1
        assert len(pool.pids) == 2 * per_sandbox
        growth = (rss["end"] - rss["warm"]) / rss["warm"]
        print(f"rss warm {rss['warm']} kB, end {rss['end']} kB, growth {growth:+.2%}")
        assert growth < 0.05
    assert len(os.listdir("/proc/self/fd")) <= fds_before
    scratch_after = set(glob.glob(os.path.join(tempfile.gettempdir(), "posttrain-sandboxes-*")))
    assert scratch_after <= scratch_before
