"""One task: fork, limits, capped output, wall clock, and killing what it leaves behind.

The task runs in a fresh process group with rlimits and every fd above 2 closed — a
task can print "PASS" all it likes, only the server's framed reply and the exit status
reach the host. After its main process exits (or its wall clock runs out) every other
descendant of the server is killed (the server is a child subreaper, so double-forked
daemons stay in reach), except the session processes it was told to keep.
"""

from __future__ import annotations

import contextlib
import os
import resource
import select
import signal
import sys
import time
import traceback
from typing import Any

TASK_ENV = {
    "PATH": "/usr/local/bin:/usr/bin:/bin",
    "LANG": "C.UTF-8",
    "TMPDIR": "/tmp",
    "PYTHONDONTWRITEBYTECODE": "1",
    "PYTHONUNBUFFERED": "1",
}


_LIBC: Any = None


def set_dumpable(on: bool) -> None:
    """PR_SET_DUMPABLE. The server turns it off: a non-dumpable process's /proc/PID/mem,
    maps and fds are closed to its own uid, so tasks (same uid) cannot read or patch it.
    Each task turns it back on for itself, so it behaves like any process (it may write
    its own /proc/self/oom_score_adj, tools may read its /proc entries)."""
    global _LIBC
    if _LIBC is None:
        import ctypes

        _LIBC = ctypes.CDLL(None, use_errno=True)
    _LIBC.prctl(4, int(on), 0, 0, 0)


def children_map() -> dict[int, list[int]]:
    tree: dict[int, list[int]] = {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                stat_line = f.read()
        except OSError:
            continue
        ppid = int(stat_line[stat_line.rindex(b")") + 2 :].split()[1])
        tree.setdefault(ppid, []).append(int(name))
    return tree


def descendants(root: int) -> list[int]:
    """`root` and every process below it, parents before children."""
    tree = children_map()
    out, stack = [], [root]
    while stack:
        pid = stack.pop()
        out.append(pid)
        stack.extend(tree.get(pid, []))
    return out


def has_exited(pid: int) -> bool:
    """True once `pid` is gone or a zombie awaiting its reaper."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            line = f.read()
    except OSError:
        return True
    state = line.rindex(b")") + 2
    return line[state : state + 1] == b"Z"


def wait_exited(pids: list[int], timeout: float, poll: float = 0.002) -> None:
    """Wait until every one of `pids` has exited (see `has_exited`), or `timeout` passes."""
    deadline = time.monotonic() + timeout
    for pid in pids:
        while not has_exited(pid) and time.monotonic() < deadline:
            time.sleep(poll)


class LeftoverProcesses(RuntimeError):
    """Cleanup could not kill everything a task left behind."""


# How long cleanup keeps killing and reaping a task's leftover processes.
KILL_WAIT_S = 2.0


def kill_descendants(keep: set[int]) -> int:
    """SIGKILL every descendant of this server except the subtrees rooted at `keep`.

    The server is a child subreaper, so orphans (double-forked daemons) are
    reparented to it and stay in reach. Returns how many processes were killed;
    raises `LeftoverProcesses` if some are still there after `KILL_WAIT_S` seconds of
    kill-and-reap rounds (the host then recycles). A killed process needs the CPU to
    exit, so on a loaded machine that can take tens of milliseconds: the rounds back
    off from 0.5 ms to 10 ms rather than giving up after a fixed count.
    """
    reap()
    if not keep and not _has_children():
        return 0  # the usual case: nothing outlived the task, no /proc scan needed
    me = os.getpid()
    killed: set[int] = set()
    deadline = time.monotonic() + KILL_WAIT_S
    pause = 0.0005
    while True:
        tree = children_map()
        victims, stack = [], list(tree.get(me, []))
        while stack:
            pid = stack.pop()
            if pid in keep:
                continue
            victims.append(pid)
            stack.extend(tree.get(pid, []))
        if not victims:
            return len(killed)
        if time.monotonic() >= deadline:
            raise LeftoverProcesses(
                f"{len(victims)} processes survived SIGKILL for {KILL_WAIT_S:g} s"
            )
        for pid in victims:
            try:
                os.kill(pid, signal.SIGKILL)
                killed.add(pid)
            except ProcessLookupError:
                pass
        time.sleep(pause)
        pause = min(2 * pause, 0.01)
        reap()


def _has_children() -> bool:
    try:
        os.waitid(os.P_ALL, 0, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return False
    return True


def reap() -> None:
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def set_limits(limits: dict[str, int]) -> None:
    table = {
        "as": resource.RLIMIT_AS,
        "cpu": resource.RLIMIT_CPU,
        "fsize": resource.RLIMIT_FSIZE,
        "nofile": resource.RLIMIT_NOFILE,
        "nproc": resource.RLIMIT_NPROC,
        "core": resource.RLIMIT_CORE,
    }
    for key, value in limits.items():
        resource.setrlimit(table[key], (value, value))


def _child(req: dict[str, Any], workspace: str, out_w: int, err_w: int, in_r: int) -> None:
    """In the forked task process: never returns."""
    code = 1
    try:
        os.setsid()
        set_dumpable(True)
        os.dup2(in_r, 0)
        os.dup2(out_w, 1)
        os.dup2(err_w, 2)
        os.closerange(3, 65536)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        os.chdir(workspace)
        os.umask(0o022)
        if req.get("env"):  # the server's own environment is already TASK_ENV
            os.environ.clear()
            os.environ.update(req["env"])
        set_limits(req.get("limits", {}))
        if "argv" in req:
            os.execvp(req["argv"][0], req["argv"])
        sys.stdin = open(0, closefd=False)  # noqa: SIM115
        sys.stdout = open(1, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        sys.argv = ["<task>"]
        sys.dont_write_bytecode = True  # the server's flags, not the env, rule a forked task
        sys.path[0] = workspace
        namespace = {"__name__": "__main__", "__builtins__": __builtins__}
        try:
            exec(compile(req["code"], "<task>", "exec"), namespace)
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, int | None):
                print(exc.code, file=sys.stderr)
        except BaseException as exc:  # the task's own frames only, not the server's
            tb = exc.__traceback__.tb_next if exc.__traceback__ else None
            traceback.print_exception(type(exc), exc, tb)
            code = 1
        sys.stdout.flush()
        sys.stderr.flush()
    except FileNotFoundError as exc:
        os.write(2, f"{exc}\n".encode())
        code = 127
    except BaseException:
        with contextlib.suppress(OSError):
            os.write(2, traceback.format_exc().encode())
        code = 126
    os._exit(code & 0xFF)


def run_task(req: dict[str, Any], stdin: bytes, workspace: str, keep: set[int]) -> dict[str, Any]:
    """Fork, feed stdin, collect capped output, enforce the wall clock, clean up."""
    cap = int(req.get("output_cap", 1 << 16))
    timeout = float(req.get("timeout", 10.0))
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    in_r, in_w = os.pipe()
    start = time.monotonic()
    try:
        pid = os.fork()
    except OSError as exc:  # EAGAIN at the process limit: a failed task, not a dead server
        for fd in (out_r, out_w, err_r, err_w, in_r, in_w):
            os.close(fd)
        raise RuntimeError(f"could not start the task: {exc}") from None
    if pid == 0:
        for fd in (out_r, err_r, in_w):
            os.close(fd)
        _child(req, workspace, out_w, err_w, in_r)
    for fd in (out_w, err_w, in_r):
        os.close(fd)
    os.set_blocking(in_w, False)
    pending_in = stdin
    if not pending_in:
        os.close(in_w)
        in_w = -1
    bufs = {out_r: bytearray(), err_r: bytearray()}
    sizes = {out_r: 0, err_r: 0}
    open_fds = {out_r, err_r}
    deadline = start + timeout
    status = None
    rusage = None
    timed_out = False
    try:  # readable the moment the task exits: no polling, no sleeps on the hot path
        exit_fd = os.pidfd_open(pid)
    except (AttributeError, OSError):
        exit_fd = -1
    while True:
        waited, st, ru = os.wait4(pid, os.WNOHANG)
        if waited:
            status, rusage = st, ru
            break
        now = time.monotonic()
        if now >= deadline:
            timed_out = True
            break
        watch = list(open_fds) + ([exit_fd] if exit_fd >= 0 else [])
        writers = [in_w] if in_w >= 0 else []
        wait_s = min(deadline - now, 0.05 if exit_fd >= 0 or open_fds else 0.001)
        readable, writable, _ = select.select(watch, writers, [], wait_s)
        for fd in readable:
            if fd != exit_fd:
                _drain(fd, bufs, sizes, cap, open_fds)
        if writable:
            try:
                n = os.write(in_w, pending_in[:65536])
                pending_in = pending_in[n:]
            except BlockingIOError:
                pass
            except BrokenPipeError:  # the task closed its stdin: drop the rest
                pending_in = b""
            if not pending_in:
                os.close(in_w)
                in_w = -1
    if exit_fd >= 0:
        os.close(exit_fd)
    if timed_out:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)
        _, status, rusage = os.wait4(pid, 0)
    try:
        killed, leftovers = kill_descendants(keep), False
    except LeftoverProcesses:
        killed, leftovers = 0, True
    for fd in list(open_fds):
        os.set_blocking(fd, False)
        while fd in open_fds:
            try:
                _drain(fd, bufs, sizes, cap, open_fds)
            except BlockingIOError:
                break
    for fd in (out_r, err_r):
        os.close(fd)
    if in_w >= 0:
        os.close(in_w)
    wall = time.monotonic() - start
    assert status is not None and rusage is not None
    signum = os.WTERMSIG(status) if os.WIFSIGNALED(status) else None
    return {
        "exit_code": os.WEXITSTATUS(status) if os.WIFEXITED(status) else -(signum or 0),
        "signal": signum,
        "timed_out": timed_out,
        "cpu_s": rusage.ru_utime + rusage.ru_stime,
        "wall_s": wall,
        "max_rss_kb": rusage.ru_maxrss,
        "stdout_bytes": sizes[out_r],
        "stderr_bytes": sizes[err_r],
        "n_out": len(bufs[out_r]),
        "killed_leftovers": killed,
        "leftovers": leftovers,
        "_out": bytes(bufs[out_r]) + bytes(bufs[err_r]),
    }


def _drain(
    fd: int, bufs: dict[int, bytearray], sizes: dict[int, int], cap: int, open_fds: set[int]
) -> None:
    chunk = os.read(fd, 1 << 16)
    if not chunk:
        open_fds.discard(fd)
        return
    sizes[fd] += len(chunk)
    room = cap - len(bufs[fd])
    if room > 0:
        bufs[fd] += chunk[:room]


def clear_sysv_ipc() -> int:
    """Remove every SysV shared-memory segment, message queue and semaphore set in this
    IPC namespace (the sandbox's own), so none carries data from one task to the next."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    removed = 0
    for kind, call in (("shm", libc.shmctl), ("msg", libc.msgctl), ("sem", libc.semctl)):
        try:
            with open(f"/proc/sysvipc/{kind}") as f:
                rows = f.read().splitlines()[1:]
        except OSError:
            continue
        for row in rows:
            ident = int(row.split()[1])
            args = (ident, 0, 0, None) if kind == "sem" else (ident, 0, None)  # IPC_RMID = 0
            removed += call(*args) == 0
    return removed
