"""Process-wide sandbox pools, one per name, started on first use and closed at exit.

The episode loop opens a domain's session with `open(task, None)`: no sandbox is handed
in, so each family that runs code leases from its own warm pool, kept for the process:

    pool = shared_pool("pytool", SandboxSpec(memory_mb=512), size=2, max_tasks=500)
    with pool.lease(timeout=120) as sandbox:
        result = sandbox.run_python("print(1)")

Not guaranteed: a name is bound to the settings of its first call; asking again with
other settings raises ValueError (a programming error, two families sharing a name).
Pools are not shared across processes: each worker process starts its own, a forked
child too (it forgets its parent's pools, and its exit leaves them running).
"""

from __future__ import annotations

import atexit
import os
import threading

from posttrain.sandbox.pool import SandboxPool
from posttrain.sandbox.results import SandboxSpec

_pools: dict[str, tuple[SandboxPool, tuple[SandboxSpec, int, int]]] = {}
_lock = threading.Lock()


def _close_all() -> None:
    """At exit: close this process's pools (a forked child's `_pools` starts empty)."""
    with _lock:
        pools = [pool for pool, _ in _pools.values()]
        _pools.clear()
    for pool in pools:
        pool.close()


def _forget_after_fork() -> None:
    global _lock
    _lock = threading.Lock()  # another thread may have held it at the fork
    _pools.clear()


atexit.register(_close_all)
os.register_at_fork(after_in_child=_forget_after_fork)


def shared_pool(name: str, spec: SandboxSpec, size: int, max_tasks: int) -> SandboxPool:
    """The process-wide pool `name`, created with these settings on first use."""
    settings = (spec, size, max_tasks)
    with _lock:
        found = _pools.get(name)
        if found is None:
            pool = SandboxPool(size=size, spec=spec, max_tasks=max_tasks)
            _pools[name] = (pool, settings)
            return pool
        pool, first = found
        if first != settings:
            raise ValueError(
                f"shared sandbox pool {name!r} exists with other settings {first}; got {settings}"
            )
        return pool
