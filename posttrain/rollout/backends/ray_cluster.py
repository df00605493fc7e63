"""Joining Ray: a local Ray for one machine, or an existing cluster by address.

    ensure_ray()                        # a local Ray (no dashboard), unless connected
    ensure_ray("10.0.0.1:6379")         # a cluster started with `ray start --head`

Ray 2.60 turns token authentication on by default; a local Ray started here has it
off (`RAY_AUTH_MODE=disabled`) unless the environment already says otherwise. Worker
output is not forwarded to this process (`log_to_driver=False`): read it from Ray's
session logs (`/tmp/ray/session_latest/logs`).

Not guaranteed: joining a cluster needs the same Ray and Python versions as the
cluster's, and this package installed on every node.
"""

from __future__ import annotations

import os

import ray


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> bool:
    """Connect to Ray unless connected; returns whether this call started it. With no
    `address` a local Ray starts with `num_cpus` (default: all); with one, this process
    joins that cluster (`num_cpus` is then refused: the cluster has its own)."""
    if ray.is_initialized():
        return False
    if address is None:
        os.environ.setdefault("RAY_AUTH_MODE", "disabled")
        ray.init(num_cpus=num_cpus, include_dashboard=False, log_to_driver=False)
    else:
        if num_cpus is not None:
            raise ValueError(f"num_cpus={num_cpus} applies to a local Ray, not to {address!r}")
        ray.init(address=address, log_to_driver=False)
    return True
