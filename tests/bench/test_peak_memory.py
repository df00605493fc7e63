"""`bench/peak_memory.py`'s `TreePeak`: one window's peak over the whole process tree,
counting a running child and forgetting this process's earlier peaks."""

from __future__ import annotations

import subprocess
import sys
import time

from tests.bench import load_script

MIB = 2**20


def test_a_running_child_counts_in_the_window() -> None:
    peak_memory = load_script("peak_memory")
    child = "b = bytearray(400 * 2**20); b[::4096] = b'x' * len(b[::4096]); print('up', flush=True); input()"
    with peak_memory.TreePeak(interval=0.05) as outside:
        pass
    with peak_memory.TreePeak(interval=0.05) as peak:
        proc = subprocess.Popen([sys.executable, "-c", child], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, text=True)  # fmt: skip
        assert proc.stdout is not None and proc.stdout.readline() == "up\n"
        time.sleep(0.3)
        proc.communicate("\n")
    assert peak.peak_bytes >= outside.peak_bytes + 350 * MIB


def test_an_earlier_peak_of_this_process_does_not_count() -> None:
    peak_memory = load_script("peak_memory")
    big = bytearray(400 * MIB)
    big[::4096] = b"x" * len(big[::4096])  # touch every page
    del big  # a large block goes back to the system at once
    with peak_memory.TreePeak(interval=0.05) as peak:
        time.sleep(0.1)
    with peak_memory.TreePeak(interval=0.05) as again:
        held = bytearray(400 * MIB)
        held[::4096] = b"x" * len(held[::4096])
        time.sleep(0.1)
    del held
    assert again.peak_bytes >= peak.peak_bytes + 350 * MIB
