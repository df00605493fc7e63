"""Peak resident memory of a command's whole process tree, sampled from /proc.

    python bench/peak_memory.py -- make demo
    python bench/peak_memory.py --interval 0.2 -- .venv/bin/posttrain run --smoke

Sums VmRSS over the command and every descendant at each sample and prints the
peak, the wall time and the ratio to a budget (default 2 GiB). Shared pages are
counted once per process, so the sum is an upper bound of the tree's real use.

In-process, `TreePeak` measures one window of this process's own work the same way:

    with TreePeak() as peak:
        run_arm()
    peak.gib  # peak RSS of this process and all its descendants during the window
"""

from __future__ import annotations

import argparse
import contextlib
import os
import subprocess
import sys
import threading
import time
from pathlib import Path


def children_of() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(ppid, []).append(int(entry.name))
    return tree


def tree_rss_bytes(root: int) -> int:
    tree = children_of()
    total, stack = 0, [root]
    while stack:
        pid = stack.pop()
        stack += tree.get(pid, [])
        try:
            for line in Path(f"/proc/{pid}/status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        except OSError:
            continue
    return total


class TreePeak:
    """Peak resident memory of this process and its descendants over a `with` block.

    A thread samples the tree's summed VmRSS every `interval` seconds; this process's
    own high-water mark is reset on entry (`/proc/self/clear_refs`) and read on exit,
    so a peak between samples still counts. Memory an earlier window freed but the
    allocator kept is resident, so it counts in later windows of the same process.
    """

    def __init__(self, interval: float = 0.25) -> None:
        self.interval, self.peak_bytes = interval, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._sample, name="tree-peak", daemon=True)

    def _sample(self) -> None:
        while not self._stop.is_set():
            self.peak_bytes = max(self.peak_bytes, tree_rss_bytes(os.getpid()))
            self._stop.wait(self.interval)

    def __enter__(self) -> TreePeak:
        with contextlib.suppress(OSError):  # without it the samples alone measure the window
            Path("/proc/self/clear_refs").write_text("5")  # resets VmHWM to the current RSS
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        own = 0
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                own = int(line.split()[1]) * 1024
        self.peak_bytes = max(self.peak_bytes, own, tree_rss_bytes(os.getpid()))

    @property
    def gib(self) -> float:
        return round(self.peak_bytes / 2**30, 3)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--interval", type=float, default=0.25, help="seconds between samples")
    parser.add_argument("--budget-gib", type=float, default=2.0, help="budget to report against")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the command")
    args = parser.parse_args()
    command = args.command[1:] if args.command[:1] == ["--"] else args.command
    if not command:
        parser.error("give a command after --")
    start = time.perf_counter()
    proc = subprocess.Popen(command)
    peak = 0
    while proc.poll() is None:
        peak = max(peak, tree_rss_bytes(proc.pid))
        time.sleep(args.interval)
    wall = time.perf_counter() - start
    gib = peak / 2**30
    print(
        f"command: {' '.join(command)}\nexit code: {proc.returncode}\nwall: {wall:.1f} s\n"
        f"peak tree RSS: {gib:.2f} GiB  (budget {args.budget_gib:.1f} GiB, "
        f"ratio {gib / args.budget_gib:.2f})  threads: OMP_NUM_THREADS="
        f"{os.environ.get('OMP_NUM_THREADS', 'unset')}"
    )
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
