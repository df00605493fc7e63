"""`Sandbox`: one isolated workspace with a warm fork-server, driven from the host.

    with Sandbox() as sb:
        sb.write_file("test_x.py", "def test_x(): assert 1 + 1 == 2")
        result = sb.exec(["python3", "-m", "pytest", "-q"], timeout=20)
        snap = sb.snapshot()
    judged = snap.with_files({"test_x.py": pristine}, drop=["conftest.py", "pytest.ini"])
    with Sandbox.from_snapshot(judged) as judge:  # -P: the workspace cannot shadow pytest
        judge.exec(["python3", "-P", "-m", "pytest", "-q", "--noconftest", "test_x.py"])

What is isolated (bwrap mode): the host filesystem except read-only `/usr` and the
Python packages, an installed posttrain and every domain plugin's own files hidden among
them (`hidden`) (all else read-only too, but the wiped /workspace, /tmp, /dev/shm); host processes, network, IPC and hostname (own namespaces, no
network devices but loopback); the host uid (tasks are `nobody` on the host, with no
capabilities and no nested user namespaces); other sandboxes (but for per-user kernel
quotas, below). Each task gets rlimits
(address space, CPU, file size, open files, processes, no core file), the seccomp
deny-list of `layers.DENIED_SYSCALLS` (plus non-UNIX sockets, TIOCSTI, CLONE_NEWUSER,
and changing another process's rlimits, priority or CPUs),
a wall clock after which its whole process tree is killed, and an empty environment.
The fork-server is its pid namespace's pid 1: tasks cannot SIGKILL, stop or patch it.
`unshare` mode gives each live sandbox a host uid and host folders of its own (`layers`).
A forked child process does not share its parent's sandboxes: its copies are not
`alive` (the first call starts the child's own) and never touch the parent's.

What is NOT guaranteed: protection from kernel exploits (this is namespaces and
seccomp, not a VM); CPU-time side channels and timing between sandboxes; memory
bandwidth and disk-cache contention; tmpfs inode counts beyond the cgroup memory cap;
kernel quotas counted per host user, which every bwrap sandbox shares as `nobody` (one
sandbox holding all 128 inotify instances leaves none to the others); a memory bound
per process, not per task: `memory_mb` is each process's address space, and the
sandbox's processes together are held to the cgroup cap (`SandboxSpec.memory_mb`);
secrecy between tasks that share one pooled sandbox: each task is forked from the same
fork-server, so freed remnants of requests it handled earlier (code, stdin, files
written through the API) may sit in the memory a task inherits — judge hidden tests in
a fresh `Sandbox.from_snapshot(...)` (as verifiers do), or use `max_tasks=1`; a
task may still kill its own fork-server (SIGINT, which it handles; the memory cap):
reported, and the sandbox is restarted; in `unshare` mode, world-readable host files
stay readable, world-writable host folders writable (and what is left there readable by
a later sandbox drawing the same uid), world-writable UNIX sockets connectable; in
`none` mode nothing at all.

Errors: constructing raises `SandboxUnavailable` when the asked-for isolation cannot
run here. `exec`/`run_python` never raise for task behaviour: limits and failures are
`ExecResult` fields (`error` set when the sandbox itself died; it then restarts on the
next call, with the baseline workspace: `restarts` counts these starts afresh, so a
caller that keeps state in the workspace compares it before and after a call). File
methods raise `ValueError` for paths that leave the workspace or go through a symlink,
`FileNotFoundError` for missing files, `SandboxError` when the sandbox failed or the
operation failed inside it (the message says which). A value of the wrong type (argv
entry, path, data) raises `TypeError` before anything is sent.
"""

from __future__ import annotations

import contextlib
import os
import socket
import subprocess
import time
import uuid
from collections.abc import Sequence
from typing import Any, Literal, overload

from posttrain.sandbox import launcher, layers
from posttrain.sandbox.cgroups import SandboxCgroups
from posttrain.sandbox.inside.framing import encode_frame, recv_frame
from posttrain.sandbox.inside.tasks import descendants
from posttrain.sandbox.results import (
    ExecResult,
    SandboxCleanupError,
    SandboxError,
    SandboxSpec,
    SandboxUnavailable,
    Snapshot,
    check_seconds,
    task_rlimits,
)

WORKSPACE = "/workspace"
SANDBOX_TMP = "/tmp"
_GRACE_S = 5.0  # how long past a task's timeout the host waits for the server's reply
_RESET_TIMEOUT_S = 60.0  # a lazy reset before a request: wiping a huge tree, timed on its own


class Sandbox:
    """An isolated workspace; see the module docstring for what is and is not isolated."""

    def __init__(self, spec: SandboxSpec | None = None, *, isolation: str | None = None) -> None:
        spec = spec or SandboxSpec()
        if isolation is not None:
            spec = SandboxSpec(**{**spec.__dict__, "isolation": isolation})
        self.spec = spec
        mode = spec.isolation if spec.isolation != "auto" else layers.best_mode()
        if mode is None:
            raise SandboxUnavailable(
                "no isolation is possible here (bubblewrap and unshare both fail; run "
                "`posttrain sandbox doctor`); pass isolation='none' only for trusted code"
            )
        if mode == "bwrap" and not (layers.bwrap_status()[0] and layers.sandbox_python()):
            raise SandboxUnavailable(f"bwrap isolation unavailable: {layers.bwrap_status()[1]}")
        if mode == "unshare" and not layers.unshare_status()[0]:
            raise SandboxUnavailable(f"unshare isolation unavailable: {layers.unshare_status()[1]}")
        self.mode = mode
        self.name = ""
        self.tasks_run = 0
        self.restarts = 0  # starts afresh since construction (each loses the workspace)
        self.needs_recycle = False  # a task timed out, was killed, ran out of memory or crashed us
        self._proc: subprocess.Popen[bytes] | None = None
        self._sock: socket.socket | None = None
        self._host_dir: str | None = None  # unshare and none modes: workspace/ and tmp/ on the host
        self._uid: int | None = None  # unshare mode as root: this sandbox's own host uid
        self._owner_pid = os.getpid()  # a forked child's copy never touches our processes
        self._cgroups: SandboxCgroups | None = None
        self._baseline: Snapshot | None = None
        self.server_pid = 0  # the fork-server's pid in its own namespace: 1 but in `none` mode
        self._closed = False
        self._reset_pending = False
        self._ooms_seen = 0
        self.session_open = False  # a PythonSession lives in the server (the pool resets eagerly)
        self._start()

    # ------------------------------------------------------------------ lifecycle
    def _start(self) -> None:
        try:
            self._launch()
        except BaseException:
            self._kill()  # no socket, cgroup or temp folder outlives a failed start
            raise

    def _launch(self) -> None:
        spec = self.spec
        self.name = uuid.uuid4().hex[:12]  # a restarted sandbox is a new one: new cgroups
        self._owner_pid = os.getpid()
        ours, theirs = socket.socketpair()
        self._sock = ours
        pass_fds = [theirs.fileno()]
        seccomp_fd = -1
        program = layers.seccomp_program() if self.mode != "none" else None
        if program is not None:
            seccomp_fd = os.memfd_create("posttrain-seccomp", 0)
            os.write(seccomp_fd, program)
            os.lseek(seccomp_fd, 0, os.SEEK_SET)
            pass_fds.append(seccomp_fd)
        env = {"PATH": "/usr/bin:/bin:/usr/sbin:/sbin"}
        if self.mode == "bwrap":
            workspace, tmp = WORKSPACE, SANDBOX_TMP
        else:
            if self.mode == "unshare" and os.geteuid() == 0:
                try:
                    self._uid = layers.claim_uid()
                except OSError as exc:
                    raise SandboxUnavailable(f"unshare isolation unavailable: {exc}") from None
            self._host_dir = layers.private_host_dir(self._uid)
            workspace = os.path.join(self._host_dir, "workspace")
            tmp = os.path.join(self._host_dir, "tmp")
            if self.mode == "none":
                env = dict(os.environ, POSTTRAIN_SANDBOX_INHERIT_ENV="1", TMPDIR=tmp)
        argv = layers.launch_argv(
            self.mode, fd=theirs.fileno(), workspace=workspace, tmp=tmp,
            preload=list(spec.preload), seccomp_fd=seccomp_fd,
            tmpfs_bytes=spec.tmpfs_mb << 20, host_dir=self._host_dir or "",
            uid=self._uid if self._uid is not None else layers.NOBODY,
        )  # fmt: skip
        if self.mode != "none":
            self._cgroups = SandboxCgroups(
                self.name,
                memory_bytes=(spec.memory_mb << 20) + (3 * spec.tmpfs_mb << 20) + (256 << 20),
                max_pids=spec.max_processes + 16,
                cpu_cores=spec.cpu_cores,
            )
            argv = self._cgroups.join_prefix() + argv
        try:
            cwd = layers.INSIDE_DIR.parent if self.mode != "bwrap" else "/"
            self._proc = launcher.popen(argv, pass_fds, env, cwd)
        finally:
            theirs.close()
            if seccomp_fd >= 0:
                os.close(seccomp_fd)
        ours.settimeout(spec.start_timeout_s)
        try:
            hello, _ = recv_frame(ours)
            self.server_pid = int(hello["pid"])
            self.session_open = False
        except (EOFError, OSError, KeyError, ValueError) as exc:
            stderr = self._kill()
            raise SandboxUnavailable(
                f"sandbox ({self.mode}) failed to start: {exc}; {stderr.strip()[-500:]}"
            ) from None
        self._reset_pending = False
        self._ooms_seen = 0
        if self._baseline is not None:
            self._call({"op": "baseline"}, self._baseline.archive)
            self._call({"op": "restore"}, self._baseline.archive)

    def _kill(self) -> str:
        """Tear the sandbox down hard; returns whatever its launcher wrote to stderr.

        In a forked child this only drops the child's copies: the processes, cgroups,
        folders and uid belong to the parent's sandbox, which lives on."""
        stderr = b""
        if self._sock is not None:
            self._sock.close()
            self._sock = None
        if os.getpid() != self._owner_pid:
            self._proc, self._cgroups, self._host_dir, self._uid = None, None, None, None
            return ""
        if self._proc is not None:
            stderr = launcher.stop_tree(self._proc, init_only=self.mode != "none")
            self._proc = None
        if self._cgroups is not None:
            with contextlib.suppress(SandboxCleanupError):  # its processes got SIGKILL; go on
                self._cgroups.close()
            self._cgroups = None
        if self._host_dir is not None:
            layers.remove_host_dir(self._host_dir)
            self._host_dir = None
        if self._uid is not None:  # only now: no process of this sandbox runs as it any more
            layers.release_uid(self._uid)
            self._uid = None
        return (stderr or b"").decode(errors="replace")

    @property
    def alive(self) -> bool:
        """Whether the fork-server runs and is this process's (a forked child's copy is
        not alive: its first call starts a sandbox of the child's own)."""
        return (
            os.getpid() == self._owner_pid
            and self._proc is not None
            and self._proc.poll() is None
            and self._sock is not None
        )

    def restart(self) -> None:
        """A fresh sandbox in place of this one (same spec, same baseline)."""
        self._kill()
        self._closed = False
        self.needs_recycle = False
        self.tasks_run = 0
        self.restarts += 1
        self._start()

    def close(self) -> None:
        self._closed = True
        self._kill()

    def __enter__(self) -> Sandbox:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        with contextlib.suppress(Exception):
            self._kill()

    @property
    def pids(self) -> list[int]:
        """Host pids of this sandbox's whole process tree (launcher, bwrap, server, tasks)."""
        if self._proc is None:
            return []
        return descendants(self._proc.pid)

    # ------------------------------------------------------------------ protocol
    def _call(self, req: dict[str, Any], payload: bytes = b"", timeout: float = 30.0) -> tuple[dict[str, Any], bytes]:  # fmt: skip
        if self._closed:
            raise SandboxError("the sandbox is closed")
        # Encoded before anything is sent: a value the wire cannot carry is the caller's
        # error, raised with the sandbox untouched (never a half-sent, killed exchange).
        frame = _encode(req, payload)
        if not self.alive:
            self.restart()  # it died (a task killed it, or it was OOM-killed): start afresh
        assert self._sock is not None
        reset_first, self._reset_pending = self._reset_pending, False
        try:
            if reset_first:  # the previous lease's cleanup runs first, on a clock of its own
                self._sock.sendall(_encode({**req, "reset_first": True}, payload))
                self._sock.settimeout(_RESET_TIMEOUT_S)
                done, _ = recv_frame(self._sock)
                if done.get("reset_failed"):  # start afresh, then send the request again
                    self.restart()
                    assert self._sock is not None
                    self._sock.sendall(frame)
            else:
                self._sock.sendall(frame)
            self._sock.settimeout(timeout)
            return recv_frame(self._sock)
        except (EOFError, OSError) as exc:
            why = "unresponsive" if isinstance(exc, TimeoutError) else f"gone ({exc})"
            self._kill()
            raise SandboxError(f"sandbox {why} during {req['op']!r}") from None
        except BaseException:  # interrupted mid-exchange: a stale reply must never be read later
            self._kill()
            raise

    def _checked(self, req: dict[str, Any], payload: bytes = b"") -> tuple[dict[str, Any], bytes]:
        header, body = self._call(req, payload)
        if not header.get("ok"):
            error = str(header.get("error", "failed"))
            if error.startswith("FileNotFoundError"):
                raise FileNotFoundError(f"{req.get('path')}: not in the workspace")
            if error.startswith("ValueError") or error.startswith("IsADirectoryError"):
                raise ValueError(error.split(": ", 1)[-1])
            raise SandboxError(f"{req['op']} failed: {error}")
        return header, body

    # ------------------------------------------------------------------ execution
    def exec(
        self,
        cmd: str | Sequence[str | bytes | os.PathLike[str]],
        timeout: float | None = None,
        stdin: str | bytes | None = None,
    ) -> ExecResult:
        """Run `cmd` (an argv of str, bytes or paths, or a string for `/bin/sh -c`) in the
        workspace. Raises ValueError for an empty argv or a timeout that is not a number
        of seconds in (0, 7 days], TypeError for an argument of another type (naming
        it); the sandbox is untouched then."""
        if isinstance(cmd, str):
            argv = ["/bin/sh", "-c", cmd]
        else:
            argv = [_fs_str(arg, f"exec argv[{i}]") for i, arg in enumerate(cmd)]
        if not argv:
            raise ValueError("exec needs a command")
        return self._task({"op": "exec", "argv": argv}, timeout, stdin)

    def run_python(self, code: str, timeout: float | None = None, stdin: str | bytes | None = None) -> ExecResult:  # fmt: skip
        """Run Python source in a forked, warm interpreter (preloaded modules already imported)."""
        return self._task({"op": "python", "code": code}, timeout, stdin)

    def _task(self, req: dict[str, Any], timeout: float | None, stdin: str | bytes | None) -> ExecResult:  # fmt: skip
        spec = self.spec
        timeout = spec.timeout_s if timeout is None else check_seconds("timeout", timeout)
        req.update(
            timeout=timeout,
            output_cap=spec.output_cap,
            limits=self._limits(timeout),
        )
        data = stdin.encode() if isinstance(stdin, str) else (stdin or b"")
        start = time.monotonic()
        try:
            header, body = self._call(req, data, timeout=timeout + _GRACE_S)
        except SandboxError as exc:
            self.needs_recycle = True
            return ExecResult(
                exit_code=-1, timed_out="unresponsive" in str(exc), error=str(exc),
                wall_s=time.monotonic() - start,
            )  # fmt: skip
        self.tasks_run += 1
        if "exit_code" not in header:
            self.needs_recycle = True
            return ExecResult(exit_code=-1, error=str(header.get("error", "task failed to start")))
        n_out = int(header["n_out"])
        stdout, stderr = (
            body[:n_out].decode(errors="replace"),
            body[n_out:].decode(errors="replace"),
        )
        oom_killed = False
        if self._cgroups is not None:  # any process of the task OOM-killed, even if main exited 0
            ooms = self._cgroups.oom_kills()
            oom_killed, self._ooms_seen = ooms > self._ooms_seen, ooms
        oom = oom_killed or (header["exit_code"] != 0 and "MemoryError" in stderr[-2000:])
        if (
            header["timed_out"]
            or header["signal"]
            or oom
            or header.get("leftovers")
            or not self.alive
        ):
            self.needs_recycle = True
        return ExecResult(
            exit_code=int(header["exit_code"]),
            stdout=stdout,
            stderr=stderr,
            timed_out=bool(header["timed_out"]),
            oom=oom,
            signal=header["signal"],
            cpu_s=float(header["cpu_s"]),
            wall_s=float(header["wall_s"]),
            stdout_truncated=int(header["stdout_bytes"]) > n_out,
            stderr_truncated=int(header["stderr_bytes"]) > len(body) - n_out,
            error=None if self.alive else "the fork-server died during the task",
        )

    def _limits(self, timeout: float) -> dict[str, int]:
        return task_rlimits(self.spec, timeout)

    # ------------------------------------------------------------------ files
    def write_file(self, path: str | os.PathLike[str], data: str | bytes, mode: int = 0o644) -> None:  # fmt: skip
        """Write `data` at `path` (relative, parents made). Raises ValueError for a path that
        leaves the workspace or goes through a symlink, TypeError for a path or data of the
        wrong type, SandboxError if the write fails."""
        raw = data.encode() if isinstance(data, str) else data
        self._checked({"op": "write", "path": _fs_str(path, "path"), "mode": mode}, raw)

    @overload
    def read_file(self, path: str | os.PathLike[str], text: Literal[True] = ...) -> str: ...
    @overload
    def read_file(self, path: str | os.PathLike[str], text: Literal[False]) -> bytes: ...

    def read_file(self, path: str | os.PathLike[str], text: bool = True) -> str | bytes:
        """File contents as str (`text=True`, UTF-8 with replacement) or bytes. Raises
        FileNotFoundError, ValueError (outside the workspace, a symlink, not a regular
        file), SandboxError (the sandbox failed)."""
        _, body = self._checked({"op": "read", "path": _fs_str(path, "path")})
        return body.decode(errors="replace") if text else body

    def list_files(self) -> list[str]:
        """Regular files under the workspace, relative, sorted; symlinks are not listed."""
        header, _ = self._checked({"op": "list"})
        return list(header["files"])

    # ------------------------------------------------------------------ snapshots
    def snapshot(self, max_bytes: int | None = None) -> Snapshot:
        """The workspace's files, folders, symlinks and modes (hard links become copies).
        Raises ValueError, before anything is read, when the files' sizes add up to more
        than `max_bytes` (default: twice the workspace's own size, `spec.tmpfs_mb`, room
        for tar's headers): a sparse file or a hard link costs the workspace a few bytes
        and the archive its full size, which the host would otherwise have to hold."""
        limit = (2 * self.spec.tmpfs_mb << 20) if max_bytes is None else int(max_bytes)
        _, body = self._checked({"op": "snapshot", "max_bytes": limit})
        return Snapshot(body)

    def restore(self, snapshot: Snapshot) -> None:
        """Make the workspace exactly `snapshot` (files not in it are removed)."""
        self._checked({"op": "restore"}, snapshot.archive)

    def set_baseline(self, snapshot: Snapshot | None) -> None:
        """The workspace every `reset()` (and every restart) returns to; None = empty."""
        self._baseline = snapshot
        self._checked({"op": "baseline"}, snapshot.archive if snapshot else b"")

    def reset(self, lazy: bool = False) -> int:
        """Kill leftover processes, wipe workspace and /tmp, restore the baseline; returns kills.

        `lazy=True` folds the reset into the next request instead of a round trip of
        its own (what the pool does on release; a task's processes are already killed
        when it ends, so only files wait). Returns 0 then.
        """
        if lazy and self.alive:
            self._reset_pending = True
            return 0
        header, _ = self._checked({"op": "reset"})
        self.session_open = False
        return int(header.get("killed_leftovers", 0))

    @classmethod
    def from_snapshot(cls, snapshot: Snapshot, spec: SandboxSpec | None = None, **kwargs: Any) -> Sandbox:  # fmt: skip
        """A fresh sandbox whose workspace is `snapshot`."""
        sandbox = cls(spec, **kwargs)
        try:
            sandbox.restore(snapshot)
        except BaseException:
            sandbox.close()
            raise
        return sandbox


def _encode(req: dict[str, Any], payload: bytes) -> bytes:
    try:
        return encode_frame(req, payload)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"sandbox request {req.get('op')!r} cannot be sent: {exc}") from None


def _fs_str(value: object, what: str) -> str:
    """`value` (str, bytes or os.PathLike) as str; bytes survive as surrogate escapes."""
    try:
        return os.fsdecode(value)  # type: ignore[arg-type]
    except TypeError:
        raise TypeError(
            f"{what} must be str, bytes or os.PathLike, not {type(value).__name__}"
        ) from None
