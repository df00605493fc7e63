"""The fork-server that runs inside a sandbox: the request loop and its start-up.

The host starts it once per sandbox (`python3 -S -m inside.server FD WORKSPACE
SCRATCH SECCOMP_FD PRELOAD...`) and talks to it over the UNIX socket FD. Start-up
imports the preload modules (pytest: also its plugins), warms the interpreter's
lazy paths, freezes the heap for cheap forks, becomes a child subreaper, loads the
seccomp filter and turns non-dumpable — its tasks share its uid, and must not read
or patch its memory. In bwrap and unshare mode it is its pid namespace's pid 1, so
signals reach it from inside only where it installed a handler. Then it serves one
request at a time: tasks (`tasks.run_task`), file operations (`files`), snapshots,
resets and python sessions (`sessions`); a session call that times out, a restore and
a close kill what the session process started too, not just the process.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import socket
import sys
import traceback
from typing import Any

from . import files
from .framing import recv_frame, send_frame
from .sessions import session_main
from .tasks import TASK_ENV, clear_sysv_ipc, kill_descendants, run_task, set_dumpable, wait_exited


class Server:
    """One sandbox's request loop: one request at a time, over one socket, until EOF."""

    def __init__(self, sock: socket.socket, workspace: str, scratch: list[str]) -> None:
        self.sock = sock
        self.workspace = workspace
        self.scratch = [workspace, *scratch]
        self.baseline = b""
        self.session_sock: socket.socket | None = None
        self.session_pid = 0
        self.frozen: dict[int, int] = {}  # snapshot id -> frozen pid
        self.keep: set[int] = set()

    def handle(self, req: dict[str, Any], payload: bytes) -> tuple[dict[str, Any], bytes]:
        op = req["op"]
        if req.get("reset_first"):  # the pool's cleanup, folded into the next lease's first call
            try:
                self.reset()
            except Exception as exc:  # the host replaces this sandbox and sends the request again
                return {"ok": False, "reset_failed": True, "error": f"reset failed: {exc}"}, b""
            # An interim frame: the host times the reset and the request separately.
            send_frame(self.sock, {"reset_done": True})
        if op in ("exec", "python"):
            result = run_task(req, payload, self.workspace, self.keep)
            return result, result.pop("_out")
        if op == "write":
            files.write_file(self.workspace, req["path"], payload, int(req.get("mode", 0o644)))
            return {"ok": True}, b""
        if op == "read":
            return {"ok": True}, files.read_file(self.workspace, req["path"])
        if op == "list":
            return {"ok": True, "files": files.list_files(self.workspace)}, b""
        if op == "snapshot":
            return {"ok": True}, files.tar_workspace(self.workspace, req.get("max_bytes"))
        if op == "restore":
            files.untar_workspace(self.workspace, payload)
            return {"ok": True}, b""
        if op == "baseline":
            self.baseline = payload
            return {"ok": True}, b""
        if op == "reset":
            return {"ok": True, "killed_leftovers": self.reset()}, b""
        if op == "ping":
            return {"ok": True, "pid": os.getpid()}, b""
        if op.startswith("session_"):
            return self.session(op, req), b""
        raise ValueError(f"unknown op {op!r}")

    def reset(self) -> int:
        self.session_close()
        killed = kill_descendants(set())  # LeftoverProcesses: the reset fails, the host recycles
        for folder in self.scratch:
            files.wipe(folder)
        clear_sysv_ipc()
        if self.baseline:
            files.untar_workspace(self.workspace, self.baseline)
        return killed

    # -- python sessions
    def session(self, op: str, req: dict[str, Any]) -> dict[str, Any]:
        if op == "session_open":
            self.session_close()
            ours, theirs = socket.socketpair()
            pid = os.fork()
            if pid == 0:  # the session process: it must never fall back into this loop
                try:
                    ours.close()
                    self.sock.close()
                    session_main(theirs, self.workspace, req.get("limits", {}))
                finally:
                    os._exit(1)
            theirs.close()
            self.session_sock, self.session_pid = ours, pid
            self.keep = {pid}
            return {"ok": True}
        if op == "session_close":
            self.session_close()
            return {"ok": True}
        if self.session_sock is None:
            return {"ok": False, "error": "no session is open"}
        if op == "session_run":
            return self._session_call(
                {"op": "run", "code": req["code"]}, float(req.get("timeout", 10))
            )
        if op == "session_snapshot":
            reply = self._session_call({"op": "fork"}, 10.0)
            if reply.get("ok") and "frozen_pid" in reply:
                sid = len(self.frozen) + 1
                self.frozen[sid] = reply["frozen_pid"]
                self.keep.add(reply["frozen_pid"])
                return {"ok": True, "snapshot": sid}
            return reply if not reply.get("ok") else {"ok": False, "error": "snapshot failed"}
        if op == "session_restore":
            frozen = self.frozen.get(int(req["snapshot"]))
            if frozen is None:
                return {"ok": False, "error": f"unknown session snapshot {req['snapshot']!r}"}
            self._kill_live()
            os.kill(frozen, signal.SIGUSR1)
            reply = self._session_wait(10.0)
            if reply.get("ok") and "pid" in reply:
                self.session_pid = reply["pid"]
                self.keep.add(self.session_pid)
            elif reply.get("ok"):
                return {"ok": False, "error": "restore failed"}
            return reply
        raise ValueError(f"unknown op {op!r}")

    def _session_call(self, req: dict[str, Any], timeout: float) -> dict[str, Any]:
        if not self.session_pid:
            return {"ok": False, "error": "the session process is gone; restore a snapshot"}
        assert self.session_sock is not None
        send_frame(self.session_sock, req)
        return self._session_wait(timeout)

    def _session_wait(self, timeout: float) -> dict[str, Any]:
        """The session's reply, checked: the session runs the task's code, which can
        reach its socket and write anything there. A reply too large or of the wrong
        shape kills the live session (as a crash would); output is cut to 64 KiB."""
        assert self.session_sock is not None
        ready, _, _ = select.select([self.session_sock], [], [], timeout)
        if not ready:
            self._kill_live()
            return {"ok": False, "timed_out": True, "error": f"session call exceeded {timeout} s"}
        try:
            reply, _ = recv_frame(self.session_sock, limit=_SESSION_REPLY_BYTES)
        except (EOFError, ValueError):  # gone, too large, or not JSON
            self._kill_live()
            return {"ok": False, "error": "the session process died or sent a malformed reply"}
        checked = _session_reply(reply)
        if checked is None:
            self._kill_live()
            return {"ok": False, "error": "the session process sent a malformed reply"}
        return checked

    def _kill_live(self) -> None:
        """Kill the live session process and every process it started; the frozen
        snapshots (and the live copy's zombie, their child) are kept."""
        if self.session_pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.session_pid, signal.SIGKILL)
            # Its children reach us (the subreaper) only once it has exited: wait for that.
            _wait_exit(self.session_pid)
            self.keep.discard(self.session_pid)
            self.session_pid = 0
        kill_descendants(set(self.frozen.values()))

    def session_close(self) -> None:
        """End the session: its process, its snapshots and everything they started."""
        self.session_pid = 0
        self.frozen.clear()
        self.keep = set()
        if self.session_sock is not None:
            self.session_sock.close()
            self.session_sock = None
        kill_descendants(set())  # no task runs between requests: every descendant is the session's

    def serve(self) -> None:
        send_frame(self.sock, {"ready": True, "pid": os.getpid(), "python": sys.version.split()[0]})
        # From here on nothing may write to the launcher's stderr pipe (nobody reads it
        # after start-up, so a chatty session process would block on a full pipe).
        null = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(null, fd)
        os.close(null)
        while True:
            try:
                req, payload = recv_frame(self.sock)
            except EOFError:
                return
            try:
                header, body = self.handle(req, payload)
            except Exception as exc:  # a bad request must not take the sandbox down
                header, body = {"ok": False, "error": f"{type(exc).__name__}: {exc}"}, b""
            send_frame(self.sock, header, body)


def _wait_exit(pid: int, timeout: float = 2.0) -> None:
    """Until `pid` has exited (a zombie counts): it may be another process's child, so a
    pidfd, not waitpid."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return
    except OSError:  # no pidfds here: poll its state instead
        wait_exited([pid], timeout, poll=0.001)
        return
    try:
        select.select([fd], [], [], timeout)
    finally:
        os.close(fd)


def _warm_pytest(folder: str) -> None:
    """Run pytest once on an empty folder so its plugins are imported (and assertion-
    rewritten, as pytest wants them) before any task forks: `pytest.main` in a task
    then starts warm instead of re-importing anyio, asyncio, ssl ... each time."""
    import pytest

    with contextlib.suppress(Exception):
        pytest.main(["-q", "-p", "no:cacheprovider", "--collect-only", folder])


def _warm_task_path() -> None:
    """Do once what every Python task does first (compile, exec, text I/O, a traceback):
    the interpreter's lazy set-up then happens here, not again in every forked child
    (measured: 2.3 → 0.7 ms of child CPU for `print(1)`)."""
    null = os.open(os.devnull, os.O_WRONLY)
    with open(null, "w", buffering=1) as out:
        exec(
            compile("print(sum(range(3)))", "<warm>", "exec"),
            {"print": lambda *a: print(*a, file=out)},
        )
        try:
            raise ValueError("warm")
        except ValueError:
            traceback.print_exc(file=out)


def _become_subreaper() -> None:
    import ctypes

    ctypes.CDLL(None, use_errno=True).prctl(36, 1, 0, 0, 0)  # PR_SET_CHILD_SUBREAPER


def load_seccomp(program: bytes) -> None:
    """Install a raw BPF `sock_filter` array for this process and every task it forks."""
    import ctypes

    class SockFprog(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_char_p)]

    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
        raise OSError(ctypes.get_errno(), "PR_SET_NO_NEW_PRIVS failed")
    prog = SockFprog(len(program) // 8, program)
    if libc.prctl(22, 2, ctypes.byref(prog), 0, 0) != 0:  # PR_SET_SECCOMP, MODE_FILTER
        raise OSError(ctypes.get_errno(), "PR_SET_SECCOMP failed")


_SESSION_REPLY_BYTES = 1 << 20  # two 64 KiB outputs JSON-escaped fit many times over
_SESSION_FIELDS = {"ok": bool, "stdout": str, "stderr": str, "error": str, "frozen_pid": int,
                   "pid": int}  # fmt: skip


def _session_reply(reply: Any) -> dict[str, Any] | None:
    """`reply` with only the fields a session sends, each of its type and outputs cut to
    their last 64 KiB; None when it is not a reply a session could have sent."""
    if not isinstance(reply, dict) or not isinstance(reply.get("ok"), bool):
        return None
    out: dict[str, Any] = {}
    for key, kind in _SESSION_FIELDS.items():
        if key not in reply:
            continue
        value = reply[key]
        if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
            return None
        out[key] = value[-65536:] if isinstance(value, str) else value
    return out


def main(argv: list[str]) -> None:
    fd, workspace, seccomp_fd = int(argv[1]), argv[2], int(argv[4])
    scratch = [folder for folder in argv[3].split(":") if folder]
    tmp = scratch[0]
    if os.environ.get("POSTTRAIN_SANDBOX_INHERIT_ENV") == "1":  # isolation="none" only
        TASK_ENV.clear()
        TASK_ENV.update(os.environ)
    elif os.environ.get("PYTHONPATH"):
        TASK_ENV["PYTHONPATH"] = os.environ["PYTHONPATH"]
    TASK_ENV.setdefault("HOME", workspace)
    TASK_ENV["TMPDIR"] = tmp  # the private scratch folder, wiped between tasks
    os.environ.clear()
    os.environ.update(TASK_ENV)  # forked tasks inherit it: nothing to set per task
    for module in argv[5:]:
        __import__(module)
        if module == "pytest":
            _warm_pytest(tmp)
    _warm_task_path()
    import gc

    gc.freeze()  # preloaded objects go to the permanent generation: tasks' collections skip them
    _become_subreaper()
    signal.signal(signal.SIGPIPE, signal.SIG_IGN)
    os.chdir(workspace)
    sock = socket.socket(fileno=fd)
    if seccomp_fd >= 0:
        with os.fdopen(seccomp_fd, "rb") as f:
            load_seccomp(f.read())
    set_dumpable(False)  # tasks share our uid: without this they could read/patch our memory
    Server(sock, workspace, scratch).serve()


if __name__ == "__main__":
    main(sys.argv)
