r"""Mathematical equivalence of two answers through `math-verify`, time-bounded without signals.

    math_equal("$\\frac{1}{2}$", "0.5")           # True
    math_equal("(x+1)^2", "x^2+2x+1")             # True
    math_equal("9^9^9^9", "1", timeout_s=2.0)     # False after at most ~2 s, never hangs

math-verify parses both texts into SymPy and compares them (numerically, then
symbolically; sets, intervals, equations and matrices too). Its own timeout uses
`signal.alarm`, which works on the main thread only, so here its timeouts are
disabled and the work runs in a long-lived worker process (`python -c`, not a
fork of the caller) that is killed and replaced when a call runs past `timeout_s`.
On Linux a worker dies with its caller's process (`PR_SET_PDEATHSIG`), even in the
middle of a comparison that would run for hours.
Up to `MAX_WORKERS` workers serve concurrent callers, so `math_equal` works from
any thread. Each text is read both as given and, when it has no math
delimiters, wrapped in `$...$` (bare LaTeX such as `\frac12` is only found that
way); the answers are equal when any reading of the prediction verifies against
any reading of the gold. Two plain numbers or fractions that are equal as
`fractions.Fraction` (and two plain integers that differ) are answered at once,
without a worker; so are two plain numbers when either is in scientific notation
(`2.5e3`), compared exactly: math-verify reads that `e` as Euler's number, and
"1e20" would equal "1"; one whose exponent has 19+ digits is not equal to anything.
A timeout, a crash, a worker that will not start or junk gives False; the function
never raises.

Not guaranteed: math-verify extracts from prose ("The answer is 5" equals "5"),
so check the answer's format yourself when it must be strict; its comparison is
asymmetric (pass the reference as `gold`) and rounds floats to 6 places;
scientific notation inside LaTeX or prose (`$1e20$`) still reaches math-verify;
texts over 2 000 characters are False without a look; `timeout_s` bounds the
worker's time on this pair, not the wait for a free worker or, the first time,
for one to start (about a second); a worker's memory is capped at 4 GiB of
address space, so a huge intermediate value is a failure (False), not an
out-of-memory kill of the caller; outside Linux, a worker busy on a comparison
outlives its caller until the comparison ends.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import select
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import Future
from decimal import Decimal
from fractions import Fraction
from pathlib import Path
from typing import Any

MAX_WORKERS = 4
_MAX_CHARS = 2_000
_STARTUP_TIMEOUT_S = 120.0
_MEMORY_CAP = 4 << 30
_PACKAGE_ROOT = str(Path(__file__).resolve().parents[2])
_WORKER_COMMAND = "from posttrain.verify.math_equiv import _serve; _serve()"
_DELIMITERS = ("$", "\\(", "\\[", "\\boxed")
_SCIENTIFIC = re.compile(r"[-+]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)[eE][-+]?[0-9]+")
_PR_SET_PDEATHSIG = 1  # <linux/prctl.h>


def _readings(text: str) -> list[object]:
    from math_verify import parse

    variants = [text] if any(d in text for d in _DELIMITERS) else [f"${text}$", text]
    readings = [parse(v, parsing_timeout=None) for v in variants]
    return [r for r in readings if r]


def _judge(predicted: str, gold: str) -> bool:
    """math-verify's verdict, run inside the worker (no timeouts of its own)."""
    from math_verify import verify

    golds, preds = _readings(gold), _readings(predicted)
    return any(verify(g, p, timeout_seconds=None) for g in golds for p in preds)


def _die_with_parent(parent: int) -> None:
    """Have Linux SIGKILL this worker when the thread that started it ends, and exit now
    if it already has (a busy worker reads no EOF from its stdin). That thread is the
    caller's spawner thread (`_Spawner`), which lasts as long as the caller's process."""
    if sys.platform.startswith("linux"):
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(0)


def _serve() -> None:
    """The worker's loop: one JSON request per stdin line, one JSON verdict per stdout line."""
    import logging
    import resource

    if len(sys.argv) > 1:  # the caller's pid (the worker command's argument)
        _die_with_parent(int(sys.argv[1]))
    logging.disable(logging.CRITICAL)  # math-verify warns that its timeouts are off
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    if hard == resource.RLIM_INFINITY or hard > _MEMORY_CAP:
        resource.setrlimit(resource.RLIMIT_AS, (_MEMORY_CAP, hard))
    # Keep the protocol on a private copy of stdout; stray prints go to stderr.
    replies = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    _judge("1/2", "\\frac{1}{2}")  # load the LaTeX parser before saying ready
    replies.write("ready\n")
    replies.flush()
    for line in sys.stdin:
        try:
            predicted, gold = json.loads(line)
            verdict = bool(_judge(predicted, gold))
        except Exception:  # noqa: BLE001 -- any failure of math-verify or SymPy is "not equal"
            verdict = False
        replies.write("true\n" if verdict else "false\n")
        replies.flush()


class _Worker:
    """One worker process and the buffered read side of its stdout."""

    def __init__(self) -> None:
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(p for p in (_PACKAGE_ROOT, env.get("PYTHONPATH")) if p)
        command = [sys.executable, "-c", _WORKER_COMMAND, str(os.getpid())]
        # Started from the spawner thread: PR_SET_PDEATHSIG fires when the *thread* that
        # started a process ends, and a caller's thread (a pool's, `_start_successor`)
        # may end long before its process does.
        self._process = _SPAWNER.popen(
            command,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        self._buffer = b""

    def wait_ready(self) -> bool:
        return self._read_line(time.monotonic() + _STARTUP_TIMEOUT_S) == "ready"

    def ask(self, predicted: str, gold: str, timeout_s: float) -> bool | None:
        """The verdict, or None when the worker overran `timeout_s` or died."""
        assert self._process.stdin is not None
        try:
            self._process.stdin.write((json.dumps([predicted, gold]) + "\n").encode())
            self._process.stdin.flush()
        except OSError:
            return None
        line = self._read_line(time.monotonic() + timeout_s)
        return None if line is None else line == "true"

    def _read_line(self, deadline: float) -> str | None:
        assert self._process.stdout is not None
        fd = self._process.stdout.fileno()
        poller = select.poll()  # not select.select: it fails on descriptors above 1023
        poller.register(fd, select.POLLIN)
        while b"\n" not in self._buffer:
            remaining = deadline - time.monotonic()
            if remaining <= 0 or not poller.poll(remaining * 1000):
                return None
            chunk = os.read(fd, 4096)
            if not chunk:
                return None
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line.decode("utf-8", "replace")

    def kill(self) -> None:
        self._process.kill()
        self._process.wait()
        for stream in (self._process.stdin, self._process.stdout):
            if stream is not None:
                # A request left unflushed for a worker that died raises on close.
                with contextlib.suppress(OSError):
                    stream.close()


class _Spawner:
    """Starts processes from one daemon thread, started on first use: it is never joined,
    so it ends only with its process (a non-daemon thread, a ThreadPoolExecutor's, is
    ended at interpreter shutdown while other threads may still call `math_equal`)."""

    def __init__(self) -> None:
        self._requests: queue.SimpleQueue[tuple[list[str], dict[str, Any], Future[Any]]]
        self._requests = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def popen(self, command: list[str], **kwargs: Any) -> subprocess.Popen[bytes]:
        with self._lock:
            if self._thread is None:
                self._thread = threading.Thread(
                    target=self._serve, name="math-equiv-spawner", daemon=True
                )
                self._thread.start()
        done: Future[subprocess.Popen[bytes]] = Future()
        self._requests.put((command, kwargs, done))
        return done.result()

    def _serve(self) -> None:
        while True:
            command, kwargs, done = self._requests.get()
            try:
                done.set_result(subprocess.Popen(command, **kwargs))
            except BaseException as exc:  # noqa: BLE001 -- raised in the caller's thread
                done.set_exception(exc)


class _WorkerPool:
    """At most `size` workers; idle ones are reused, one that overran is replaced in the background."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._idle: list[_Worker] = []
        self._live = 0  # idle + in use + starting
        self._changed = threading.Condition()

    def take(self) -> _Worker | None:
        """An idle worker, else a newly started one; None when none would start."""
        with self._changed:
            while not self._idle and self._live >= self._size:
                self._changed.wait()
            if self._idle:
                return self._idle.pop()
            self._live += 1
        worker = _start_worker()
        if worker is None:
            self._forget()
        return worker

    def give_back(self, worker: _Worker) -> None:
        with self._changed:
            self._idle.append(worker)
            self._changed.notify()

    def replace(self, worker: _Worker) -> None:
        """Kill the worker and start its successor in the background, so the next caller need not."""
        worker.kill()
        threading.Thread(target=self._start_successor, daemon=True).start()

    def _start_successor(self) -> None:
        successor = _start_worker()
        if successor is None:
            self._forget()
        else:
            self.give_back(successor)

    def _forget(self) -> None:
        with self._changed:
            self._live -= 1
            self._changed.notify()


def _start_worker() -> _Worker | None:
    try:
        worker = _Worker()
    except Exception:  # noqa: BLE001 -- no worker means "not verified", never an error
        return None
    try:
        ready = worker.wait_ready()
    except Exception:  # noqa: BLE001
        ready = False
    if not ready:
        worker.kill()
        return None
    return worker


_POOL = _WorkerPool(MAX_WORKERS)
_SPAWNER = _Spawner()


def _new_pool_after_fork() -> None:
    # A forked child must not talk to its parent's workers through the inherited pipes,
    # and has no spawner thread (only the forking thread is copied).
    global _POOL, _SPAWNER
    _POOL = _WorkerPool(MAX_WORKERS)
    _SPAWNER = _Spawner()


os.register_at_fork(after_in_child=_new_pool_after_fork)


def _plain_number(text: str) -> Fraction | Decimal | None:
    if len(text) > 100 or not text or text[0] not in "+-.0123456789":
        return None
    if _SCIENTIFIC.fullmatch(text):
        # Exact and instant: Fraction("1e999999999") would build 10**999999999. An
        # exponent beyond Decimal's range (19+ digits) raises InvalidOperation: the
        # caller answers "not equal" (math_equal never raises).
        return Decimal(text)
    if "e" in text.lower():  # "1_0e5" and the like: left to a worker
        return None
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        return None


def _is_plain_integer(text: str) -> bool:
    return text.lstrip("+-").isascii() and text.lstrip("+-").isdigit()


def math_equal(predicted: str, gold: str, timeout_s: float = 5.0) -> bool:
    """True when math-verify finds the prediction equivalent to the gold answer.

    >>> math_equal("1/2", "0.50"), math_equal("2", "3")  # plain numbers: no worker
    (True, False)
    >>> math_equal("$\\\\frac{\\\\sqrt{2}}{2}$", "\\\\frac{1}{\\\\sqrt{2}}")
    True
    >>> math_equal("", "1"), math_equal("x" * 5000, "1")
    (False, False)
    """
    if not isinstance(predicted, str) or not isinstance(gold, str):
        return False
    predicted, gold = predicted.strip(), gold.strip()
    if not predicted or not gold or len(predicted) > _MAX_CHARS or len(gold) > _MAX_CHARS:
        return False
    try:
        a, b = _plain_number(predicted), _plain_number(gold)
    except ArithmeticError:  # "2e9999999999999999999": no number we can hold
        return False
    if a is not None and b is not None:
        if a == b:
            return True
        if _is_plain_integer(predicted) and _is_plain_integer(gold):
            return False
        if isinstance(a, Decimal) or isinstance(b, Decimal):
            return False  # scientific notation, which math-verify misreads
    pool = _POOL
    worker = pool.take()
    if worker is None:
        return False
    verdict = None
    try:
        verdict = worker.ask(predicted, gold, max(timeout_s, 0.0))
    except Exception:  # noqa: BLE001 -- a broken pipe or the like: this worker is done
        verdict = None
    finally:
        if verdict is None:
            pool.replace(worker)
        else:
            pool.give_back(worker)
    return bool(verdict)
