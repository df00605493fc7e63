"""A sandbox's host processes: started from one long-lived thread, stopped as a tree.

    proc = popen(argv, pass_fds=[fd], env={"PATH": "/usr/bin:/bin"}, cwd="/")
    stderr = stop_tree(proc, init_only=True)   # bwrap: kill the namespace's init

`popen` runs `subprocess.Popen` on one worker thread that lives as long as the process:
bwrap's `--die-with-parent` follows the *thread* that forked it, so a sandbox started
from a short-lived thread (a tool call's, a pool's) would die with it. A forked child
gets a worker of its own (the parent's thread does not exist there).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from posttrain.sandbox.inside.tasks import descendants, wait_exited


def popen(argv: list[str], pass_fds: list[int], env: dict[str, str], cwd: Any) -> subprocess.Popen[bytes]:  # fmt: skip
    """The launcher process, in a new session, its stderr piped (for start failures)."""
    return _LAUNCHER.submit(
        subprocess.Popen, argv, pass_fds=pass_fds, env=env, start_new_session=True, cwd=cwd,
        stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    ).result()  # fmt: skip


def stop_tree(proc: subprocess.Popen[bytes], init_only: bool) -> bytes:
    """SIGKILL `proc`'s process tree, reap it, and return what it wrote to stderr.
    `init_only`: kill the pid namespace's init (the launcher's child) and let the kernel
    take every process of the namespace with it, so nothing is left as a zombie."""
    tree = descendants(proc.pid)
    for pid in tree[1:2] if init_only else tree[1:]:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.kill(pid, signal.SIGKILL)
    with contextlib.suppress(subprocess.TimeoutExpired):
        proc.wait(timeout=2)
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(proc.pid, signal.SIGKILL)
    stderr = b""
    try:
        _, stderr = proc.communicate(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    wait_exited(tree[1:], timeout=5.0)
    return stderr or b""


def _new_launcher() -> None:
    """One idle worker thread for the whole process (ThreadPoolExecutor keeps it until exit)."""
    global _LAUNCHER
    _LAUNCHER = ThreadPoolExecutor(max_workers=1, thread_name_prefix="sandbox-launcher")


_LAUNCHER: ThreadPoolExecutor
_new_launcher()
os.register_at_fork(after_in_child=_new_launcher)
