"""Joining Ray: a local Ray for one machine, or an existing cluster by address.

    ensure_ray()                        # a local Ray (no dashboard), unless connected
    ensure_ray("10.0.0.1:6379")         # a cluster started with `ray start --head`

Ray 2.60 turns token authentication on by default; a local Ray started here has it
off (`RAY_AUTH_MODE=disabled`) unless the environment already says otherwise. Worker
output is not forwarded to this process (`log_to_driver=False`): read it from Ray's
session logs (`/tmp/ray/session_latest/logs`). `ray.init` installs a SIGTERM handler
that exits at once; the one before it (a run's, which saves first) is put back.

Not guaranteed: joining a cluster needs the same Ray and Python versions as the
cluster's, and this package installed on every node.
"""

from __future__ import annotations

import os
import signal
import threading

import ray


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> bool:
    """Connect to Ray unless connected; returns whether this call started it. With no
    `address` a local Ray starts with `num_cpus` (default: all); with one, this process
    joins that cluster (`num_cpus` is then refused: the cluster has its own)."""
    if ray.is_initialized():
        return False
    if address is not None and num_cpus is not None:
        raise ValueError(f"num_cpus={num_cpus} applies to a local Ray, not to {address!r}")
    # ray.init replaces the main thread's SIGTERM handler with one that exits at once;
    # the run's own (`train/preemption.py`: save, then stop) is put back.
    on_sigterm = signal.getsignal(signal.SIGTERM)
    try:
        if address is None:
            os.environ.setdefault("RAY_AUTH_MODE", "disabled")
            ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
        else:
            ray.init(address=address, log_to_driver=False)
    finally:
        if threading.current_thread() is threading.main_thread() and on_sigterm is not None:
            signal.signal(signal.SIGTERM, on_sigterm)
    return True
