"""`SandboxPool`: warm sandboxes leased one task at a time, clean between tasks.

    pool = SandboxPool(size=4, spec=SandboxSpec(preload=("pytest",)))
    with pool.lease() as sb:
        result = sb.run_python(code, timeout=5)

A task's leftover processes die when it ends. On release the sandbox is reset — its
workspace, /tmp and /dev/shm wiped, IPC objects removed, the pool's baseline restored
(a baseline the task set lasts for its lease only) — as part of the next lease's first
call (or at once when a python session was opened).
It is restarted fresh instead after `max_tasks` tasks, after any timeout, signal,
out-of-memory or infrastructure failure, when its fork-server died, or when a reset
fails (the next call then restarts it and repeats itself). Thread-safe:
many threads may lease at once; each sandbox serves one lease at a time.
"""

from __future__ import annotations

import contextlib
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass

from posttrain.sandbox.results import SandboxSpec, Snapshot
from posttrain.sandbox.sandbox import Sandbox, SandboxError


@dataclass
class PoolStats:
    leases: int = 0
    resets: int = 0
    recycled: int = 0
    started: int = 0


class SandboxPool:
    """A fixed number of warm sandboxes; `lease()` blocks until one is free."""

    def __init__(
        self,
        size: int = 2,
        spec: SandboxSpec | None = None,
        *,
        max_tasks: int = 1000,
        baseline: Snapshot | None = None,
    ) -> None:
        if size < 1:
            raise ValueError(f"pool size must be at least 1, got {size}")
        if max_tasks < 1:
            raise ValueError(f"max_tasks must be at least 1, got {max_tasks}")
        self.spec = spec or SandboxSpec()
        self.size = size
        self.max_tasks = max_tasks
        self.baseline = baseline
        self.stats = PoolStats()
        self._idle: queue.Queue[Sandbox | None] = queue.Queue()
        self._all: set[Sandbox] = set()
        self._lock = threading.Lock()
        self._closed = False
        try:
            for _ in range(size):
                self._idle.put(self._new())
        except BaseException:
            self.close()
            raise

    def _new(self) -> Sandbox:
        sandbox = Sandbox(self.spec)
        try:
            if self.baseline is not None:
                sandbox.set_baseline(self.baseline)
                sandbox.reset()
        except BaseException:  # not in `_all` yet: close() would never reach it
            sandbox.close()
            raise
        with self._lock:
            self._all.add(sandbox)
            self.stats.started += 1
        return sandbox

    @contextlib.contextmanager
    def lease(self, timeout: float | None = None) -> Iterator[Sandbox]:
        """A clean sandbox for one task; returned (and cleaned) when the block exits."""
        sandbox = self.acquire(timeout)
        try:
            yield sandbox
        finally:
            self.release(sandbox)

    def acquire(self, timeout: float | None = None) -> Sandbox:
        if self._closed:
            raise SandboxError("the sandbox pool is closed")
        try:
            sandbox = self._idle.get(timeout=timeout)
        except queue.Empty:
            raise TimeoutError(f"no sandbox free within {timeout} s") from None
        if sandbox is None:  # close() woke us
            self._idle.put(None)
            raise SandboxError("the sandbox pool is closed")
        with self._lock:
            self.stats.leases += 1
        return sandbox

    def release(self, sandbox: Sandbox) -> None:
        """Give a leased sandbox back, reset for the next task or restarted fresh. Never loses
        the slot: a sandbox that could not restart goes back all the same (its next call
        starts it, or reports why)."""
        try:
            if not self._closed:
                self._clean(sandbox)
        finally:
            with self._lock:
                closed = self._closed
            if closed:  # close() ran meanwhile: a sandbox restarted since must not outlive it
                sandbox.close()
            else:
                self._idle.put(sandbox)

    def _clean(self, sandbox: Sandbox) -> None:
        """Reset `sandbox`, or restart it; raises nothing but interrupts."""
        if sandbox.alive and not sandbox.needs_recycle and sandbox.tasks_run < self.max_tasks:
            try:
                if sandbox._baseline is not self.baseline:  # the task set its own: drop it
                    sandbox.set_baseline(self.baseline)
                # Lazy (folded into the next lease's first call) unless a session's processes
                # would keep running meanwhile.
                sandbox.reset(lazy=not sandbox.session_open)
                with self._lock:
                    self.stats.resets += 1
                return
            except Exception:
                pass  # restart it instead
        with self._lock:
            self.stats.recycled += 1
        sandbox._baseline = self.baseline  # what restart() (now or on the next call) restores
        try:
            sandbox.restart()
            with self._lock:
                self.stats.started += 1
        except Exception:  # SandboxUnavailable, or an OSError such as EMFILE while fds are short
            pass

    @property
    def pids(self) -> list[int]:
        """Host pids of every sandbox's process tree (for memory accounting)."""
        with self._lock:
            sandboxes = list(self._all)
        return [pid for sandbox in sandboxes for pid in sandbox.pids]

    def close(self) -> None:
        with self._lock:
            self._closed = True
            sandboxes = list(self._all)
            self._all.clear()
        for sandbox in sandboxes:
            sandbox.close()
        self._idle.put(None)  # wakes every thread blocked in acquire(), one after another

    def __enter__(self) -> SandboxPool:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
