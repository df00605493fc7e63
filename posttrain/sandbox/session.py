"""`PythonSession`: a long-lived interpreter in a sandbox whose state survives calls.

    session = PythonSession(sandbox)
    session.run("x = load_big_table()")
    snap = session.snapshot()          # a fork of the process: copy-on-write, ms
    session.run("x.drop(...)")
    session.restore(snap)              # back to the state at `snapshot()`

Tool state for agent domains lives here (a REPL, a simulated database). Snapshots
are frozen forks kept inside the sandbox; they die with the session, and a pool
release (an eager reset while a session is open) closes it. Output is what the code
prints through `sys.stdout` / `sys.stderr` (the last 64 KiB of each); subprocess
output is not captured. A dead sandbox is a `SessionResult.error`, not an exception.
The code runs in the process that holds the session's channel and can write to it: the
fork-server checks each reply (its fields and types, output cut to 64 KiB, at most
1 MiB) and kills the session on a malformed one, which the caller sees as an error.

Not guaranteed: threads and processes a call starts keep running after it returns, with
no CPU-time limit (wall clocks bound each call's reply, not the work it left), until the
session is closed, restored or its sandbox reset; a reply the code forged in the right
shape is taken for the call's, and the real one then answers the next call.
"""

from __future__ import annotations

from dataclasses import dataclass

from posttrain.sandbox.sandbox import Sandbox, SandboxError


@dataclass
class SessionResult:
    ok: bool
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    error: str | None = None  # the session process died or timed out; restore or reopen


class PythonSession:
    """One persistent interpreter inside `sandbox` (one session per sandbox at a time)."""

    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox
        limits = sandbox._limits(sandbox.spec.timeout_s)
        limits.pop("cpu")  # a session lives across many calls; wall clocks bound each call
        self._call({"op": "session_open", "limits": limits})
        sandbox.session_open = True

    def _call(self, req: dict[str, object], timeout: float = 30.0) -> dict[str, object]:
        header, _ = self.sandbox._call(req, timeout=timeout + 5.0)
        if not isinstance(header, dict):  # the server checks the session's; be sure
            raise SandboxError(f"{req['op']}: a reply that is not an object")
        return header

    def run(self, code: str, timeout: float | None = None) -> SessionResult:
        timeout = self.sandbox.spec.timeout_s if timeout is None else timeout
        try:
            reply = self._call({"op": "session_run", "code": code, "timeout": timeout}, timeout)
        except SandboxError as exc:  # the sandbox itself died: a field, as for tasks
            return SessionResult(ok=False, error=str(exc))
        return SessionResult(
            ok=bool(reply.get("ok")),
            stdout=str(reply.get("stdout", "")),
            stderr=str(reply.get("stderr", "")),
            timed_out=bool(reply.get("timed_out", False)),
            error=reply.get("error") if isinstance(reply.get("error"), str) else None,  # type: ignore[arg-type]
        )

    def snapshot(self) -> int:
        """Freeze the current state; returns an id for `restore` (reusable many times).
        Each snapshot keeps one process, so `max_processes` bounds how many a session
        holds; past it, SandboxError ("snapshot failed") and the session lives on."""
        reply = self._call({"op": "session_snapshot"})
        if not reply.get("ok"):
            raise SandboxError(f"session snapshot failed: {reply.get('error')}")
        return int(reply["snapshot"])  # type: ignore[call-overload]

    def restore(self, snapshot: int) -> None:
        reply = self._call({"op": "session_restore", "snapshot": snapshot})
        if not reply.get("ok"):
            raise SandboxError(f"session restore failed: {reply.get('error')}")

    def close(self) -> None:
        if self.sandbox.alive:
            self._call({"op": "session_close"})
        self.sandbox.session_open = False

    def __enter__(self) -> PythonSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
