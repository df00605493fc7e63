"""Long-lived interpreters whose globals persist across calls, snapshotted by `fork`."""

from __future__ import annotations

import io
import os
import signal
import socket
import sys
import traceback
from typing import Any

from .framing import recv_frame, send_frame
from .tasks import reap, set_limits


def session_main(sock: socket.socket, workspace: str, limits: dict[str, int]) -> None:
    """A long-lived interpreter whose globals persist across `run` requests; never returns.

    `fork` freezes a copy of the current state: the copy blocks in `sigwait` and each
    SIGUSR1 it receives spawns a live copy of that state (a session snapshot by fork,
    cheap thanks to copy-on-write). All copies share `sock`; only the live one reads it.
    """
    os.setsid()
    os.chdir(workspace)
    set_limits(limits)
    namespace: dict[str, Any] = {"__name__": "__main__", "__builtins__": __builtins__}
    while True:
        try:
            req, _ = recv_frame(sock)
        except (EOFError, OSError):
            os._exit(0)
        if req["op"] == "fork":
            # Block the wake-up signals *before* forking: a SIGUSR1 sent the moment the
            # server learns the frozen pid must wait in its mask, not kill it by default.
            signal.pthread_sigmask(signal.SIG_BLOCK, _WAKE)
            try:
                frozen = os.fork()
            except OSError as exc:  # at the process limit: too many snapshots kept
                signal.pthread_sigmask(signal.SIG_UNBLOCK, _WAKE)
                send_frame(sock, {"ok": False, "error": f"snapshot failed: {exc}"})
                continue
            if frozen:
                signal.pthread_sigmask(signal.SIG_UNBLOCK, _WAKE)
                send_frame(sock, {"ok": True, "frozen_pid": frozen})
                continue
            _frozen_loop(sock)  # returns only in a freshly spawned live copy
            continue
        out, err = io.StringIO(), io.StringIO()
        sys.stdout, sys.stderr = out, err
        ok = True
        try:
            exec(compile(req["code"], "<session>", "exec"), namespace)
        except SystemExit:
            pass
        except BaseException:
            traceback.print_exc()
            ok = False
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
        send_frame(
            sock, {"ok": ok, "stdout": out.getvalue()[-65536:], "stderr": err.getvalue()[-65536:]}
        )


_WAKE = {signal.SIGUSR1, signal.SIGCHLD}


def _frozen_loop(sock: socket.socket) -> None:
    """Wait (signals already blocked); each SIGUSR1 forks a live copy of this state."""
    while True:
        if signal.sigwait(_WAKE) == signal.SIGCHLD:
            reap()
            continue
        try:
            child = os.fork()
        except OSError as exc:
            send_frame(sock, {"ok": False, "error": f"restore failed: {exc}"})
            continue
        if child == 0:
            signal.pthread_sigmask(signal.SIG_UNBLOCK, _WAKE)
            send_frame(sock, {"ok": True, "pid": os.getpid()})
            return
