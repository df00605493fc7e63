"""Predicted episode length, the scheduler's priority: how long episodes of a
(domain, difficulty) took so far.

    lengths = LengthModel()
    lengths.observe("arith/addition-v1", 3, seconds=0.8)   # after each recorded episode
    lengths.predict("arith/addition-v1", 3)                 # 0.8

`Scheduler` keeps one (or takes one, to share what was learnt across schedulers) and
orders its engine queue longest-predicted-first. Thread-safe.
"""

from __future__ import annotations

import threading


class LengthModel:
    """Predicted episode seconds per (domain, difficulty), from the episodes seen: the
    running mean of the cell, else of the domain, else of everything (1 s with none)."""

    def __init__(self) -> None:
        self._sums: dict[tuple[str, int | None], tuple[float, int]] = {}
        self._lock = threading.Lock()

    def observe(self, domain: str, difficulty: int, seconds: float) -> None:
        with self._lock:
            for key in ((domain, difficulty), (domain, None), ("", None)):
                total, n = self._sums.get(key, (0.0, 0))
                self._sums[key] = (total + seconds, n + 1)

    def predict(self, domain: str, difficulty: int) -> float:
        with self._lock:
            for key in ((domain, difficulty), (domain, None), ("", None)):
                if key in self._sums:
                    total, n = self._sums[key]
                    return total / n
        return 1.0
