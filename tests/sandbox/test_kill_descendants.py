"""kill_descendants, the cleanup the sandbox server runs after every task: it kills and
reaps every leftover process (daemons included) and counts each process once."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import os, subprocess, sys, time
from posttrain.sandbox.inside.tasks import children_map, kill_descendants, KILL_WAIT_S
sleepers = [subprocess.Popen(["sleep", "30"]) for _ in range(3)]
if os.fork() == 0:  # a child with a grandchild: the whole subtree goes
    subprocess.Popen(["sleep", "30"])
    time.sleep(30)
    os._exit(0)
time.sleep(0.2)
start = time.monotonic()
killed = kill_descendants(set())
print(killed, children_map().get(os.getpid(), []), time.monotonic() - start < KILL_WAIT_S)
"""


def test_every_descendant_is_killed_and_counted_once() -> None:
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=60, check=True
    ).stdout.split(maxsplit=1)
    assert int(out[0]) == 5  # three sleepers, the forked child and its sleeper
    assert out[1].strip() == "[] True"  # none left, well inside the wait window
