"""Sandbox throughput and memory: warm pool vs a fresh bwrap vs plain python3 per execution.

    .venv/bin/python bench/sandbox.py [--trivial 1000 --pytest 200 --pool-size 2 \
        --concurrency 2 --pss-sandboxes 8]

Two workloads (trivial `print` snippets; small pytest files with a fixture and a
parametrize) run by three methods on the same machine state, interleaved in rounds,
from the same number of threads: the warm `SandboxPool` (lease, run_python, release
with reset), a fresh bubblewrap sandbox per execution on the sandbox's own command
line (same uid drop, namespaces, seccomp and task rlimits), and an unisolated
`python3 -S` per execution. Also the PSS of idle sandboxes. Prints the settings
beside the results; the last line is one JSON object. See `posttrain.sandbox.bench`.
"""

from __future__ import annotations

import argparse

from posttrain.sandbox.bench import run_bench


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trivial", type=int, default=1000, help="trivial snippets per method")
    parser.add_argument("--pytest", type=int, default=200, help="pytest files per method")
    parser.add_argument("--pool-size", type=int, default=2, help="warm sandboxes in the pool")
    parser.add_argument("--concurrency", type=int, default=2, help="threads issuing executions")
    parser.add_argument("--pss-sandboxes", type=int, default=8, help="idle sandboxes for PSS")
    parser.add_argument("--rounds", type=int, default=4, help="interleaved rounds per workload")
    parser.add_argument(
        "--pytest-preload",
        default="pytest",
        help="comma-separated modules the pytest pool imports before forking "
        "(e.g. pytest,anyio.pytest_plugin,pytest_timeout to warm the entry-point plugins too)",
    )
    args = parser.parse_args()
    run_bench(
        n_trivial=args.trivial,
        n_pytest=args.pytest,
        pool_size=args.pool_size,
        concurrency=args.concurrency,
        n_pss=args.pss_sandboxes,
        rounds=args.rounds,
        pytest_preload=tuple(m for m in args.pytest_preload.split(",") if m),
    )


if __name__ == "__main__":
    main()
