"""Counters of one scheduler stage (engine, env, verify): queue depth, busy time, latency.

    stats = StageStats("engine")
    stats.queued(depth)                 # after each change of the stage's queue
    stats.enqueued(+1); stats.enqueued(-1)   # ... or each change, where the length is unseen
    stats.served(seconds, items=8)      # one call of the stage, and what it served
    stats.as_metrics(wall_s, workers)   # {"sched/engine/utilization": ..., ...}

Utilization is busy seconds over (wall seconds × workers): 1.0 means every worker
of the stage was busy all the time. Latencies are per call, kept in a bounded window
for the percentiles.

Not guaranteed: the p95 is over the last `window` calls only.
"""

from __future__ import annotations

import threading
from collections import deque


class StageStats:
    """Thread-safe counters of one stage."""

    def __init__(self, name: str, window: int = 4096) -> None:
        self.name = name
        self._lock = threading.Lock()
        self._latencies: deque[float] = deque(maxlen=window)
        self.calls = 0
        self.items = 0
        self.busy_s = 0.0
        self.depth = 0
        self.max_depth = 0
        self.retries = 0

    def queued(self, depth: int) -> None:
        with self._lock:
            self.depth = depth
            self.max_depth = max(self.max_depth, depth)

    def enqueued(self, change: int) -> None:
        """The stage's queue grew (+1) or shrank (-1), for a stage that does not see its
        queue's length (a thread pool's)."""
        with self._lock:
            self.depth += change
            self.max_depth = max(self.max_depth, self.depth)

    def served(self, seconds: float, items: int) -> None:
        with self._lock:
            self.calls += 1
            self.items += items
            self.busy_s += seconds
            self._latencies.append(seconds)

    def retried(self) -> None:
        with self._lock:
            self.retries += 1

    def as_metrics(self, wall_s: float, workers: int) -> dict[str, float]:
        with self._lock:
            ordered = sorted(self._latencies)
            p95 = ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))] if ordered else 0.0
            prefix = f"sched/{self.name}"
            return {
                f"{prefix}/queue_depth": float(self.depth),
                f"{prefix}/queue_depth_max": float(self.max_depth),
                f"{prefix}/utilization": self.busy_s / max(wall_s * workers, 1e-9),
                f"{prefix}/calls": float(self.calls),
                f"{prefix}/items": float(self.items),
                f"{prefix}/latency_mean_s": self.busy_s / max(1, self.calls),
                f"{prefix}/latency_p95_s": p95,
                f"{prefix}/retries": float(self.retries),
            }
